// Anthropic's Messages API (POST /v1/messages, /v1/messages/count_tokens) through the official
// @anthropic-ai/sdk: a message, a stream whose events come in Anthropic's order and add up to the same
// message, tool use forced with tool_choice {type: tool} and its follow-up with a tool_result, count_tokens
// equal to the message's input_tokens, an image block, errors in Anthropic's shape (the SDK's typed
// errors), and x-api-key / Bearer auth against --api-key.
'use strict';
const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const Anthropic = require('@anthropic-ai/sdk');
const { startServer, request, png, MODEL } = require('./common.cjs');

const KEY = 'sk-anthropic-compat';
let server;
let client;
before(async () => {
  server = await startServer(['--api-key', KEY]);
  client = new Anthropic({ baseURL: `http://127.0.0.1:${server.port}`, apiKey: KEY, maxRetries: 0,
                           timeout: 120000 });
});
after(async () => {
  const { code } = await server.stop();
  assert.equal(code, 0, server.log());
});

const NO_THINKING = { type: 'disabled' };

test('a message: text block, stop_reason, usage, ids', async () => {
  const m = await client.messages.create({ model: MODEL, max_tokens: 12, temperature: 0, thinking: NO_THINKING,
                                           system: 'You are terse.',
                                           messages: [{ role: 'user', content: 'Describe a city.' }] });
  assert.equal(m.type, 'message');
  assert.match(m.id, /^msg_/);
  assert.equal(m.role, 'assistant');
  assert.equal(m.model, MODEL);
  assert.ok(m.content.length >= 1, JSON.stringify(m));
  assert.equal(m.content[0].type, 'text');
  assert.ok(['end_turn', 'max_tokens'].includes(m.stop_reason), m.stop_reason);
  assert.equal(m.stop_sequence, null);
  assert.ok(m.usage.input_tokens > 0);
  assert.ok(m.usage.output_tokens >= 1 && m.usage.output_tokens <= 12);
  if (m.stop_reason === 'max_tokens') assert.equal(m.usage.output_tokens, 12);
  // The same request as chat gives the same text (the Messages route is the chat route underneath).
  const chat = await request(server.port, 'POST', '/v1/chat/completions', JSON.stringify({
    model: MODEL, max_tokens: 12, temperature: 0, chat_template_kwargs: { thinking: false },
    messages: [{ role: 'system', content: 'You are terse.' }, { role: 'user', content: 'Describe a city.' }] }),
  { Authorization: `Bearer ${KEY}` });
  assert.equal(chat.status, 200, chat.body);
  assert.equal(m.content[0].text, chat.json.choices[0].message.content);
  assert.equal(m.usage.input_tokens, chat.json.usage.prompt_tokens);
});

test('streaming: events in Anthropic order that add up to the message', async () => {
  const params = { model: MODEL, max_tokens: 24, temperature: 0,
                   messages: [{ role: 'user', content: 'Describe a river.' }] };
  const whole = await client.messages.create(params);
  const stream = await client.messages.create({ ...params, stream: true });
  const events = [];
  for await (const event of stream) events.push(event);
  const types = events.map((e) => e.type);
  assert.equal(types[0], 'message_start');
  assert.equal(types[types.length - 1], 'message_stop');
  assert.equal(types[types.length - 2], 'message_delta');
  assert.equal(events[0].message.usage.input_tokens, whole.usage.input_tokens);
  assert.deepEqual(events[0].message.content, []);
  // Blocks open, take deltas and close in index order, one at a time.
  const blocks = [];
  let open = null;
  for (const e of events.slice(1, -2)) {
    if (e.type === 'content_block_start') {
      assert.equal(open, null, 'a block starts while another is open');
      assert.equal(e.index, blocks.length);
      open = { ...e.content_block };
      if (open.type === 'text') open.text = '';
      if (open.type === 'thinking') open.thinking = '';
    } else if (e.type === 'content_block_delta') {
      assert.equal(e.index, blocks.length);
      if (e.delta.type === 'text_delta') open.text += e.delta.text;
      else if (e.delta.type === 'thinking_delta') open.thinking += e.delta.thinking;
      else if (e.delta.type === 'signature_delta') open.signature = e.delta.signature;
      else assert.fail(`unexpected delta ${e.delta.type}`);
    } else if (e.type === 'content_block_stop') {
      assert.equal(e.index, blocks.length);
      blocks.push(open);
      open = null;
    } else {
      assert.fail(`unexpected event ${e.type}`);
    }
  }
  assert.equal(open, null);
  const delta = events[events.length - 2];
  assert.equal(delta.delta.stop_reason, whole.stop_reason);
  assert.equal(delta.usage.output_tokens, whole.usage.output_tokens);
  // Same request, same output (temperature 0); the signature is not compared (ids differ).
  const strip = (content) => content.map(({ signature, ...rest }) => rest);
  assert.deepEqual(strip(blocks), strip(whole.content));
  // The SDK's stream helper accumulates the same message.
  const final = await client.messages.stream(params).finalMessage();
  assert.deepEqual(strip(final.content), strip(whole.content));
  assert.equal(final.stop_reason, whole.stop_reason);
});

