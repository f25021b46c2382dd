// The HTTP layer's vLLM flags end to end: HTTPS with --ssl-certfile / --ssl-keyfile (the openai SDK in a
// child node process trusting the test certificate through NODE_EXTRA_CA_CERTS: a request and a stream),
// start-up errors for a missing certificate and a malformed CORS list, and CORS preflights on the real
// server (answered before the API key check).
'use strict';
const { test } = require('node:test');
const assert = require('node:assert/strict');
const { spawn, spawnSync } = require('node:child_process');
const fs = require('node:fs');
const https = require('node:https');
const os = require('node:os');
const path = require('node:path');
const { startServer, request, MODEL, K3_BIN } = require('./common.cjs');

// A self-signed certificate for 127.0.0.1 / localhost (openssl CLI).
function makeCert() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'k3-tls-'));
  const cert = path.join(dir, 'server.crt');
  const key = path.join(dir, 'server.key');
  const r = spawnSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1',
    '-nodes', '-keyout', key, '-out', cert, '-days', '1', '-subj', '/CN=localhost',
    '-addext', 'subjectAltName=IP:127.0.0.1,DNS:localhost'], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  return { dir, cert, key };
}

function httpsGet(port, ca, pathname) {
  return new Promise((resolve, reject) => {
    const req = https.get({ host: '127.0.0.1', port, path: pathname, ca, agent: false }, (res) => {
      let body = '';
      res.on('data', (d) => { body += d; });
      res.on('end', () => resolve({ status: res.statusCode, body }));
    });
    req.on('error', reject);
    req.setTimeout(10000, () => req.destroy(new Error('timeout')));
  });
}

// Runs the SDK in a child process (NODE_EXTRA_CA_CERTS is read at start-up only) and returns its JSON.
function sdkOverHttps(baseURL, ca) {
  const script = `
    const OpenAI = require('openai');
    (async () => {
      const client = new OpenAI({ baseURL: ${JSON.stringify(baseURL)}, apiKey: 'x', maxRetries: 0 });
      const one = await client.chat.completions.create({ model: ${JSON.stringify(MODEL)}, max_tokens: 4,
        temperature: 0, messages: [{ role: 'user', content: 'hi' }] });
      const stream = await client.chat.completions.create({ model: ${JSON.stringify(MODEL)}, max_tokens: 4,
        ignore_eos: true, temperature: 0, stream: true, messages: [{ role: 'user', content: 'hi' }] });
      const finish = [];
      let chunks = 0;
      for await (const c of stream) { chunks++; for (const ch of c.choices) if (ch.finish_reason) finish.push(ch.finish_reason); }
      console.log(JSON.stringify({ object: one.object, choices: one.choices.length, chunks, finish }));
    })().catch((e) => { console.error(String(e)); process.exit(1); });`;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['-e', script], { cwd: __dirname,
      env: { ...process.env, NODE_EXTRA_CA_CERTS: ca }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => { out += d; });
    child.stderr.on('data', (d) => { err += d; });
    child.on('exit', (code) => (code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`sdk child: ${err}`))));
  });
}

test('HTTPS: the openai SDK streams over TLS; plain HTTP on the port is closed', async () => {
  const { dir, cert, key } = makeCert();
  const server = await startServer(['--ssl-certfile', cert, '--ssl-keyfile', key], { waitHealthy: false });
  try {
    assert.match(server.log(), /listening on https:\/\//);
    const ca = fs.readFileSync(cert);
    const deadline = Date.now() + 300000;
    while ((await httpsGet(server.port, ca, '/health').catch(() => ({ status: 0 }))).status !== 200) {
      assert.ok(Date.now() < deadline, `/health never became 200:\n${server.log()}`);
      await new Promise((res) => setTimeout(res, 100));
    }
    const r = await sdkOverHttps(`https://127.0.0.1:${server.port}/v1`, cert);
    assert.equal(r.object, 'chat.completion');
    assert.equal(r.choices, 1);
    assert.ok(r.chunks >= 2);
    assert.deepEqual(r.finish, ['length']);
    await assert.rejects(request(server.port, 'GET', '/health'));  // plain HTTP: closed, no answer
  } finally {
    const { code } = await server.stop();
    fs.rmSync(dir, { recursive: true, force: true });
    assert.equal(code, 0, server.log());
  }
});

test('a missing certificate and a malformed CORS list stop start-up with the flag named', () => {
  const missing = spawnSync(K3_BIN, ['serve', '--port', '0', '--ssl-certfile', '/nonexistent/server.crt',
    '--ssl-keyfile', '/nonexistent/server.key'], { encoding: 'utf8', timeout: 60000 });
  assert.notEqual(missing.status, 0);
  assert.match(missing.stdout + missing.stderr, /--ssl-certfile \/nonexistent\/server\.crt: No such file/);
  const cors = spawnSync(K3_BIN, ['serve', '--port', '0', '--allowed-origins', '["https://a.example",'],
    { encoding: 'utf8', timeout: 60000 });
  assert.equal(cors.status, 2);
  assert.match(cors.stdout + cors.stderr, /--allowed-origins .*expected a JSON list of strings/);
});

test('CORS: preflights need no API key; answers carry Access-Control-Allow-Origin', async () => {
  const server = await startServer(['--api-key', 'sk-test', '--allowed-origins', '["https://app.example"]']);
  try {
    const pre = await request(server.port, 'OPTIONS', '/v1/chat/completions', undefined, {
      Origin: 'https://app.example', 'Access-Control-Request-Method': 'POST',
      'Access-Control-Request-Headers': 'authorization, content-type' });
    assert.equal(pre.status, 200);
    assert.equal(pre.headers['access-control-allow-origin'], 'https://app.example');
    assert.equal(pre.headers['access-control-max-age'], '600');
    const bad = await request(server.port, 'OPTIONS', '/v1/models', undefined, {
      Origin: 'https://evil.example', 'Access-Control-Request-Method': 'GET' });
    assert.equal(bad.status, 400);
    assert.equal(bad.body, 'Disallowed CORS origin');
    const models = await request(server.port, 'GET', '/v1/models', undefined, {
      Origin: 'https://app.example', Authorization: 'Bearer sk-test' });
    assert.equal(models.status, 200);
    assert.equal(models.headers['access-control-allow-origin'], 'https://app.example');
    assert.equal(models.headers.vary, 'Origin');
  } finally {
    await server.stop();
  }
});
