// Issue 42 (items 1 and 3) over the official openai SDK and raw HTTP: add_generation_prompt and
// continue_final_message in chat, /tokenize and the render routes (both true: vLLM's 400); the render
// routes' token ids equal the chat prompt's; and vLLM's serve flags --response-role,
// --enable-force-include-usage, --return-tokens-as-token-ids, --enable-request-id-headers, --max-log-len,
// --enable-prompt-tokens-details, --api-server-count 1, --quantization mxfp4, --tokenizer DIR (a copy of the
// model's tokenizer files gives the same ids; a directory without them stops start-up), the
// refused ones (--uds, --revision, --api-server-count 2, --quantization fp8) and an unknown vLLM flag,
// each stopping start-up with a line that names it.
'use strict';
const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { spawn, spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { startServer, request, MODEL, K3_BIN } = require('./common.cjs');

let server;
let client;
before(async () => {
  server = await startServer(['--response-role', 'model', '--enable-force-include-usage',
                              '--return-tokens-as-token-ids', '--enable-request-id-headers', '--max-log-len', '100',
                              '--enable-prompt-tokens-details', '--api-server-count', '1', '--quantization', 'mxfp4',
                              '--enable-log-requests']);
  client = server.client();
});
after(async () => {
  const { code } = await server.stop();
  assert.equal(code, 0, server.log());
});

const history = [{ role: 'user', content: 'Tell me a story.' },
                 { role: 'assistant', content: 'Once upon a time', reasoning_content: 'A short one.' }];

async function tokenize(body) {
  const r = await request(server.port, 'POST', '/tokenize', JSON.stringify({ model: MODEL, ...body }));
  assert.equal(r.status, 200, r.body);
  return r.json.tokens;
}

test('--max-log-len 100 with --enable-log-requests: the prompt text and ids are logged, each cut to 100', async () => {
  const long = 'Tell me about lighthouses. '.repeat(20);
  const r = await client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: long }],
                                                   max_tokens: 1 });
  const lines = server.log().split('\n').filter((l) => l.includes(': chat, model') && l.includes('prompt_token_ids'));
  const line = lines[lines.length - 1];
  assert.ok(line, server.log());
  const m = line.match(/prompt: "(.*)"\(\+(\d+) more characters\), prompt_token_ids: \[([\d, ]+)\]\(\+(\d+) more\)/);
  assert.ok(m, line);
  assert.equal(Number(m[4]) + 100, r.usage.prompt_tokens, line);
  assert.equal(m[3].split(', ').length, 100, line);
  assert.ok(m[1].length > 0, line);
  assert.ok(Number(m[2]) > 0, line);
});

test('add_generation_prompt false leaves out the assistant prefix (tokenize and chat usage)', async () => {
  const messages = [{ role: 'user', content: 'hi' }];
  const withPrompt = await tokenize({ messages });
  const without = await tokenize({ messages, add_generation_prompt: false });
  assert.ok(without.length < withPrompt.length);
  assert.deepEqual(withPrompt.slice(0, without.length), without);
  const r = await client.chat.completions.create({ model: MODEL, messages, max_tokens: 2,
                                                   add_generation_prompt: false });
  assert.equal(r.usage.prompt_tokens, without.length);
});

test('continue_final_message continues the assistant reply (SDK), content only', async () => {
  const ids = await tokenize({ messages: history, add_generation_prompt: false, continue_final_message: true });
  const closed = await tokenize({ messages: history, add_generation_prompt: false });
  assert.notDeepEqual(ids, closed);
  const text = (await request(server.port, 'POST', '/detokenize', JSON.stringify({ tokens: ids }))).json.prompt;
  assert.ok(text.endsWith('<|open|>response<|sep|>Once upon a time'), text);
  assert.ok(text.includes('A short one.<|close|>think<|sep|>'), text);
  const r = await client.chat.completions.create({
    model: MODEL, messages: history, max_tokens: 8, add_generation_prompt: false, continue_final_message: true,
  });
  assert.equal(r.usage.prompt_tokens, ids.length);
  assert.equal(r.choices[0].message.role, 'model');  // --response-role
  assert.ok(r.choices[0].message.reasoning_content === undefined || r.choices[0].message.reasoning_content === null,
            JSON.stringify(r.choices[0].message));
});

test('continue_final_message with add_generation_prompt is vLLM\'s 400', async () => {
  await assert.rejects(
    client.chat.completions.create({ model: MODEL, messages: history, max_tokens: 2, continue_final_message: true }),
    (e) => e.status === 400 && /Cannot set both/.test(e.message) && e.param === 'continue_final_message');
  const r = await request(server.port, 'POST', '/tokenize', JSON.stringify({
    messages: history, continue_final_message: true, add_generation_prompt: true }));
  assert.equal(r.status, 400, r.body);
  const last = await request(server.port, 'POST', '/v1/chat/completions', JSON.stringify({
    model: MODEL, messages: [{ role: 'user', content: 'hi' }], add_generation_prompt: false,
    continue_final_message: true }));
  assert.equal(last.status, 400, last.body);
  assert.match(last.json.error.message, /assistant/);
});

