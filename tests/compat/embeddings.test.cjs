// POST /v1/embeddings through the official openai SDK (client.embeddings.create) and raw HTTP: a string,
// a list of strings, token ids and lists of them; the SDK's default base64 (which it decodes into
// numbers) and encoding_format "float"; vectors of hidden_size, L2-normalised, deterministic, equal
// for equal inputs however they are batched or chunked; vLLM's id/created/usage shape; 400s for empty
// input, dimensions, wrong types and inputs over max_model_len; /invocations with an embedding body.
// Excluded from tests/dist/netns_test.sh's group run (dist_test.py checks one embedding on TP 2).
'use strict';
const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const OpenAI = require('openai');
const { startServer, request, metrics, isOpenAiError, MODEL } = require('./common.cjs');

let server;
let client;
before(async () => {
  // A small step budget: a 200-token input is prefilled in several chunks.
  server = await startServer(['--max-model-len', '256', '--max-num-batched-tokens', '48',
                              '--enable-prefix-caching']);
  client = server.client();
});
after(async () => {
  const { code } = await server.stop();
  assert.equal(code, 0, server.log());
});

const norm = (v) => Math.sqrt(Array.from(v).reduce((s, x) => s + x * x, 0));
function assertClose(a, b, tol, what) {
  assert.equal(a.length, b.length, what);
  let worst = 0;
  for (let i = 0; i < a.length; ++i) worst = Math.max(worst, Math.abs(a[i] - b[i]));
  assert.ok(worst <= tol, `${what}: differs by ${worst}`);
}
function maxDiff(a, b) {
  let worst = 0;
  for (let i = 0; i < a.length; ++i) worst = Math.max(worst, Math.abs(a[i] - b[i]));
  return worst;
}

const TEXT = 'The quick brown fox jumps over the lazy dog.';
const LONG = 'Embeddings pool every position of the prompt. '.repeat(4);  // more than one 48-token step

test('a string: the SDK default (base64, decoded) gives one normalised vector with vLLM\'s shape', async () => {
  const r = await client.embeddings.create({ model: MODEL, input: TEXT });
  assert.equal(r.object, 'list');
  assert.equal(r.model, MODEL);
  assert.match(r.id, /^embd-/);
  assert.equal(typeof r.created, 'number');
  assert.equal(r.data.length, 1);
  assert.equal(r.data[0].object, 'embedding');
  assert.equal(r.data[0].index, 0);
  const v = r.data[0].embedding;
  // In node the SDK decodes the base64 float32 bytes into an array of numbers (each a float32 value).
  assert.ok(Array.isArray(v), typeof v);
  assert.ok(v.every((x) => Math.fround(x) === x), 'float32 values');
  assert.ok(v.length >= 8, `${v.length} dimensions`);
  assert.ok(Math.abs(norm(v) - 1) < 1e-5, `norm ${norm(v)}`);
  assert.ok(v.every(Number.isFinite));
  assert.ok(r.usage.prompt_tokens > 0);
  assert.equal(r.usage.total_tokens, r.usage.prompt_tokens);
  // Deterministic: the same request again, and as floats, gives the same vector.
  const again = await client.embeddings.create({ model: MODEL, input: TEXT });
  assertClose(again.data[0].embedding, v, 0, 'same request twice');
  const floats = await client.embeddings.create({ model: MODEL, input: TEXT, encoding_format: 'float' });
  assert.ok(Array.isArray(floats.data[0].embedding));
  assertClose(floats.data[0].embedding, v, 1e-7, 'float vs base64');
  const raw = await request(server.port, 'POST', '/v1/embeddings',
                            JSON.stringify({ model: MODEL, input: TEXT, encoding_format: 'base64' }));
  assert.equal(raw.status, 200, raw.body);
  assert.equal(typeof raw.json.data[0].embedding, 'string');
  const bytes = Buffer.from(raw.json.data[0].embedding, 'base64');
  assert.equal(bytes.length, 4 * v.length);
  assert.equal(bytes.readFloatLE(0), v[0]);
  assert.equal(raw.json.usage.completion_tokens, 0);
});

