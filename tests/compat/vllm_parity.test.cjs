// vLLM parity: vLLM's own request fields as a vLLM client sends them (the official SDK passes them
// through its extra-body fields, raw HTTP the rest): guided_json constrains the output like
// response_format json_schema, guided_regex / guided_choice constrain it to a pattern / a choice;
// guided_grammar, prompt_logprobs with stream
// and stream_options without stream are 400s naming the field, never ignored; prompt_logprobs and
// completions' prompt lists with echo + logprobs (lm-eval's loglikelihood requests) are served;
// --served-model-name takes a list; HEAD /health answers like GET. Structured output with `not` /
// `uniqueItems` (a Pydantic-style schema and tests/data/schemas/not_unique_keywords.json, checked with
// ajv or ending in finish_reason "schema_violation"), and stream_options.continuous_usage_stats.
'use strict';
const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const Ajv = require('ajv');
const OpenAI = require('openai');
const { startServer, request, MODEL } = require('./common.cjs');

let server;
let client;
before(async () => {
  // vLLM's list of served names (the suite's own --served-model-name Kimi-K3 comes first).
  // vLLM flags accepted with their meaning here (or as documented no-ops).
  server = await startServer(['--served-model-name', 'Kimi-K3', 'kimi-alias', '--seed', '7', '--max-logprobs', '5',
                              '--enable-chunked-prefill', '--enforce-eager', '--disable-log-stats',
                              '--enable-log-requests', '--root-path', '/k3', '--uvicorn-log-level', 'info',
                              '--kv-cache-dtype', 'auto', '--block-size', '32', '--enable-server-load-tracking',
                              '--disable-fastapi-docs', '--disable-uvicorn-access-log', '--swap-space', '4']);
  client = server.client();
});
after(async () => {
  const { code } = await server.stop();
  assert.equal(code, 0, server.log());
});

const user = [{ role: 'user', content: 'Describe a city.' }];

test('guided_json constrains the reply to the schema (object or JSON text)', async () => {
  const schema = {
    type: 'object',
    properties: { name: { type: 'string' }, size: { type: 'integer' } },
    required: ['name', 'size'],
    additionalProperties: false,
  };
  for (const guided of [schema, JSON.stringify(schema)]) {
    const r = await client.chat.completions.create({
      model: MODEL, messages: user, max_tokens: 200, temperature: 1, seed: 3, guided_json: guided,
      chat_template_kwargs: { thinking: false },
    });
    const text = r.choices[0].message.content;
    assert.equal(r.choices[0].finish_reason, 'stop', text);
    const value = JSON.parse(text);
    assert.deepEqual(Object.keys(value).sort(), ['name', 'size'], text);
    assert.equal(typeof value.name, 'string');
    assert.ok(Number.isInteger(value.size), text);
  }
});

