// Concurrency: 64 concurrent streams each equal to the same request non-streaming at temperature 0;
// 500 idle keep-alive connections do not delay a new request; clients that disconnect mid-stream free
// their cache (vllm:kv_cache_usage_perc back to its baseline, nothing left running).
'use strict';
const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const net = require('node:net');
const http = require('node:http');
const { startServer, request, metrics, collectChatStream, MODEL } = require('./common.cjs');

let server;
let client;
before(async () => {
  server = await startServer(['--max-num-seqs', '64']);
  client = server.client();
});
after(async () => {
  const { code } = await server.stop();
  assert.equal(code, 0, server.log());
});

test('64 concurrent streams equal their non-streaming answers at temperature 0', async () => {
  const bodies = Array.from({ length: 64 }, (_, i) => ({
    model: MODEL, temperature: 0, max_tokens: 12, chat_template_kwargs: { thinking: i % 2 === 0 },
    messages: [{ role: 'user', content: `Request number ${i}: tell me something about ${i * 7}.` }] }));
  const streams = await Promise.all(bodies.map(async (b) =>
      collectChatStream(await client.chat.completions.create({ ...b, stream: true }))));
  // The references one at a time (batching must not change results).
  for (let i = 0; i < bodies.length; i++) {
    const whole = await client.chat.completions.create(bodies[i]);
    const m = whole.choices[0].message;
    assert.equal(streams[i].content, m.content || '', `request ${i}`);
    assert.equal(streams[i].reasoning, m.reasoning_content || '', `request ${i}`);
    assert.deepEqual(streams[i].finish, [whole.choices[0].finish_reason]);
  }
});

test('500 idle keep-alive connections do not delay a new request', async () => {
  const sockets = await Promise.all(Array.from({ length: 500 }, () => new Promise((resolve, reject) => {
    const s = net.connect(server.port, '127.0.0.1', () => {
      // One keep-alive request each, then silence.
      s.write('GET /health HTTP/1.1\r\nHost: x\r\n\r\n');
      s.once('data', () => resolve(s));
    });
    s.on('error', reject);
  })));
  try {
    const t0 = performance.now();
    const r = await request(server.port, 'GET', '/v1/models');
    const healthMs = performance.now() - t0;
    assert.equal(r.status, 200);
    assert.ok(healthMs < 500, `new request took ${healthMs.toFixed(1)} ms`);
    const t1 = performance.now();
    await client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'hi' }],
                                           max_tokens: 4, temperature: 0 });
    const chatMs = performance.now() - t1;
    assert.ok(chatMs < 5000, `chat took ${chatMs.toFixed(1)} ms`);
    assert.ok(sockets.every((s) => !s.destroyed), 'idle connections stay open');
  } finally {
    for (const s of sockets) s.destroy();
  }
});

// Opens a streaming chat request on its own connection and resolves once `chunks` SSE events have
// arrived; destroy() closes the socket. Raw node:http rather than the SDK: aborting the SDK's fetch left
// the socket open in one CI run (undici), and this test is about the server noticing a closed socket.
function openStream(port, body, chunks) {
  return new Promise((resolve, reject) => {
    const payload = Buffer.from(JSON.stringify(body));
    const req = http.request({ host: '127.0.0.1', port, method: 'POST', path: '/v1/chat/completions', agent: false,
                               headers: { 'Content-Type': 'application/json', 'Content-Length': payload.length } });
    const timer = setTimeout(() => reject(new Error(`no ${chunks} events within 60 s`)), 60000);
    req.on('error', (e) => { clearTimeout(timer); reject(e); });
    req.on('response', (res) => {
      assert.equal(res.statusCode, 200);
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d) => {
        text += d;
        if ((text.match(/^data: /gm) || []).length >= chunks) {
          clearTimeout(timer);
          resolve({ destroy: () => req.destroy() });
        }
      });
      res.on('error', () => {});
    });
    req.end(payload);
  });
}

test('clients that disconnect mid-stream free their cache', async () => {
  const baseline = (await metrics(server.port)).metric('vllm:kv_cache_usage_perc');
  const streams = await Promise.all(Array.from({ length: 8 }, (_, i) => openStream(server.port,
      { model: MODEL, messages: [{ role: 'user', content: `long story ${i}` }], max_tokens: 3000,
        ignore_eos: true, temperature: 1, stream: true }, 3)));
  const during = await metrics(server.port);
  assert.equal(during.metric('vllm:num_requests_running') + during.metric('vllm:num_requests_waiting'), 8,
               during.text);
  assert.ok(during.metric('vllm:kv_cache_usage_perc') > baseline, 'the streams hold cache');
  for (const s of streams) s.destroy();
  const deadline = Date.now() + 10000;
  let m;
  while (Date.now() < deadline) {
    m = await metrics(server.port);
    if (m.metric('vllm:num_requests_running') === 0 && m.metric('vllm:num_requests_waiting') === 0 &&
        m.metric('vllm:kv_cache_usage_perc') <= baseline) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  assert.equal(m.metric('vllm:num_requests_running'), 0, m.text);
  assert.equal(m.metric('vllm:num_requests_waiting'), 0);
  assert.ok(m.metric('vllm:kv_cache_usage_perc') <= baseline, `${m.metric('vllm:kv_cache_usage_perc')} > ${baseline}`);
  assert.ok(m.values['vllm:request_success_total{model_name="Kimi-K3",finished_reason="abort"}'] >= 8);
});

test('/metrics has the vLLM names and latency histograms', async () => {
  const m = await metrics(server.port);
  for (const name of ['vllm:num_requests_running', 'vllm:num_requests_waiting', 'vllm:kv_cache_usage_perc',
                      'vllm:prefix_cache_queries_total', 'vllm:prefix_cache_hits_total', 'vllm:prompt_tokens_total',
                      'vllm:generation_tokens_total', 'vllm:time_to_first_token_seconds_count',
                      'vllm:inter_token_latency_seconds_count', 'vllm:e2e_request_latency_seconds_count']) {
    assert.ok(Object.keys(m.values).some((k) => k === name || k.startsWith(name + '{')), `${name} missing`);
  }
  assert.ok(m.metric('vllm:time_to_first_token_seconds_count') > 0);
  assert.ok(m.metric('vllm:e2e_request_latency_seconds_count') > 0);
  assert.ok(m.metric('vllm:generation_tokens_total') > 0);
});