test('a list of strings: input order, equal inputs give equal vectors, batching changes nothing', async () => {
  const alone = (await client.embeddings.create({ model: MODEL, input: TEXT })).data[0].embedding;
  const longResponse = await client.embeddings.create({ model: MODEL, input: LONG });
  assert.ok(longResponse.usage.prompt_tokens > 48, `${longResponse.usage.prompt_tokens} tokens: several chunks`);
  const long = longResponse.data[0].embedding;
  const r = await client.embeddings.create({ model: MODEL, input: [TEXT, 'something else entirely', LONG, TEXT] });
  assert.equal(r.data.length, 4);
  r.data.forEach((d, i) => assert.equal(d.index, i));
  assertClose(r.data[0].embedding, r.data[3].embedding, 0, 'two equal inputs');
  assertClose(r.data[0].embedding, alone, 1e-5, 'batched vs alone');
  assertClose(r.data[2].embedding, long, 1e-5, 'the chunked long input batched vs alone');
  assert.ok(maxDiff(r.data[0].embedding, r.data[1].embedding) > 1e-3, 'different inputs differ');
  for (const d of r.data) assert.ok(Math.abs(norm(d.embedding) - 1) < 1e-5);
  assert.ok(long.length === alone.length);
  // An embedding request generates nothing, and a generation beside it is unchanged.
  const completion = { model: MODEL, prompt: TEXT, max_tokens: 6, temperature: 0 };
  const before = await client.completions.create(completion);
  const [beside] = await Promise.all([client.completions.create(completion),
                                      client.embeddings.create({ model: MODEL, input: [LONG, TEXT] })]);
  assert.equal(beside.choices[0].text, before.choices[0].text);
});

test('token ids and lists of token ids equal the text they encode', async () => {
  const tok = await request(server.port, 'POST', '/tokenize', JSON.stringify({ model: MODEL, prompt: TEXT }));
  assert.equal(tok.status, 200, tok.body);
  const ids = tok.json.tokens;
  const byText = (await client.embeddings.create({ model: MODEL, input: TEXT })).data[0].embedding;
  const byIds = await client.embeddings.create({ model: MODEL, input: ids });
  assert.equal(byIds.data.length, 1);
  assert.equal(byIds.usage.prompt_tokens, ids.length);
  assertClose(byIds.data[0].embedding, byText, 1e-6, 'ids vs text');
  const lists = await client.embeddings.create({ model: MODEL, input: [ids, ids.slice(0, 3)] });
  assert.equal(lists.data.length, 2);
  assert.equal(lists.usage.prompt_tokens, ids.length + 3);
  assertClose(lists.data[0].embedding, byText, 1e-5, 'ids in a list vs text');
  // truncate_prompt_tokens keeps the last k tokens (vLLM's extra field).
  const cut = await client.embeddings.create({ model: MODEL, input: ids, truncate_prompt_tokens: 3 });
  const last3 = await client.embeddings.create({ model: MODEL, input: ids.slice(-3) });
  assert.equal(cut.usage.prompt_tokens, 3);
  assertClose(cut.data[0].embedding, last3.data[0].embedding, 1e-6, 'truncated vs the last 3 ids');
});

test('errors are OpenAI-shaped 4xx', async () => {
  const cases = [
    [{ model: MODEL, input: [] }, 400],
    [{ model: MODEL, input: '' }, 400],
    [{ model: MODEL, input: ['a', ''] }, 400],
    [{ model: MODEL, input: TEXT, dimensions: 8 }, 400],
    [{ model: MODEL, input: Array(300).fill(100) }, 400],  // over --max-model-len 256
    [{ model: MODEL, input: 5 }, 400],
    [{ model: MODEL, input: [1.5] }, 400],
    [{ model: MODEL, input: TEXT, encoding_format: 'int8' }, 400],
    [{ model: 'no-such-model', input: TEXT }, 404],
  ];
  for (const [body, status] of cases) {
    await assert.rejects(client.embeddings.create({ encoding_format: 'float', ...body }), (e) => {
      assert.ok(e instanceof OpenAI.APIError, String(e));
      assert.equal(e.status, status, `${JSON.stringify(body).slice(0, 80)}: ${e.message}`);
      return true;
    });
    const raw = await request(server.port, 'POST', '/v1/embeddings', JSON.stringify(body));
    assert.equal(raw.status, status, raw.body);
    assert.ok(isOpenAiError(raw.json), raw.body);
  }
  const dims = await request(server.port, 'POST', '/v1/embeddings',
                             JSON.stringify({ model: MODEL, input: TEXT, dimensions: 8 }));
  assert.equal(dims.json.error.param, 'dimensions');
  assert.match(dims.json.error.message, /matryoshka/);
  const tooLong = await request(server.port, 'POST', '/v1/embeddings',
                                JSON.stringify({ model: MODEL, input: Array(300).fill(100) }));
  assert.match(tooLong.json.error.message, /maximum context length is 256/);
});

test('/invocations answers an embedding body; metrics count the requests', async () => {
  const m0 = await metrics(server.port);
  const r = await request(server.port, 'POST', '/invocations', JSON.stringify({ model: MODEL, input: [TEXT, TEXT] }));
  assert.equal(r.status, 200, r.body);
  assert.equal(r.json.object, 'list');
  assert.equal(r.json.data.length, 2);
  const m1 = await metrics(server.port);
  assert.equal(m1.metric('vllm:request_success_total') - m0.metric('vllm:request_success_total'), 2);
  assert.ok(m1.metric('vllm:prompt_tokens_total') > m0.metric('vllm:prompt_tokens_total'));
  assert.equal(m1.metric('vllm:generation_tokens_total'), m0.metric('vllm:generation_tokens_total'));
});
