// SIGTERM during streaming: the streams in flight finish normally ([DONE], a finish_reason), new
// connections are refused, and the process exits 0. A second server checks --shutdown-timeout aborts
// streams that take longer.
'use strict';
const { test } = require('node:test');
const assert = require('node:assert/strict');
const { startServer, request, collectChatStream, MODEL } = require('./common.cjs');

test('SIGTERM lets in-flight streams complete and exits 0', async () => {
  const server = await startServer(['--shutdown-timeout', '60']);
  const client = server.client();
  let firstChunks = 0;
  let signalled;
  const signalledPromise = new Promise((resolve) => { signalled = resolve; });
  const streams = Array.from({ length: 4 }, async (_, i) => {
    const stream = await client.chat.completions.create({ model: MODEL, stream: true, max_tokens: 64,
      ignore_eos: true, temperature: 0, messages: [{ role: 'user', content: `stream ${i}` }] });
    const out = { content: '', reasoning: '', finish: [] };
    for await (const chunk of stream) {
      for (const c of chunk.choices) {
        out.content += c.delta.content || '';
        out.reasoning += c.delta.reasoning_content || '';
        if (c.finish_reason) out.finish.push(c.finish_reason);
      }
      if (++firstChunks === 8) server.proc.kill('SIGTERM') && signalled();
    }
    return out;
  });
  const results = await Promise.all(streams);
  await signalledPromise;
  for (const r of results) assert.deepEqual(r.finish, ['length']);
  const { code } = await server.exited;
  assert.equal(code, 0, server.log());
  await assert.rejects(request(server.port, 'GET', '/health'));
});

test('--shutdown-timeout bounds the wait: longer streams are aborted, exit 0', async () => {
  const server = await startServer(['--shutdown-timeout', '0.5']);
  const client = server.client();
  // No max_tokens: with ignore_eos the stream would run to the end of the context, far beyond 0.5 s.
  const stream = await client.chat.completions.create({ model: MODEL, stream: true, ignore_eos: true,
    temperature: 1, messages: [{ role: 'user', content: 'go on forever' }] });
  let signalledAt = 0;
  const finish = [];
  let chunks = 0;
  let cut = null;
  try {
    for await (const chunk of stream) {
      if (!chunk.choices.length) continue;
      chunks++;
      for (const c of chunk.choices) if (c.finish_reason) finish.push(c.finish_reason);
      if (!signalledAt) {
        signalledAt = Date.now();
        server.proc.kill('SIGTERM');
      }
    }
  } catch (e) {
    cut = e;  // the connection may be cut after the abort; either way the stream ends
  }
  const { code } = await server.exited;
  const waitedMs = Date.now() - signalledAt;
  assert.equal(code, 0, server.log());
  assert.ok(signalledAt > 0 && chunks > 1, `${chunks} chunks`);
  // Aborted at the timeout, not run to its natural end.
  assert.ok(cut !== null || !finish.includes('length'), `finish ${finish}, ${chunks} chunks`);
  assert.ok(waitedMs >= 400 && waitedMs < 15000, `exit ${waitedMs} ms after SIGTERM`);
});