// Structured output with `not` and `uniqueItems` (issue 17): the grammar enforces what it can and the rest
// is checked when the reply ends. So every reply either validates (ajv) and finishes "stop", or breaks
// the schema, finishes "schema_violation" and names the keyword and path in stop_reason; streaming ends
// the same way on its final chunk.
const ajv = new Ajv({ strict: false });
// A finished reply against its schema: valid with "stop", or invalid with "schema_violation" and a
// stop_reason naming the keyword and the path.
function judge(validate, text, finishReason, stopReason) {
  const valid = validate(JSON.parse(text));
  if (finishReason === 'stop') {
    assert.ok(valid, `${text}: ${ajv.errorsText(validate.errors)}`);
    assert.equal(stopReason ?? null, null);
  } else {
    assert.equal(finishReason, 'schema_violation', text);
    assert.ok(!valid, `${text} is valid, yet ${stopReason}`);
    assert.match(stopReason, /^(not|uniqueItems): \//, text);
  }
}
async function checkStructured(schema, seed, extra = {}) {
  const validate = ajv.compile(schema);
  const r = await client.chat.completions.create({
    model: MODEL, messages: [{ role: 'user', content: 'Answer in JSON.' }], max_tokens: 200, temperature: 1, seed,
    chat_template_kwargs: { thinking: false },
    response_format: { type: 'json_schema', json_schema: { name: 'answer', schema } }, ...extra });
  const choice = r.choices[0];
  judge(validate, choice.message.content, choice.finish_reason, choice.stop_reason);
  return choice;
}

test('structured output: a Pydantic-style schema with numeric bounds, not and uniqueItems', async () => {
  const schema = {
    title: 'Listing', type: 'object',
    $defs: { Tag: { title: 'Tag', type: 'string', maxLength: 8 } },
    properties: {
      price: { title: 'Price', type: 'number', exclusiveMinimum: 0, maximum: 1000, multipleOf: 0.25 },
      qty: { title: 'Qty', type: 'integer', minimum: 1, maximum: 20 },
      rating: { title: 'Rating', type: 'integer', minimum: 0, maximum: 5, not: { const: 3 } },
      status: { title: 'Status', enum: ['new', 'used', 'broken'], not: { const: 'broken' } },
      tags: { title: 'Tags', type: 'array', items: { $ref: '#/$defs/Tag' }, uniqueItems: true, maxItems: 4 },
      code: { title: 'Code', type: 'string', maxLength: 6, not: { pattern: '^x' } },
    },
    required: ['price', 'qty', 'rating', 'status', 'tags', 'code'],
    additionalProperties: false,
  };
  for (let seed = 1; seed <= 6; ++seed) {
    const choice = await checkStructured(schema, seed);
    // The grammar itself keeps the enum's excluded value out.
    assert.notEqual(JSON.parse(choice.message.content).status, 'broken');
    // Streamed: the final chunk carries the finish reason (and the violation) of the streamed text.
    const stream = await client.chat.completions.create({
      model: MODEL, messages: [{ role: 'user', content: 'Answer in JSON.' }], max_tokens: 200, temperature: 1,
      seed, chat_template_kwargs: { thinking: false }, stream: true,
      response_format: { type: 'json_schema', json_schema: { name: 'answer', schema } } });
    let text = '';
    let last;
    for await (const chunk of stream) {
      if (chunk.choices.length === 0) continue;
      text += chunk.choices[0].delta.content ?? '';
      last = chunk.choices[0];
    }
    judge(ajv.compile(schema), text, last.finish_reason, last.stop_reason);
  }
});

test('structured output: the not / uniqueItems schema corpus validates with ajv or ends in schema_violation',
     async () => {
  const corpus = JSON.parse(fs.readFileSync(path.join(__dirname, '../data/schemas/not_unique_keywords.json')));
  assert.ok(corpus.length >= 12);
  for (let i = 0; i < corpus.length; ++i) await checkStructured(corpus[i], 100 + i);
  // guided_json takes the same schemas.
  await checkStructured(corpus[1], 7, { response_format: undefined, guided_json: corpus[1] });
});

test('stream_options.continuous_usage_stats: every chunk carries the usage so far', async () => {
  for (const kind of ['chat', 'completions']) {
    const options = { include_usage: true, continuous_usage_stats: true };
    const stream = kind === 'chat'
      ? await client.chat.completions.create({ model: MODEL, messages: user, max_tokens: 12, stream: true,
                                              stream_options: options, chat_template_kwargs: { thinking: false } })
      : await client.completions.create({ model: MODEL, prompt: 'Once upon', max_tokens: 12, stream: true,
                                          stream_options: options });
    let chunks = 0;
    let previous = 0;
    for await (const chunk of stream) {
      ++chunks;
      assert.ok(chunk.usage, `${kind}: ${JSON.stringify(chunk)}`);
      assert.ok(chunk.usage.prompt_tokens > 0);
      assert.ok(chunk.usage.completion_tokens >= previous, JSON.stringify(chunk));
      previous = chunk.usage.completion_tokens;
      assert.equal(chunk.usage.total_tokens, chunk.usage.prompt_tokens + chunk.usage.completion_tokens);
    }
    assert.ok(chunks >= 3, kind);
    assert.ok(previous > 0 && previous <= 12, `${kind}: ${previous}`);
  }
});

test('guided_regex and guided_choice (and structured_outputs.regex / .choice) constrain the reply', async () => {
  const ask = (extra) => client.chat.completions.create({ model: MODEL, messages: user, max_tokens: 60,
                                                         temperature: 1, chat_template_kwargs: { thinking: false },
                                                         ...extra });
  for (let seed = 1; seed <= 3; ++seed) {
    const r = await ask({ seed, guided_regex: '[a-z]{3,8}-[0-9]{2}' });
    assert.match(r.choices[0].message.content, /^[a-z]{3,8}-[0-9]{2}$/);
    const c = await ask({ seed, guided_choice: ['yes', 'no', 'maybe so'] });
    assert.ok(['yes', 'no', 'maybe so'].includes(c.choices[0].message.content), c.choices[0].message.content);
  }
  const s = await ask({ seed: 5, structured_outputs: { regex: '(red|green|blue)!' } });
  assert.match(s.choices[0].message.content, /^(red|green|blue)!$/);
  const t = await ask({ seed: 5, structured_outputs: { choice: ['A', 'B'] } });
  assert.ok(['A', 'B'].includes(t.choices[0].message.content));
});

test('vLLM fields this server does not implement are 400s naming them', async () => {
  const cases = [
    [{ guided_grammar: 'root ::= "a"' }, 'guided_grammar'],
    [{ structured_outputs: { grammar: 'root ::= "a"' } }, 'structured_outputs.grammar'],
    [{ guided_regex: '(?=a)b' }, 'guided_regex'],
    [{ guided_choice: [] }, 'guided_choice'],
    [{ prompt_logprobs: 1, stream: true }, 'prompt_logprobs'],
    [{ stream_options: { include_usage: true } }, 'stream_options'],
  ];
  for (const [fields, param] of cases) {
    const r = await request(server.port, 'POST', '/v1/chat/completions',
                            JSON.stringify({ model: MODEL, messages: user, max_tokens: 4, ...fields }));
    assert.equal(r.status, 400, r.body);
    assert.equal(r.json.error.param, param, r.body);
    assert.ok(r.json.error.message.startsWith(`${param}: `), r.body);
  }
  // The SDK sees the same 400.
  await assert.rejects(client.chat.completions.create({ model: MODEL, messages: user, guided_grammar: 'x' }),
                       (e) => e instanceof OpenAI.BadRequestError && /guided_grammar/.test(e.message));
  // Completions take no output constraint: guided_json there is refused, not ignored.
  const c = await request(server.port, 'POST', '/v1/completions',
                          JSON.stringify({ model: MODEL, prompt: 'x', guided_json: { type: 'object' } }));
  assert.equal(c.status, 400, c.body);
  assert.equal(c.json.error.param, 'guided_json');
});

test('completions: a batch of token-id prompts with echo + logprobs (lm-eval loglikelihood)', async () => {
  const tok = await request(server.port, 'POST', '/tokenize', JSON.stringify({ model: MODEL, prompt: 'The city of' }));
  const ids = tok.json.tokens;
  assert.ok(ids.length >= 3, tok.body);
  // Greedy next token after the prompt, with its logprob.
  const next = await client.completions.create({ model: MODEL, prompt: ids, max_tokens: 1, temperature: 0,
                                                 logprobs: 1 });
  const g = next.choices[0].logprobs;
  const nextId = (await request(server.port, 'POST', '/tokenize',
                                JSON.stringify({ model: MODEL, prompt: next.choices[0].text }))).json.tokens;
  // The batch: the prompt, and the prompt + that token (its echoed logprob is the one just sampled).
  const batch = [ids, ids.concat(nextId)];
  const r = await client.completions.create({ model: MODEL, prompt: batch, max_tokens: 1, temperature: 0,
                                              echo: true, logprobs: 1 });
  assert.equal(r.choices.length, 2);
  assert.deepEqual(r.choices.map((c) => c.index), [0, 1]);
  for (const [i, choice] of r.choices.entries()) {
    const lp = choice.logprobs;
    assert.equal(lp.tokens.length, batch[i].length + 1, JSON.stringify(lp));
    assert.equal(lp.token_logprobs[0], null);
    assert.equal(lp.top_logprobs[0], null);
    for (const v of lp.token_logprobs.slice(1)) assert.ok(typeof v === 'number' && v <= 0, JSON.stringify(lp));
    assert.deepEqual(lp.text_offset, [...lp.text_offset].sort((a, b) => a - b));
  }
  const echoed = r.choices[1].logprobs.token_logprobs[batch[1].length - 1];
  if (nextId.length === 1) assert.ok(Math.abs(echoed - g.token_logprobs[0]) < 1e-3, `${echoed} vs ${g.token_logprobs[0]}`);
  assert.equal(r.usage.prompt_tokens, batch[0].length + batch[1].length);
  assert.equal(r.usage.completion_tokens, 2);
  // vLLM's prompt_logprobs: per choice on completions, at the top level on chat.
  const p = await request(server.port, 'POST', '/v1/completions',
                          JSON.stringify({ model: MODEL, prompt: ids, max_tokens: 1, prompt_logprobs: 2 }));
  assert.equal(p.status, 200, p.body);
  const entries = p.json.choices[0].prompt_logprobs;
  assert.equal(entries.length, ids.length);
  assert.equal(entries[0], null);
  const second = entries[1][String(ids[1])];
  assert.ok(second && second.rank >= 1 && typeof second.decoded_token === 'string', JSON.stringify(entries[1]));
  assert.ok(Math.abs(second.logprob - r.choices[0].logprobs.token_logprobs[1]) < 1e-4);
  const chat = await request(server.port, 'POST', '/v1/chat/completions',
                             JSON.stringify({ model: MODEL, messages: user, max_tokens: 1, prompt_logprobs: 0 }));
  assert.equal(chat.status, 200, chat.body);
  assert.equal(chat.json.prompt_logprobs.length, chat.json.usage.prompt_tokens);
  assert.equal(Object.keys(chat.json.prompt_logprobs[1]).length, 1);  // k = 0: the prompt token only
});

test('--served-model-name takes several names: each is accepted and listed', async () => {
  const r = await client.chat.completions.create({ model: 'kimi-alias', messages: user, max_tokens: 3 });
  assert.equal(r.model, 'kimi-alias');
  const models = await client.models.list();
  assert.deepEqual(models.data.map((m) => m.id), ['Kimi-K3', 'kimi-alias']);
  await assert.rejects(client.chat.completions.create({ model: 'kimi-k2', messages: user, max_tokens: 3 }),
                       (e) => e instanceof OpenAI.NotFoundError && /kimi-alias/.test(e.message));
});

test('vLLM flags: --max-logprobs caps top_logprobs, --enable-log-requests logs a line per request', async () => {
  const ok = await client.chat.completions.create({ model: MODEL, messages: user, max_tokens: 2, logprobs: true,
                                                    top_logprobs: 5 });
  assert.equal(ok.choices[0].logprobs.content[0].top_logprobs.length, 5);
  await assert.rejects(client.chat.completions.create({ model: MODEL, messages: user, max_tokens: 2, logprobs: true,
                                                        top_logprobs: 6 }),
                       (e) => e instanceof OpenAI.BadRequestError && /top_logprobs/.test(e.message));
  assert.match(server.log(), /request [^ ]+: chat, model Kimi-K3, \d+ prompt tokens, max_tokens 2/);
  assert.ok(!server.log().includes('Describe a city'), 'prompt text never logged');
  // Values this engine cannot honour are refused at start-up, naming the flag.
  const { spawnSync } = require('node:child_process');
  for (const flags of [['--kv-cache-dtype', 'bfloat16'], ['--dtype', 'bfloat16'], ['--dtype', 'auto']]) {
    const r = spawnSync(process.env.K3_REAL_BIN || process.env.K3_BIN, ['serve', ...flags, '--dry-run'],
                        { encoding: 'utf8' });
    assert.equal(r.status, 0, `${flags.join(' ')}: ${r.stderr}`);
  }
  for (const [flags, says] of [[['--kv-cache-dtype', 'fp8_e4m3'], '--kv-cache-dtype fp8_e4m3'],
                               [['--dtype', 'float16'], '--dtype float16'],
                               [['--no-enable-chunked-prefill'], 'always chunked'],
                               [['--uvicorn-log-level', 'loud'], '--uvicorn-log-level loud']]) {
    const r = spawnSync(process.env.K3_REAL_BIN || process.env.K3_BIN, ['serve', ...flags, '--dry-run'],
                        { encoding: 'utf8' });
    assert.notEqual(r.status, 0, flags.join(' '));
    assert.ok((r.stderr + r.stdout).includes(says), r.stderr);
  }
});

test('vLLM routes: /invocations, /reset_prefix_cache, /server_info, /load, /openapi.json; others 404 naming them', async () => {
  const chat = await request(server.port, 'POST', '/invocations',
                             JSON.stringify({ model: MODEL, messages: user, max_tokens: 3 }));
  assert.equal(chat.status, 200, chat.body);
  assert.equal(chat.json.object, 'chat.completion');
  const completion = await request(server.port, 'POST', '/invocations',
                                   JSON.stringify({ model: MODEL, prompt: 'abc', max_tokens: 3 }));
  assert.equal(completion.status, 200, completion.body);
  assert.equal(completion.json.object, 'text_completion');
  const embedding = await request(server.port, 'POST', '/invocations', JSON.stringify({ input: 'x' }));
  assert.equal(embedding.status, 200, embedding.body);  // an `input` body is an embedding request
  assert.equal(embedding.json.object, 'list');
  const neither = await request(server.port, 'POST', '/invocations', JSON.stringify({ text: 'x' }));
  assert.equal(neither.status, 400, neither.body);

  // The prefix cache serves a repeated prompt until it is reset.
  const long = [{ role: 'user', content: 'A long and detailed question about cities, rivers and bridges.' }];
  const ask = () => client.chat.completions.create({ model: MODEL, messages: long, max_tokens: 2 });
  await ask();
  assert.ok((await ask()).usage.prompt_tokens_details.cached_tokens > 0);
  const reset = await request(server.port, 'POST', '/reset_prefix_cache', '');
  assert.equal(reset.status, 200, reset.body);
  assert.ok(reset.json.dropped_snapshots >= 1, reset.body);
  assert.equal((await ask()).usage.prompt_tokens_details.cached_tokens, 0);

  const info = await request(server.port, 'GET', '/server_info');
  assert.equal(info.status, 200);
  assert.deepEqual(info.json.served_model_names, ['Kimi-K3', 'kimi-alias']);
  assert.ok(info.json.max_model_len > 0 && info.json.max_num_seqs > 0, info.body);
  assert.equal(info.json.block_size, 32);  // --block-size
  const load = await request(server.port, 'GET', '/load');
  assert.equal(load.status, 200);
  assert.equal(load.json.server_load, 0);

  // Every route the OpenAPI document lists is answered (not a 404).
  const doc = await request(server.port, 'GET', '/openapi.json');
  assert.equal(doc.status, 200);
  assert.equal(doc.json.openapi, '3.1.0');
  const paths = Object.keys(doc.json.paths);
  assert.ok(paths.includes('/v1/chat/completions') && paths.includes('/invocations') &&
            paths.includes('/v1/responses'), paths.join(' '));
  for (const path of paths) {
    if (path === '/sleep') continue;  // (sleep mode has its own test)
    for (const method of Object.keys(doc.json.paths[path])) {
      const r = await request(server.port, method.toUpperCase(), path, method === 'post' ? '{}' : undefined);
      assert.notEqual(r.status, 404, `${method} ${path}: ${r.body}`);
      assert.notEqual(r.status, 405, `${method} ${path}: ${r.body}`);
    }
  }
  // vLLM routes not provided: a 404 that says so and why.
  for (const path of ['/v1/load_lora_adapter', '/pooling']) {
    const r = await request(server.port, 'POST', path, '{}');
    assert.equal(r.status, 404, r.body);
    assert.match(r.json.error.message, new RegExp(`^${path.replace(/\//g, '\\/')} is not supported by this server: `));
  }
  const unknown = await request(server.port, 'GET', '/no/such/route');
  assert.equal(unknown.status, 404);
  assert.match(unknown.json.error.message, /no route/);
});

test('special tokens: skipped by default (skip_special_tokens), named with spaces when asked', async () => {
  const tok = await request(server.port, 'POST', '/tokenize', JSON.stringify({ model: MODEL, prompt: '<|media_begin|>' }));
  assert.equal(tok.json.tokens.length, 1, tok.body);
  const media = tok.json.tokens[0];
  const forced = { model: MODEL, prompt: 'abc', max_tokens: 3, temperature: 0, logit_bias: { [media]: 100 } };
  const skipped = await client.completions.create(forced);
  assert.equal(skipped.choices[0].text, '');
  assert.equal(skipped.usage.completion_tokens, 3);
  const named = await client.completions.create({ ...forced, skip_special_tokens: false });
  assert.equal(named.choices[0].text, '<|media_begin|> <|media_begin|> <|media_begin|>');
  const joined = await client.completions.create({ ...forced, skip_special_tokens: false,
                                                   spaces_between_special_tokens: false });
  assert.equal(joined.choices[0].text, '<|media_begin|>'.repeat(3));
  // Chat: no special's name leaks into content; the XTML markup still reaches the parser.
  const chat = await client.chat.completions.create({ model: MODEL, messages: user, max_tokens: 3, temperature: 0,
                                                      logit_bias: { [media]: 100 },
                                                      chat_template_kwargs: { thinking: false } });
  assert.ok(!chat.choices[0].message.content.includes('<|'), chat.choices[0].message.content);
  const bad = await request(server.port, 'POST', '/v1/completions',
                            JSON.stringify({ ...forced, skip_special_tokens: 'yes' }));
  assert.equal(bad.status, 400);
  assert.equal(bad.json.error.param, 'skip_special_tokens');
});

test('ignore_eos in chat: all max_tokens are generated and their text is content', async () => {
  const ask = (extra) => client.chat.completions.create({ model: MODEL, messages: user, max_tokens: 40,
                                                         temperature: 0, chat_template_kwargs: { thinking: false },
                                                         ...extra });
  const normal = await ask({});
  const ignoring = await ask({ ignore_eos: true });
  assert.equal(ignoring.usage.completion_tokens, 40);
  assert.equal(ignoring.choices[0].finish_reason, 'length');
  assert.ok(ignoring.choices[0].message.content.startsWith(normal.choices[0].message.content),
            `${JSON.stringify(normal.choices[0].message.content)} vs ${JSON.stringify(ignoring.choices[0].message.content)}`);
  if (normal.usage.completion_tokens < 40) {
    assert.ok(ignoring.choices[0].message.content.length > normal.choices[0].message.content.length);
  }
});

test('generation config: --override-generation-config sets the defaults; --chat-template takes the XTML one only',
     async () => {
  const fs = require('node:fs');
  const os = require('node:os');
  const path = require('node:path');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'k3-gencfg-'));
  fs.writeFileSync(path.join(dir, 'generation_config.json'), JSON.stringify({ temperature: 0, max_new_tokens: 5 }));
  const xtml = path.join(dir, 'chat_template.jinja');
  fs.writeFileSync(xtml, '{% for m in messages %}<|open|>{{ m.role }}<|sep|>{{ m.content }}<|close|>{{ m.role }}<|sep|>{% endfor %}');
  const other = path.join(dir, 'other.jinja');
  fs.writeFileSync(other, '{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>{% endfor %}');
  const second = await startServer(['--generation-config', dir, '--override-generation-config', '{"top_k": 3}',
                                    '--chat-template', xtml, '--chat-template-content-format', 'openai']);
  try {
    const c = second.client();
    const ask = (extra) => c.chat.completions.create({ model: MODEL, messages: user, ...extra });
    const a = await ask({});
    assert.equal(a.usage.completion_tokens, 5, JSON.stringify(a.usage));  // max_new_tokens
    assert.equal(a.choices[0].finish_reason, 'length');
    assert.deepEqual((await ask({})).choices[0].message, a.choices[0].message);  // temperature 0: greedy
    assert.equal((await ask({ max_tokens: 2 })).usage.completion_tokens, 2);  // the request's own field wins
    assert.match(second.log(), /default sampling parameters from the generation config: temperature=0, top_k=3, max_tokens=5/);
  } finally {
    const { code } = await second.stop();
    assert.equal(code, 0);
  }
  const { spawnSync } = require('node:child_process');
  for (const [flags, says] of [[['--chat-template', other], 'is not the Kimi K3 XTML template'],
                               [['--chat-template', '/no/such/template.jinja'], 'no such file'],
                               [['--override-generation-config', '{"temperature": "hot"}'], 'temperature must be'],
                               [['--override-generation-config', 'nope'], 'not valid JSON'],
                               [['--generation-config', os.tmpdir()], 'no generation_config.json']]) {
    const r = spawnSync(process.env.K3_REAL_BIN || process.env.K3_BIN, ['serve', ...flags, '--dry-run'],
                        { encoding: 'utf8' });
    assert.notEqual(r.status, 0, flags.join(' '));
    assert.ok((r.stderr + r.stdout).includes(says), r.stderr);
  }
  fs.rmSync(dir, { recursive: true, force: true });
});

