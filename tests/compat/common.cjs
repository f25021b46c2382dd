// Shared helpers of the black-box tests: start the built `k3 serve` on a free port with the embedded
// model, wait for /health, talk to it with the official openai SDK or raw HTTP, read /metrics, stop it.
'use strict';
const { spawn } = require('node:child_process');
const http = require('node:http');
const zlib = require('node:zlib');
const OpenAI = require('openai');

const K3_BIN = process.env.K3_BIN;
if (!K3_BIN) throw new Error('K3_BIN must point to the built k3 binary');
const MODEL = 'Kimi-K3';

// Starts `k3 serve --host 127.0.0.1 --port 0 --served-model-name Kimi-K3 <extra>` and resolves once
// /health is 200. The port is read from the "listening on http://HOST:PORT" log line.
async function startServer(extra = [], { env = {}, waitHealthy = true } = {}) {
  const args = ['serve', '--host', '127.0.0.1', '--port', '0', '--served-model-name', MODEL, ...extra];
  const proc = spawn(K3_BIN, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  const exited = new Promise((resolve) => proc.on('exit', (code, signal) => resolve({ code, signal })));
  const port = await new Promise((resolve, reject) => {
    const onData = (d) => {
      log += d.toString();
      const m = log.match(/listening on https?:\/\/[^\s:]+:(\d+)/);
      if (m) resolve(Number(m[1]));
    };
    proc.stdout.on('data', onData);
    proc.stderr.on('data', onData);
    exited.then(({ code }) => reject(new Error(`k3 serve exited with ${code} before listening:\n${log}`)));
    setTimeout(() => reject(new Error(`k3 serve did not listen within 120 s:\n${log}`)), 120000).unref();
  });
  const server = {
    port,
    proc,
    exited,
    log: () => log,
    baseURL: `http://127.0.0.1:${port}/v1`,
    client: (opts = {}) => new OpenAI({ baseURL: `http://127.0.0.1:${port}/v1`, apiKey: 'not-needed',
                                        maxRetries: 0, timeout: 120000, ...opts }),
    stop: async () => {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM');
      return exited;
    },
  };
  if (waitHealthy) {
    const deadline = Date.now() + 300000;
    while (true) {
      const r = await request(port, 'GET', '/health').catch(() => null);
      if (r && r.status === 200) break;
      if (Date.now() > deadline) throw new Error(`/health never became 200:\n${log}`);
      await new Promise((res) => setTimeout(res, 100));
    }
  }
  return server;
}

// Raw HTTP request on a fresh connection: resolves {status, headers, body (string), json (or undefined)}.
function request(port, method, path, body = undefined, headers = {}) {
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : Buffer.isBuffer(body) ? body : Buffer.from(body);
    const req = http.request({ host: '127.0.0.1', port, method, path, agent: false,
                               headers: { ...(payload ? { 'Content-Type': 'application/json',
                                                          'Content-Length': payload.length } : {}),
                                          ...headers } },
                             (res) => {
                               const parts = [];
                               res.on('data', (d) => parts.push(d));
                               res.on('end', () => {
                                 const text = Buffer.concat(parts).toString();
                                 let json;
                                 try { json = JSON.parse(text); } catch { json = undefined; }
                                 resolve({ status: res.statusCode, headers: res.headers, body: text, json });
                               });
                               res.on('error', reject);
                             });
    req.on('error', reject);
    if (payload) req.write(payload);
    req.end();
  });
}

// Parses the Prometheus text of /metrics into {name_with_labels: value}; metric(name) sums a name's samples.
async function metrics(port) {
  const r = await request(port, 'GET', '/metrics');
  const values = {};
  for (const line of r.body.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const space = line.lastIndexOf(' ');
    values[line.slice(0, space)] = Number(line.slice(space + 1));
  }
  const metric = (name) => Object.entries(values)
      .filter(([k]) => k === name || k.startsWith(name + '{'))
      .reduce((sum, [, v]) => sum + v, 0);
  return { values, metric, text: r.body };
}

// Asserts an OpenAI-shaped error body.
function isOpenAiError(json) {
  return json && typeof json.error === 'object' && typeof json.error.message === 'string' &&
         json.error.message.length > 0 && typeof json.error.type === 'string' && 'param' in json.error &&
         'code' in json.error;
}

// Concatenated content / reasoning / tool calls of a chat stream (SDK async iterator).
async function collectChatStream(stream) {
  const out = { content: '', reasoning: '', finish: [], chunks: 0, usage: null, toolCalls: [], roles: [] };
  for await (const chunk of stream) {
    out.chunks++;
    if (chunk.usage) out.usage = chunk.usage;
    for (const choice of chunk.choices) {
      const d = choice.delta || {};
      if (d.role) out.roles.push(d.role);
      if (d.content) out.content += d.content;
      if (d.reasoning_content) out.reasoning += d.reasoning_content;
      for (const tc of d.tool_calls || []) {
        const slot = (out.toolCalls[tc.index] ||= { id: '', name: '', arguments: '' });
        if (tc.id) slot.id = tc.id;
        if (tc.function?.name) slot.name += tc.function.name;
        if (tc.function?.arguments) slot.arguments += tc.function.arguments;
      }
      if (choice.finish_reason) out.finish.push(choice.finish_reason);
    }
  }
  return out;
}

// A PNG (8-bit RGB, filter 0) of width x height with pixels from `seed`, built with node's zlib.
const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});
function crc32(buf) {
  let c = 0xffffffff;
  for (const b of buf) c = CRC_TABLE[(c ^ b) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}
function chunk(type, data) {
  const len = Buffer.alloc(4);
  len.writeUInt32BE(data.length);
  const body = Buffer.concat([Buffer.from(type, 'ascii'), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(body));
  return Buffer.concat([len, body, crc]);
}
function png(width, height, seed) {
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header.set([8, 2, 0, 0, 0], 8);
  const raw = Buffer.alloc((width * 3 + 1) * height);
  let x = seed >>> 0;
  for (let i = 0; i < raw.length; i++) {
    x = (Math.imul(x, 1664525) + 1013904223) >>> 0;
    raw[i] = i % (width * 3 + 1) === 0 ? 0 : x >>> 24;
  }
  return Buffer.concat([Buffer.from([137, 80, 78, 71, 13, 10, 26, 10]), chunk('IHDR', header),
                        chunk('IDAT', zlib.deflateSync(raw)), chunk('IEND', Buffer.alloc(0))]);
}

module.exports = { startServer, request, metrics, isOpenAiError, collectChatStream, png, MODEL, K3_BIN };
