// Chat and completions through the official openai SDK: streaming and not, include_usage, n=2, stop,
// seed, logprobs, reasoning_content on/off, /v1/completions, /v1/models, and the guide's section-7
// curl example verbatim.
'use strict';
const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { execFileSync } = require('node:child_process');
const { startServer, request, collectChatStream, MODEL } = require('./common.cjs');

let server;
let client;
before(async () => {
  server = await startServer();
  client = server.client();
});
after(async () => {
  const { code } = await server.stop();
  assert.equal(code, 0, server.log());
});

const messages = [
  { role: 'system', content: 'You are a helpful assistant.' },
  { role: 'user', content: 'Explain the benefits of mixture of experts architectures.' },
];

test('GET /v1/models lists the served name; /health and /version answer', async () => {
  const models = await client.models.list();
  assert.deepEqual(models.data.map((m) => m.id), [MODEL]);
  assert.equal((await request(server.port, 'GET', '/health')).status, 200);
  const version = await request(server.port, 'GET', '/version');
  assert.equal(version.status, 200);
  assert.equal(typeof version.json.version, 'string');
});

test('X-Request-Id is echoed', async () => {
  const r = await request(server.port, 'GET', '/v1/models', undefined, { 'X-Request-Id': 'compat-42' });
  assert.equal(r.headers['x-request-id'], 'compat-42');
});

test('non-streaming chat completion has the OpenAI shape', async () => {
  const r = await client.chat.completions.create({ model: MODEL, messages, max_tokens: 16, temperature: 0 });
  assert.equal(r.object, 'chat.completion');
  assert.match(r.id, /^chatcmpl-/);
  assert.equal(r.model, MODEL);
  assert.equal(r.choices.length, 1);
  assert.equal(r.choices[0].index, 0);
  assert.equal(r.choices[0].message.role, 'assistant');
  assert.ok(['stop', 'length', 'tool_calls'].includes(r.choices[0].finish_reason));
  assert.ok(r.usage.prompt_tokens > 0);
  assert.ok(r.usage.completion_tokens > 0 && r.usage.completion_tokens <= 16);
  assert.equal(r.usage.total_tokens, r.usage.prompt_tokens + r.usage.completion_tokens);
});

test('streaming equals non-streaming at temperature 0, with include_usage', async () => {
  const body = { model: MODEL, messages, max_tokens: 24, temperature: 0 };
  const whole = await client.chat.completions.create(body);
  const stream = await client.chat.completions.create({ ...body, stream: true,
                                                         stream_options: { include_usage: true } });
  const got = await collectChatStream(stream);
  const m = whole.choices[0].message;
  assert.equal(got.content, m.content || '');
  assert.equal(got.reasoning, m.reasoning_content || '');
  assert.deepEqual(got.roles, ['assistant']);
  assert.deepEqual(got.finish, [whole.choices[0].finish_reason]);
  assert.ok(got.usage, 'include_usage: a final chunk carries usage');
  assert.equal(got.usage.completion_tokens, whole.usage.completion_tokens);
  assert.equal(got.usage.prompt_tokens, whole.usage.prompt_tokens);
});

test('n=2 returns two choices', async () => {
  const r = await client.chat.completions.create({ model: MODEL, messages, max_tokens: 8, n: 2, temperature: 1,
                                                  seed: 7 });
  assert.deepEqual(r.choices.map((c) => c.index), [0, 1]);
  const s = await collectChatStream(await client.chat.completions.create(
      { model: MODEL, messages, max_tokens: 8, n: 2, temperature: 1, seed: 7, stream: true }));
  assert.equal(s.finish.length, 2);
});

test('seed makes sampling reproducible', async () => {
  const body = { model: MODEL, messages, max_tokens: 24, temperature: 1.0, seed: 1234 };
  const a = await client.chat.completions.create(body);
  const b = await client.chat.completions.create(body);
  assert.deepEqual(a.choices[0].message, b.choices[0].message);
  const outs = new Set();
  for (const seed of [1, 2, 3, 4]) {
    const r = await client.chat.completions.create({ ...body, seed });
    outs.add(JSON.stringify(r.choices[0].message));
  }
  assert.ok(outs.size > 1, 'different seeds give different samples');
});

