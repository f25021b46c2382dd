// The Responses API (POST /v1/responses) through the official SDK: text, reasoning on / off, streaming
// typed events that add up to the final object, function calls (forced with tool_choice) and their
// follow-up, text.format json_schema, and the fields that are refused with a 400 naming them.
'use strict';
const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const OpenAI = require('openai');
const { startServer, request, MODEL } = require('./common.cjs');

let server;
let client;
before(async () => {
  server = await startServer([]);
  client = server.client();
});
after(async () => {
  const { code } = await server.stop();
  assert.equal(code, 0, server.log());
});

test('text in, a message item out (reasoning off), usage counted', async () => {
  const r = await client.responses.create({ model: MODEL, input: 'Describe a city.', max_output_tokens: 12,
                                            temperature: 0, reasoning: { effort: 'none' } });
  assert.equal(r.object, 'response');
  assert.match(r.id, /^resp_/);
  assert.ok(['completed', 'incomplete'].includes(r.status));
  assert.equal(r.model, MODEL);
  const message = r.output.find((item) => item.type === 'message');
  assert.ok(message, JSON.stringify(r.output));
  assert.equal(message.role, 'assistant');
  assert.equal(message.content[0].type, 'output_text');
  assert.equal(r.output_text, message.content[0].text);  // the SDK's convenience field
  assert.ok(r.output.every((item) => item.type !== 'reasoning'));
  assert.ok(r.usage.input_tokens > 0);
  assert.ok(r.usage.output_tokens >= 1 && r.usage.output_tokens <= 12);
  assert.equal(r.usage.total_tokens, r.usage.input_tokens + r.usage.output_tokens);
  if (r.status === 'incomplete') assert.equal(r.incomplete_details.reason, 'max_output_tokens');
  // The same request as chat gives the same text (the Responses route is the chat route underneath).
  const chat = await client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'Describe a city.' }],
                                                      max_tokens: 12, temperature: 0,
                                                      chat_template_kwargs: { thinking: false } });
  assert.equal(r.output_text, chat.choices[0].message.content);
});

test('streaming: typed events in sequence whose deltas add up to the final response', async () => {
  const stream = await client.responses.create({ model: MODEL, input: 'Describe a river.', max_output_tokens: 24,
                                                 temperature: 0, stream: true });
  const events = [];
  for await (const event of stream) events.push(event);
  assert.equal(events[0].type, 'response.created');
  assert.equal(events[1].type, 'response.in_progress');
  events.forEach((e, i) => assert.equal(e.sequence_number, i));
  const last = events[events.length - 1];
  assert.ok(['response.completed', 'response.incomplete'].includes(last.type), last.type);
  const final = last.response;
  const deltas = {};
  for (const e of events) {
    if (e.type === 'response.output_text.delta' || e.type === 'response.reasoning_text.delta')
      deltas[e.item_id] = (deltas[e.item_id] || '') + e.delta;
  }
  for (const item of final.output) {
    if (item.type === 'message') assert.equal(deltas[item.id] || '', item.content[0].text);
    if (item.type === 'reasoning') assert.equal(deltas[item.id] || '', item.content[0].text);
  }
  const added = events.filter((e) => e.type === 'response.output_item.added').length;
  const done = events.filter((e) => e.type === 'response.output_item.done').length;
  assert.equal(added, final.output.length);
  assert.equal(done, final.output.length);
  assert.ok(final.usage.output_tokens >= 1 && final.usage.output_tokens <= 24);
  if (final.status === 'incomplete') assert.equal(final.usage.output_tokens, 24);
});

test('function calls: forced by tool_choice, valid arguments, and the follow-up turn', async () => {
  const tools = [{ type: 'function', name: 'get_weather', description: 'Weather in a city',
                   parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'],
                                 additionalProperties: false } }];
  const r = await client.responses.create({ model: MODEL, input: 'Weather in Paris?', tools, max_output_tokens: 200,
                                            tool_choice: { type: 'function', name: 'get_weather' },
                                            reasoning: { effort: 'none' } });
  const call = r.output.find((item) => item.type === 'function_call');
  assert.ok(call, JSON.stringify(r.output));
  assert.equal(call.name, 'get_weather');
  assert.match(call.call_id, /^call_/);
  assert.equal(typeof JSON.parse(call.arguments).city, 'string');
  const next = await client.responses.create({
    model: MODEL, tools, max_output_tokens: 5,
    input: [{ role: 'user', content: 'Weather in Paris?' }, call,
            { type: 'function_call_output', call_id: call.call_id, output: '{"temp": 21}' }],
  });
  assert.ok(['completed', 'incomplete'].includes(next.status));
});

test('text.format json_schema constrains the output text', async () => {
  const r = await client.responses.create({
    model: MODEL, input: 'A city as JSON.', max_output_tokens: 200, reasoning: { effort: 'none' },
    text: { format: { type: 'json_schema', name: 'city', strict: true,
                      schema: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'],
                                additionalProperties: false } } },
  });
  assert.equal(r.status, 'completed', JSON.stringify(r));
  assert.equal(typeof JSON.parse(r.output_text).name, 'string');
});

test('refused fields are 400s naming them', async () => {
  const cases = [
    [{ input: 'x', previous_response_id: 'resp_1' }, 'previous_response_id'],
    [{ input: 'x', background: true }, 'background'],
    [{ input: 'x', tools: [{ type: 'web_search' }] }, 'tools[0].type'],
    [{ input: [{ role: 'user', content: [{ type: 'input_image', image_url: 'x' }] }] }, 'input[0].content[0].image_url'],
    [{ input: [{ role: 'user', content: [{ type: 'input_file', file_id: 'f' }] }] }, 'input[0].content[0].type'],
    [{ input: 'x', truncation: 'auto' }, 'truncation'],
    [{}, 'input'],
  ];
  for (const [fields, param] of cases) {
    const r = await request(server.port, 'POST', '/v1/responses', JSON.stringify({ model: MODEL, ...fields }));
    assert.equal(r.status, 400, r.body);
    assert.equal(r.json.error.param, param, r.body);
  }
  await assert.rejects(client.responses.create({ model: 'other', input: 'x' }),
                       (e) => e instanceof OpenAI.NotFoundError);
});