test('tool use forced with tool_choice {type: tool}, then the tool_result turn', async () => {
  const tools = [{ name: 'get_weather', description: 'Weather in a city',
                   input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'],
                                   additionalProperties: false } }];
  const question = { role: 'user', content: 'Weather in Paris?' };
  const m = await client.messages.create({ model: MODEL, max_tokens: 200, temperature: 0, thinking: NO_THINKING, tools,
                                           tool_choice: { type: 'tool', name: 'get_weather' },
                                           messages: [question] });
  assert.equal(m.stop_reason, 'tool_use', JSON.stringify(m));
  const use = m.content.find((block) => block.type === 'tool_use');
  assert.ok(use, JSON.stringify(m.content));
  assert.equal(use.name, 'get_weather');
  assert.match(use.id, /^toolu_/);
  assert.equal(typeof use.input.city, 'string');
  // Streamed: the tool_use block's input comes as input_json_delta.
  const events = [];
  const stream = await client.messages.create({ model: MODEL, max_tokens: 200, temperature: 0, thinking: NO_THINKING, tools,
                                                tool_choice: { type: 'tool', name: 'get_weather' },
                                                messages: [question], stream: true });
  for await (const event of stream) events.push(event);
  const start = events.find((e) => e.type === 'content_block_start' && e.content_block.type === 'tool_use');
  assert.ok(start, JSON.stringify(events));
  const json = events.filter((e) => e.type === 'content_block_delta' && e.index === start.index)
    .map((e) => { assert.equal(e.delta.type, 'input_json_delta'); return e.delta.partial_json; }).join('');
  assert.deepEqual(JSON.parse(json), use.input);
  assert.equal(events.find((e) => e.type === 'message_delta').delta.stop_reason, 'tool_use');
  // tool_choice any forces a call too.
  const any = await client.messages.create({ model: MODEL, max_tokens: 200, thinking: NO_THINKING, tools,
                                             tool_choice: { type: 'any' }, messages: [question] });
  assert.equal(any.stop_reason, 'tool_use');
  // The follow-up: tool_use in the assistant turn, tool_result (string and blocks) in the user turn.
  for (const content of ['{"temp": 21}', [{ type: 'text', text: '{"temp": 21}' }]]) {
    const next = await client.messages.create({
      model: MODEL, max_tokens: 5, tools,
      messages: [question, { role: 'assistant', content: m.content },
                 { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content }] }],
    });
    assert.ok(['end_turn', 'max_tokens', 'tool_use'].includes(next.stop_reason), next.stop_reason);
  }
});

test('stop_sequences end the message with stop_reason stop_sequence', async () => {
  const base = { model: MODEL, max_tokens: 24, temperature: 0, thinking: NO_THINKING,
                 messages: [{ role: 'user', content: 'Describe a river.' }] };
  const whole = await client.messages.create(base);
  const text = whole.content[0].text;
  const cut = text.trim().slice(4, 6);  // a piece the reply contains
  assert.equal(cut.length, 2, `a reply too short to cut: ${JSON.stringify(text)}`);
  const m = await client.messages.create({ ...base, stop_sequences: [cut] });
  assert.equal(m.stop_reason, 'stop_sequence', JSON.stringify(m));
  assert.equal(m.stop_sequence, cut);
  assert.ok(!m.content.length || !m.content[0].text.includes(cut));
});

test('count_tokens equals the message\'s input_tokens', async () => {
  const params = { model: MODEL, system: [{ type: 'text', text: 'Be brief.' }],
                   messages: [{ role: 'user', content: 'What is a river?' }],
                   tools: [{ name: 'f', input_schema: { type: 'object' } }] };
  const counted = await client.messages.countTokens(params);
  assert.ok(counted.input_tokens > 0);
  const m = await client.messages.create({ ...params, max_tokens: 2 });
  assert.equal(counted.input_tokens, m.usage.input_tokens);
});

