// Errors are OpenAI-shaped and the server survives bad input: 401, 400 (invalid JSON, wrong types),
// 404 (unknown model or path), 413, 429 with Retry-After, and a corpus of malformed requests
// (truncated JSON, wrong types, huge numbers, invalid UTF-8, deep nesting, 10 MB bodies) that each get a
// 4xx while /health stays 200.
'use strict';
const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const OpenAI = require('openai');
const { startServer, request, isOpenAiError, MODEL } = require('./common.cjs');

let server;
before(async () => {
  // Small limits so 413 and 429 are cheap to reach.
  server = await startServer(['--api-key', 'sk-compat', '--max-request-body', '12MiB', '--max-num-seqs', '1',
                              '--max-queued-requests', '1']);
});
after(async () => {
  const { code } = await server.stop();
  assert.equal(code, 0, server.log());
});

const auth = { Authorization: 'Bearer sk-compat' };
const good = { model: MODEL, messages: [{ role: 'user', content: 'hi' }], max_tokens: 4 };

async function expectSdkError(promise, status) {
  try {
    await promise;
  } catch (e) {
    assert.ok(e instanceof OpenAI.APIError, String(e));
    assert.equal(e.status, status, e.message);
    assert.equal(typeof e.error?.message, 'string');
    assert.equal(typeof e.type, 'string');
    return e;
  }
  assert.fail(`expected HTTP ${status}`);
}

test('401 without or with a wrong API key; /health needs none', async () => {
  const wrong = server.client({ apiKey: 'sk-wrong' });
  const e = await expectSdkError(wrong.chat.completions.create(good), 401);
  assert.ok(e instanceof OpenAI.AuthenticationError);
  const r = await request(server.port, 'GET', '/v1/models');
  assert.equal(r.status, 401);
  assert.ok(isOpenAiError(r.json));
  assert.equal((await request(server.port, 'GET', '/health')).status, 200);
  const ok = server.client({ apiKey: 'sk-compat' });
  assert.equal((await ok.models.list()).data[0].id, MODEL);
});

test('400 for invalid JSON and wrong field types', async () => {
  const client = server.client({ apiKey: 'sk-compat' });
  const bad = await request(server.port, 'POST', '/v1/chat/completions', '{"model": "Kimi-K3", "messages": [', auth);
  assert.equal(bad.status, 400);
  assert.ok(isOpenAiError(bad.json));
  const e = await expectSdkError(client.chat.completions.create({ ...good, temperature: 'hot' }), 400);
  assert.ok(e instanceof OpenAI.BadRequestError);
  await expectSdkError(client.chat.completions.create({ ...good, messages: 'hi' }), 400);
  await expectSdkError(client.chat.completions.create({ ...good, max_tokens: -5 }), 400);
});

test('404 for an unknown model and an unknown path', async () => {
  const client = server.client({ apiKey: 'sk-compat' });
  const e = await expectSdkError(client.chat.completions.create({ ...good, model: 'gpt-4o' }), 404);
  assert.ok(e instanceof OpenAI.NotFoundError);
  const r = await request(server.port, 'GET', '/v1/nothing-here', undefined, auth);
  assert.equal(r.status, 404);
  assert.ok(isOpenAiError(r.json));
});

test('413 for a body over --max-request-body', async () => {
  const client = server.client({ apiKey: 'sk-compat' });
  const huge = 'x'.repeat(13 * 1024 * 1024);
  const e = await expectSdkError(client.chat.completions.create(
      { ...good, messages: [{ role: 'user', content: huge }] }), 413);
  assert.equal(e.type, 'invalid_request_error');
  assert.equal((await request(server.port, 'GET', '/health')).status, 200);
});

test('429 with Retry-After when the queue is full', async () => {
  const client = server.client({ apiKey: 'sk-compat' });
  // Long enough that the first two are still running when the last of the eight arrive (they are sent at once),
  // short enough to be cheap under ASan and in the two-namespace group (400 tokens took 33 s there).
  const long = { ...good, max_tokens: 128, ignore_eos: true };
  const results = await Promise.allSettled(Array.from({ length: 8 }, () => client.chat.completions.create(long)));
  const rejected = results.filter((r) => r.status === 'rejected').map((r) => r.reason);
  assert.ok(rejected.length >= 1, 'some requests over --max-num-seqs + --max-queued-requests get 429');
  for (const e of rejected) {
    assert.ok(e instanceof OpenAI.RateLimitError, String(e));
    assert.equal(e.headers.get('retry-after'), '1');
    assert.equal(typeof e.error.message, 'string');
  }
  assert.ok(results.some((r) => r.status === 'fulfilled'));
});

