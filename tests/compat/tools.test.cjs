// Tool calling and structured output through the openai SDK: tool_choice required and named always give
// schema-valid arguments (random weights or not, streaming or not), auto gives well-formed calls when it
// calls at all, and response_format json_schema output parses and validates (ajv).
'use strict';
const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const Ajv = require('ajv');
const { startServer, collectChatStream, MODEL } = require('./common.cjs');

let server;
let client;
before(async () => {
  server = await startServer(['--enable-auto-tool-choice', '--tool-call-parser', 'kimi_k3',
                              '--reasoning-parser', 'kimi_k3']);
  client = server.client();
});
after(async () => {
  const { code } = await server.stop();
  assert.equal(code, 0, server.log());
});

const tools = [
  { type: 'function', function: { name: 'get_weather', description: 'Current weather of a city',
    parameters: { type: 'object', properties: {
      city: { type: 'string' }, unit: { type: 'string', enum: ['celsius', 'fahrenheit'] },
      days: { type: 'integer' } }, required: ['city', 'unit'], additionalProperties: false } } },
  { type: 'function', function: { name: 'add', description: 'Adds numbers',
    parameters: { type: 'object', properties: { numbers: { type: 'array', items: { type: 'number' } },
      label: { anyOf: [{ type: 'string' }, { type: 'null' }] } },
    required: ['numbers'], additionalProperties: false } } },
];
const ajv = new Ajv({ strict: false });
const validators = Object.fromEntries(tools.map((t) => [t.function.name, ajv.compile(t.function.parameters)]));
const messages = [{ role: 'user', content: 'What is the weather in Seoul, and what is 2 + 3?' }];

function checkCall(name, args, allowed) {
  assert.ok(allowed.includes(name), `tool name ${name} not in ${allowed}`);
  const parsed = JSON.parse(args);
  assert.ok(validators[name](parsed), `${name}(${args}): ${ajv.errorsText(validators[name].errors)}`);
}

test('tool_choice required: every answer is a schema-valid tool call', async () => {
  for (const [temperature, seed] of [[0, 0], [1, 1], [1, 2], [1.3, 3]]) {
    const r = await client.chat.completions.create({ model: MODEL, messages, tools, tool_choice: 'required',
                                                    temperature, seed, max_tokens: 256 });
    const c = r.choices[0];
    assert.equal(c.finish_reason, 'tool_calls', JSON.stringify(c));
    assert.ok(c.message.tool_calls.length >= 1);
    for (const call of c.message.tool_calls) {
      assert.equal(call.type, 'function');
      assert.ok(call.id.length > 0);
      checkCall(call.function.name, call.function.arguments, ['get_weather', 'add']);
    }
  }
});

test('named tool_choice: the named tool with schema-valid arguments, streaming too', async () => {
  const tool_choice = { type: 'function', function: { name: 'get_weather' } };
  for (const seed of [5, 6]) {
    const r = await client.chat.completions.create({ model: MODEL, messages, tools, tool_choice, temperature: 1,
                                                    seed, max_tokens: 256 });
    const calls = r.choices[0].message.tool_calls;
    assert.equal(calls.length, 1);
    checkCall(calls[0].function.name, calls[0].function.arguments, ['get_weather']);
  }
  const s = await collectChatStream(await client.chat.completions.create(
      { model: MODEL, messages, tools, tool_choice, temperature: 1, seed: 9, max_tokens: 256, stream: true }));
  assert.deepEqual(s.finish, ['tool_calls']);
  assert.equal(s.toolCalls.length, 1);
  checkCall(s.toolCalls[0].name, s.toolCalls[0].arguments, ['get_weather']);
});

test('tool_choice auto: any tool call is well-formed; none never calls', async () => {
  for (const seed of [1, 2, 3]) {
    const r = await client.chat.completions.create({ model: MODEL, messages, tools, tool_choice: 'auto',
                                                    temperature: 1, seed, max_tokens: 64 });
    for (const call of r.choices[0].message.tool_calls || []) {
      assert.ok(['get_weather', 'add'].includes(call.function.name));
      assert.equal(typeof call.function.arguments, 'string');
    }
  }
  const none = await client.chat.completions.create({ model: MODEL, messages, tools, tool_choice: 'none',
                                                     temperature: 1, seed: 4, max_tokens: 32 });
  assert.ok(!none.choices[0].message.tool_calls || none.choices[0].message.tool_calls.length === 0);
  assert.notEqual(none.choices[0].finish_reason, 'tool_calls');
});

test('a tool-call history round trip is accepted', async () => {
  const r = await client.chat.completions.create({ model: MODEL, max_tokens: 8, temperature: 0, tools, messages: [
    ...messages,
    { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function',
      function: { name: 'get_weather', arguments: '{"city":"Seoul","unit":"celsius"}' } }] },
    { role: 'tool', tool_call_id: 'call_1', content: '{"temp": 3}' },
  ] });
  assert.equal(r.choices[0].message.role, 'assistant');
});

test('response_format json_schema: output parses and validates', async () => {
  const schema = { type: 'object', properties: {
    name: { type: 'string' }, age: { type: 'integer' }, tags: { type: 'array', items: { type: 'string' } },
    kind: { enum: ['a', 'b'] } }, required: ['name', 'age', 'kind'], additionalProperties: false };
  const validate = ajv.compile(schema);
  for (const seed of [1, 2, 3]) {
    const r = await client.chat.completions.create({ model: MODEL, temperature: 1, seed, max_tokens: 400,
      messages: [{ role: 'user', content: 'Describe a person as JSON.' }],
      chat_template_kwargs: { thinking: false },
      response_format: { type: 'json_schema', json_schema: { name: 'person', schema, strict: true } } });
    const text = r.choices[0].message.content;
    const value = JSON.parse(text);
    assert.ok(validate(value), `${text}: ${ajv.errorsText(validate.errors)}`);
  }
  const obj = await client.chat.completions.create({ model: MODEL, temperature: 1, seed: 4, max_tokens: 400,
    messages: [{ role: 'user', content: 'JSON please' }], chat_template_kwargs: { thinking: false },
    response_format: { type: 'json_object' } });
  const parsed = JSON.parse(obj.choices[0].message.content);
  assert.equal(typeof parsed, 'object');
  assert.ok(parsed !== null && !Array.isArray(parsed));
});