test('an image block (base64 source) is read as the chat path reads a data: URL', async () => {
  const data = png(48, 40, 7).toString('base64');
  const content = [{ type: 'text', text: 'What is in this picture?' },
                   { type: 'image', source: { type: 'base64', media_type: 'image/png', data } }];
  const m = await client.messages.create({ model: MODEL, max_tokens: 4, thinking: NO_THINKING,
                                           messages: [{ role: 'user', content }] });
  assert.ok(m.usage.output_tokens >= 1);
  const chat = await request(server.port, 'POST', '/v1/chat/completions', JSON.stringify({
    model: MODEL, max_tokens: 1, chat_template_kwargs: { thinking: false },
    messages: [{ role: 'user', content: [{ type: 'text', text: 'What is in this picture?' },
                                         { type: 'image_url', image_url: { url: `data:image/png;base64,${data}` } }] }] }),
  { Authorization: `Bearer ${KEY}` });
  assert.equal(chat.status, 200, chat.body);
  assert.equal(m.usage.input_tokens, chat.json.usage.prompt_tokens);
  const counted = await client.messages.countTokens({ model: MODEL, thinking: NO_THINKING,
                                                      messages: [{ role: 'user', content }] });
  assert.equal(counted.input_tokens, m.usage.input_tokens);
  // A URL source outside --allowed-media-domains is a 400, never fetched.
  await assert.rejects(client.messages.create({
    model: MODEL, max_tokens: 4,
    messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'url', url: 'https://example.com/a.png' } }] }],
  }), Anthropic.BadRequestError);
});

test('errors have Anthropic\'s shape and the SDK\'s typed errors', async () => {
  const cases = [
    [{ model: MODEL, messages: [{ role: 'user', content: 'x' }] }, 'max_tokens'],
    [{ model: MODEL, max_tokens: 4, messages: [] }, 'messages'],
    [{ model: MODEL, max_tokens: 4, messages: [{ role: 'user', content: [{ type: 'document', source: {} }] }] },
     'messages[0].content[0].type'],
    [{ model: MODEL, max_tokens: 4, messages: [{ role: 'user', content: 'x' }],
       tools: [{ type: 'web_search_20250305', name: 'web_search' }] }, 'tools[0].type'],
    [{ model: MODEL, max_tokens: 4, messages: [{ role: 'user', content: 'x' }], temperature: 'hot' }, 'temperature'],
    [{ model: MODEL, max_tokens: 1e9, messages: [{ role: 'user', content: 'x' }] }, 'max_tokens'],
  ];
  for (const [body, field] of cases) {
    await assert.rejects(client.messages.create(body), (err) => {
      assert.ok(err instanceof Anthropic.BadRequestError, `${JSON.stringify(body)}: ${err}`);
      assert.equal(err.status, 400);
      assert.equal(err.error.type, 'error');
      assert.equal(err.error.error.type, 'invalid_request_error');
      assert.ok(err.error.error.message.includes(field), `${field}: ${err.error.error.message}`);
      return true;
    });
  }
  await assert.rejects(client.messages.create({ model: 'other', max_tokens: 4,
                                                messages: [{ role: 'user', content: 'x' }] }),
                       (err) => err instanceof Anthropic.NotFoundError && err.error.error.type === 'not_found_error');
  const raw = await request(server.port, 'POST', '/v1/messages', '{not json', { 'x-api-key': KEY });
  assert.equal(raw.status, 400);
  assert.equal(raw.json.type, 'error');
  assert.equal(raw.json.error.type, 'invalid_request_error');
  const count = await request(server.port, 'POST', '/v1/messages/count_tokens',
                              JSON.stringify({ model: MODEL, messages: 5 }), { 'x-api-key': KEY });
  assert.equal(count.status, 400);
  assert.equal(count.json.type, 'error');
  // Other routes keep OpenAI's shape.
  const chat = await request(server.port, 'POST', '/v1/chat/completions', '{not json', { 'x-api-key': KEY });
  assert.equal(chat.status, 400);
  assert.equal(typeof chat.json.error.message, 'string');
  assert.equal(chat.json.type, undefined);
});

test('auth: x-api-key or Bearer against --api-key; a wrong key is an authentication_error', async () => {
  const bearer = new Anthropic({ baseURL: `http://127.0.0.1:${server.port}`, apiKey: null, authToken: KEY,
                                 maxRetries: 0 });
  const m = await bearer.messages.create({ model: MODEL, max_tokens: 2, messages: [{ role: 'user', content: 'x' }] });
  assert.equal(m.type, 'message');
  const wrong = new Anthropic({ baseURL: `http://127.0.0.1:${server.port}`, apiKey: 'sk-wrong', maxRetries: 0 });
  await assert.rejects(wrong.messages.create({ model: MODEL, max_tokens: 2, messages: [{ role: 'user', content: 'x' }] }),
                       (err) => err instanceof Anthropic.AuthenticationError && err.status === 401 &&
                                err.error.type === 'error' && err.error.error.type === 'authentication_error');
  const none = await request(server.port, 'POST', '/v1/messages/count_tokens',
                             JSON.stringify({ model: MODEL, messages: [{ role: 'user', content: 'x' }] }));
  assert.equal(none.status, 401);
  assert.equal(none.json.error.type, 'authentication_error');
});