test('sleep mode: /sleep refuses new requests and frees the cache, /wake_up serves again', async () => {
  assert.deepEqual((await request(server.port, 'GET', '/is_sleeping')).json, { is_sleeping: false });
  const slept = await request(server.port, 'POST', '/sleep?level=1', '');
  assert.equal(slept.status, 200, slept.body);
  assert.deepEqual((await request(server.port, 'GET', '/is_sleeping')).json, { is_sleeping: true });
  const refused = await request(server.port, 'POST', '/v1/chat/completions',
                                JSON.stringify({ model: MODEL, messages: user, max_tokens: 2 }));
  assert.equal(refused.status, 503, refused.body);
  assert.match(refused.json.error.message, /sleeping/);
  const woke = await request(server.port, 'POST', '/wake_up', '');
  assert.equal(woke.status, 200);
  assert.deepEqual((await request(server.port, 'GET', '/is_sleeping')).json, { is_sleeping: false });
  const r = await client.chat.completions.create({ model: MODEL, messages: user, max_tokens: 2 });
  assert.equal(r.usage.completion_tokens, 2);
});

test('HEAD /health and /v1/models answer like GET without a body', async () => {
  for (const path of ['/health', '/v1/models']) {
    const head = await request(server.port, 'HEAD', path);
    const get = await request(server.port, 'GET', path);
    assert.equal(head.status, 200);
    assert.equal(head.body, '');
    assert.equal(head.headers['content-length'], String(Buffer.byteLength(get.body)));
  }
});