test('stop strings end the text before the match', async () => {
  const base = { model: MODEL, prompt: 'The quick brown fox', max_tokens: 32, temperature: 0 };
  const full = (await client.completions.create(base)).choices[0].text;
  assert.ok(full.length >= 6, `need some text to cut: ${JSON.stringify(full)}`);
  const stop = full.slice(3, 6);
  const cut = await client.completions.create({ ...base, stop: [stop] });
  assert.equal(cut.choices[0].text, full.slice(0, full.indexOf(stop)));
  assert.equal(cut.choices[0].finish_reason, 'stop');
});

test('logprobs and top_logprobs', async () => {
  const r = await client.chat.completions.create({ model: MODEL, messages, max_tokens: 6, temperature: 0,
                                                  logprobs: true, top_logprobs: 3 });
  const content = r.choices[0].logprobs.content;
  assert.equal(content.length, r.usage.completion_tokens);
  for (const t of content) {
    assert.equal(typeof t.token, 'string');
    assert.ok(t.logprob <= 0);
    assert.equal(t.top_logprobs.length, 3);
    for (let i = 1; i < 3; i++) assert.ok(t.top_logprobs[i - 1].logprob >= t.top_logprobs[i].logprob);
    // Greedy: the sampled token is the most likely one.
    assert.ok(Math.abs(t.top_logprobs[0].logprob - t.logprob) < 1e-4);
  }
});

test('reasoning_content is present with thinking on and absent with it off', async () => {
  const on = await client.chat.completions.create({ model: MODEL, messages, max_tokens: 16, temperature: 0,
                                                   chat_template_kwargs: { thinking: true } });
  assert.equal(typeof on.choices[0].message.reasoning_content, 'string');
  assert.ok(on.choices[0].message.reasoning_content.length > 0);
  const off = await client.chat.completions.create({ model: MODEL, messages, max_tokens: 16, temperature: 0,
                                                    chat_template_kwargs: { thinking: false } });
  assert.ok(!off.choices[0].message.reasoning_content);
  const stream = await collectChatStream(await client.chat.completions.create(
      { model: MODEL, messages, max_tokens: 16, temperature: 0, stream: true,
        chat_template_kwargs: { thinking: true } }));
  assert.equal(stream.reasoning, on.choices[0].message.reasoning_content);
});

test('/v1/completions streaming and not', async () => {
  const r = await client.completions.create({ model: MODEL, prompt: 'Hello', max_tokens: 8, temperature: 0 });
  assert.equal(r.object, 'text_completion');
  assert.equal(typeof r.choices[0].text, 'string');
  assert.ok(r.usage.completion_tokens > 0);
  let text = '';
  let usage = null;
  for await (const c of await client.completions.create({ model: MODEL, prompt: 'Hello', max_tokens: 8,
                                                           temperature: 0, stream: true,
                                                           stream_options: { include_usage: true } })) {
    for (const ch of c.choices) text += ch.text;
    if (c.usage) usage = c.usage;
  }
  assert.equal(text, r.choices[0].text);
  assert.equal(usage.completion_tokens, r.usage.completion_tokens);
});

test("the guide's section-7 curl example works verbatim", () => {
  const out = execFileSync('curl', ['-sS', '-X', 'POST', `http://127.0.0.1:${server.port}/v1/chat/completions`,
    '-H', 'Content-Type: application/json',
    '-d', `{
    "model": "Kimi-K3",
    "messages": [
      {"role": "system", "content": "You are a helpful assistant."},
      {"role": "user", "content": "Explain the benefits of mixture of experts architectures."}
    ],
    "temperature": 0.7,
    "max_tokens": 1024
  }`], { encoding: 'utf8', timeout: 300000 });
  const r = JSON.parse(out);
  assert.equal(r.object, 'chat.completion', out);
  assert.equal(r.choices[0].message.role, 'assistant');
});

test("the guide's section-7 SDK example (temperature 0.7, max_tokens 1024) works", async () => {
  const response = await client.chat.completions.create({ model: 'Kimi-K3', messages, temperature: 0.7,
                                                         max_tokens: 1024 });
  assert.equal(typeof response.choices[0].message.content === 'string' ||
               response.choices[0].message.content === null, true);
});