test('render routes give the prompt ids and text without generating', async () => {
  const body = { model: MODEL, messages: history, add_generation_prompt: false, continue_final_message: true };
  const r = await request(server.port, 'POST', '/v1/chat/completions/render', JSON.stringify(body),
                          { 'X-Request-Id': 'render-1' });
  assert.equal(r.status, 200, r.body);
  assert.deepEqual(r.json.token_ids, await tokenize(body));
  assert.ok(r.json.prompt.endsWith('Once upon a time'), r.json.prompt);
  assert.equal(r.json.request_id, 'render-1');
  assert.equal(r.headers['x-request-id'], 'render-1');
  const c = await request(server.port, 'POST', '/v1/completions/render',
                          JSON.stringify({ model: MODEL, prompt: ['hello', [1, 2, 3]] }));
  assert.equal(c.status, 200, c.body);
  assert.equal(c.json.length, 2);
  assert.deepEqual(c.json[0].token_ids, await tokenize({ prompt: 'hello' }));
  assert.equal(c.json[0].prompt, 'hello');
  assert.deepEqual(c.json[1].token_ids, [1, 2, 3]);
  const bad = await request(server.port, 'POST', '/v1/completions/render', JSON.stringify({ prompt: 5 }));
  assert.equal(bad.status, 400, bad.body);
});

test('flags: role, forced usage chunk, token ids in logprobs, X-Request-Id', async () => {
  const stream = await client.chat.completions.create({
    model: MODEL, messages: [{ role: 'user', content: 'hi' }], max_tokens: 3, stream: true,
  });
  let role;
  let usage;
  for await (const chunk of stream) {
    if (chunk.choices.length && chunk.choices[0].delta.role) role = chunk.choices[0].delta.role;
    if (chunk.usage) usage = chunk.usage;
  }
  assert.equal(role, 'model');
  assert.ok(usage && usage.completion_tokens > 0, 'a usage chunk without stream_options');
  const r = await client.chat.completions.create({
    model: MODEL, messages: [{ role: 'user', content: 'hi' }], max_tokens: 3, logprobs: true, top_logprobs: 2,
  });
  for (const entry of r.choices[0].logprobs.content) {
    assert.match(entry.token, /^token_id:\d+$/);
    for (const top of entry.top_logprobs) assert.match(top.token, /^token_id:\d+$/);
  }
  const c = await client.completions.create({ model: MODEL, prompt: 'hi', max_tokens: 2, logprobs: 1 });
  for (const token of c.choices[0].logprobs.tokens) assert.match(token, /^token_id:\d+$/);
  const raw = await request(server.port, 'GET', '/v1/models');
  assert.ok(raw.headers['x-request-id']);
});

function serveDryRun(args) {
  return spawnSync(K3_BIN, ['serve', '--dry-run', ...args], { encoding: 'utf8' });
}

test('flags that cannot apply stop start-up naming why; unknown vLLM flags name themselves', () => {
  const cases = [
    [['--uds', '/tmp/k3.sock'], /--uds .*TCP only/],
    [['--revision', 'main'], /--revision main: .*no revision/],
    [['--api-server-count', '2'], /--api-server-count 2: .*use 1/],
    [['--quantization', 'fp8'], /--quantization fp8: .*only mxfp4/],
    [['--tokenizer', '/nonexistent/tok'], /--tokenizer \/nonexistent\/tok: not a directory/],
    [['--enable-lora'], /--enable-lora is a vLLM serve flag; k3: no equivalent: LoRA/],
    [['--speculative-config', '{}'], /--speculative-config is a vLLM serve flag/],
    [['--no-such-flag-anywhere'], /not a k3 flag/],
  ];
  for (const [args, pattern] of cases) {
    const r = spawnSync(K3_BIN, ['serve', '--dry-run', ...args], { encoding: 'utf8' });
    assert.notEqual(r.status, 0, `${args.join(' ')}: ${r.stdout}${r.stderr}`);
    assert.match(r.stderr, pattern, args.join(' '));
  }
  const ok = serveDryRun(['--quantization', 'mxfp4', '--api-server-count', '1', '--response-role', 'bot',
                          '--enable-request-id-headers', '--return-tokens-as-token-ids', '--max-log-len', '5',
                          '--enable-prompt-tokens-details', '--enable-force-include-usage']);
  assert.equal(ok.status, 0, ok.stderr);
});

test('--tokenizer DIR reads the tokenizer files from DIR; a directory without them stops start-up', async () => {
  const m = server.log().match(/model (\S+) \([^)]*\): /);
  assert.ok(m, server.log());
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'k3-tokenizer-'));
  const empty = fs.mkdtempSync(path.join(os.tmpdir(), 'k3-no-tokenizer-'));
  try {
    for (const f of ['tiktoken.model', 'tokenizer_config.json']) fs.copyFileSync(path.join(m[1], f), path.join(dir, f));
    const other = await startServer(['--tokenizer', dir]);
    try {
      const body = JSON.stringify({ prompt: 'hello <|open|> world' });
      const a = await request(server.port, 'POST', '/tokenize', body);
      const b = await request(other.port, 'POST', '/tokenize', body);
      assert.equal(b.status, 200, b.body);
      assert.deepEqual(b.json.tokens, a.json.tokens);
      assert.ok(other.log().includes(`tokenizer from ${dir}`), other.log());
    } finally {
      const { code } = await other.stop();
      assert.equal(code, 0, other.log());
    }
    const bad = spawn(K3_BIN, ['serve', '--host', '127.0.0.1', '--port', '0', '--tokenizer', empty],
                      { stdio: ['ignore', 'pipe', 'pipe'] });
    let log = '';
    bad.stdout.on('data', (d) => { log += d; });
    bad.stderr.on('data', (d) => { log += d; });
    const code = await new Promise((resolve) => bad.on('exit', (c) => resolve(c)));
    assert.notEqual(code, 0, log);
    assert.match(log, /--tokenizer /, log);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
    fs.rmSync(empty, { recursive: true, force: true });
  }
});
