// Prefix caching: repeating a long prompt raises vllm:prefix_cache_hits, reports
// usage.prompt_tokens_details.cached_tokens > 0, and gives the same output at temperature 0.
'use strict';
const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { startServer, metrics, MODEL } = require('./common.cjs');

let server;
let client;
before(async () => {
  server = await startServer(['--enable-prefix-caching', '--prefix-snapshot-interval', '64']);
  client = server.client();
});
after(async () => {
  const { code } = await server.stop();
  assert.equal(code, 0, server.log());
});

test('a repeated long prompt hits the prefix cache with identical output', async () => {
  const system = Array.from({ length: 80 }, (_, i) => `Rule ${i}: answer politely about topic ${i}.`).join(' ');
  const body = { model: MODEL, temperature: 0, max_tokens: 16,
                 messages: [{ role: 'system', content: system }, { role: 'user', content: 'Hello there' }] };
  const before = await metrics(server.port);
  const first = await client.chat.completions.create(body);
  assert.ok(first.usage.prompt_tokens > 256, `prompt of ${first.usage.prompt_tokens} tokens`);
  const mid = await metrics(server.port);
  const second = await client.chat.completions.create(body);
  const after = await metrics(server.port);
  assert.deepEqual(second.choices[0].message, first.choices[0].message);
  assert.ok(second.usage.prompt_tokens_details.cached_tokens > 0, JSON.stringify(second.usage));
  assert.ok(after.metric('vllm:prefix_cache_hits_total') > mid.metric('vllm:prefix_cache_hits_total'));
  assert.ok(after.metric('vllm:prefix_cache_queries_total') > before.metric('vllm:prefix_cache_queries_total'));
  // Same system prompt, another question: a partial hit, and the answer matches a cold server's? The
  // question differs, so only the cached_tokens are compared against the first hit.
  const other = await client.chat.completions.create(
      { ...body, messages: [body.messages[0], { role: 'user', content: 'Something else entirely' }] });
  assert.ok(other.usage.prompt_tokens_details.cached_tokens > 0);
  assert.ok(other.usage.prompt_tokens_details.cached_tokens <= second.usage.prompt_tokens_details.cached_tokens);
});

test('prefix caching off: no hits and the same output', async () => {
  const cold = await startServer(['--no-enable-prefix-caching']);
  try {
    const c = cold.client();
    const system = Array.from({ length: 80 }, (_, i) => `Rule ${i}: answer politely about topic ${i}.`).join(' ');
    const body = { model: MODEL, temperature: 0, max_tokens: 16,
                   messages: [{ role: 'system', content: system }, { role: 'user', content: 'Hello there' }] };
    const a = await c.chat.completions.create(body);
    const b = await c.chat.completions.create(body);
    assert.equal(b.usage.prompt_tokens_details?.cached_tokens ?? 0, 0);
    assert.deepEqual(a.choices[0].message, b.choices[0].message);
    const warm = await client.chat.completions.create(body);
    assert.deepEqual(warm.choices[0].message, a.choices[0].message, 'hit and no hit give the same output');
  } finally {
    await cold.stop();
  }
});