test('malformed request corpus: every one gets a 4xx with an OpenAI error, the server survives', async () => {
  const deep = (n) => '['.repeat(n) + ']'.repeat(n);
  const invalidUtf8 = Buffer.concat([Buffer.from('{"model":"Kimi-K3","messages":[{"role":"user","content":"'),
                                     Buffer.from([0xff, 0xfe, 0xc3, 0x28, 0xed, 0xa0, 0x80]),
                                     Buffer.from('"}],"max_tokens":4}')]);
  const corpus = [
    ['empty body', ''],
    ['truncated JSON', '{"model":"Kimi-K3","messages":[{"role":"user","content":"hi"'],
    ['not an object', '[1,2,3]'],
    ['null', 'null'],
    ['messages a number', '{"model":"Kimi-K3","messages":5}'],
    ['role a number', '{"model":"Kimi-K3","messages":[{"role":1,"content":"x"}]}'],
    ['unknown role', '{"model":"Kimi-K3","messages":[{"role":"wizard","content":"x"}]}'],
    ['content an object', '{"model":"Kimi-K3","messages":[{"role":"user","content":{"a":1}}]}'],
    ['empty messages', '{"model":"Kimi-K3","messages":[]}'],
    ['max_tokens a string', '{"model":"Kimi-K3","messages":[{"role":"user","content":"x"}],"max_tokens":"10"}'],
    ['huge max_tokens', '{"model":"Kimi-K3","messages":[{"role":"user","content":"x"}],"max_tokens":99999999999999999999999999}'],
    ['huge exponent', '{"model":"Kimi-K3","messages":[{"role":"user","content":"x"}],"temperature":1e400}'],
    ['negative n', '{"model":"Kimi-K3","messages":[{"role":"user","content":"x"}],"n":-1}'],
    ['huge n', '{"model":"Kimi-K3","messages":[{"role":"user","content":"x"}],"n":1000000000}'],
    ['top_p out of range', '{"model":"Kimi-K3","messages":[{"role":"user","content":"x"}],"top_p":7}'],
    ['logit_bias garbage', '{"model":"Kimi-K3","messages":[{"role":"user","content":"x"}],"logit_bias":{"abc":1}}'],
    ['tools not an array', '{"model":"Kimi-K3","messages":[{"role":"user","content":"x"}],"tools":"x"}'],
    ['bad tool_choice', '{"model":"Kimi-K3","messages":[{"role":"user","content":"x"}],"tool_choice":{"type":"function","function":{"name":"nope"}}}'],
    ['bad response_format', '{"model":"Kimi-K3","messages":[{"role":"user","content":"x"}],"response_format":{"type":"xml"}}'],
    ['invalid UTF-8', invalidUtf8],
    ['lone surrogate escape', '{"model":"Kimi-K3","messages":[{"role":"user","content":"\\ud800"}],"max_tokens":"x"}'],
    ['deep nesting', `{"model":"Kimi-K3","messages":${deep(100000)}}`],
    ['deep nesting in a schema', `{"model":"Kimi-K3","messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_schema","json_schema":{"name":"d","schema":${'{"type":"array","items":'.repeat(5000)}{"type":"string"}${'}'.repeat(5000)}}}}`],
    ['10 MB of garbage', Buffer.alloc(10 * 1024 * 1024, 0x41)],
    ['10 MB prompt over the context', JSON.stringify({ model: MODEL, messages: [{ role: 'user', content: 'word '.repeat(2 * 1024 * 1024) }] })],
  ];
  for (const path of ['/v1/chat/completions', '/v1/completions']) {
    for (const [name, body] of corpus) {
      const r = await request(server.port, 'POST', path, body, auth);
      assert.ok(r.status >= 400 && r.status < 500, `${path} ${name}: HTTP ${r.status} ${r.body.slice(0, 200)}`);
      assert.ok(isOpenAiError(r.json), `${path} ${name}: ${r.body.slice(0, 200)}`);
    }
  }
  for (const [name, body] of corpus.slice(0, 5)) {
    const r = await request(server.port, 'POST', '/tokenize', body);
    assert.ok(r.status >= 400 && r.status < 500, `/tokenize ${name}: HTTP ${r.status}`);
  }
  assert.equal((await request(server.port, 'GET', '/health')).status, 200);
});
