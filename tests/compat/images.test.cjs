// Images through the official openai SDK on the embedded tiny-k3 (its tiny vision tower): several images
// as data: URLs in one chat, streamed and not; usage.prompt_tokens equal to /tokenize's count of the same
// messages (the pads the reference processor gives); Responses input_image; a typed placeholder staying
// text; bad images as 400s naming the part, the server healthy after them.
'use strict';
const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const OpenAI = require('openai');
const { startServer, request, collectChatStream, png, MODEL } = require('./common.cjs');

let server;
let client;
before(async () => {
  server = await startServer();
  client = server.client();
});
after(async () => {
  const { code } = await server.stop();
  assert.equal(code, 0, server.log());
});

const dataUrl = (bytes) => `data:image/png;base64,${bytes.toString('base64')}`;

async function tokenCount(messages) {
  const r = await request(server.port, 'POST', '/tokenize', JSON.stringify({ model: MODEL, messages }));
  assert.equal(r.status, 200, r.body);
  return r.json.count;
}

const twoImages = [{ role: 'user', content: [
  { type: 'text', text: 'Compare these two pictures.' },
  { type: 'image_url', image_url: { url: dataUrl(png(64, 48, 1)) } },
  { type: 'image_url', image_url: { url: dataUrl(png(30, 90, 2)), detail: 'auto' } },
] }];

test('a chat with two images counts their pads in usage.prompt_tokens', async () => {
  const r = await client.chat.completions.create({ model: MODEL, messages: twoImages, max_tokens: 8,
                                                   temperature: 0 });
  assert.equal(r.object, 'chat.completion');
  assert.equal(r.usage.prompt_tokens, await tokenCount(twoImages));
  // 64x48 -> a 3 x 2 grid of 28-pixel cells = 6 pads; 30x90 -> 2 x 4 = 8 pads; each image adds
  // media_begin, "image WxH", media_content and media_end too.
  const textOnly = await tokenCount([{ role: 'user', content: [twoImages[0].content[0]] }]);
  assert.ok(r.usage.prompt_tokens >= textOnly + 6 + 8 + 2 * 3, `${r.usage.prompt_tokens} vs ${textOnly}`);
});

test('streamed image chat: chunks, then usage equal to the non-streamed one', async () => {
  const stream = await client.chat.completions.create({ model: MODEL, messages: twoImages, max_tokens: 8,
                                                        temperature: 0, stream: true,
                                                        stream_options: { include_usage: true } });
  const { chunks, usage } = await collectChatStream(stream);
  assert.ok(chunks > 1);
  assert.equal(usage.prompt_tokens, await tokenCount(twoImages));
  const again = await client.chat.completions.create({ model: MODEL, messages: twoImages, max_tokens: 8,
                                                       temperature: 0 });
  assert.equal(again.usage.prompt_tokens_details?.cached_tokens, again.usage.prompt_tokens);  // same images
});

test('Responses input_image', async () => {
  const r = await client.responses.create({ model: MODEL, max_output_tokens: 8, reasoning: { effort: 'none' },
    input: [{ role: 'user', content: [{ type: 'input_text', text: 'What is this?' },
                                      { type: 'input_image', image_url: dataUrl(png(56, 56, 3)) }] }] });
  assert.equal(r.object, 'response');
  assert.ok(r.usage.input_tokens > 4, JSON.stringify(r.usage));
});

test('a typed <|kimi_image_placeholder|> stays text', async () => {
  const typed = [{ role: 'user', content: 'look: <|kimi_image_placeholder|>' }];
  const r = await request(server.port, 'POST', '/tokenize',
                          JSON.stringify({ model: MODEL, messages: typed, return_token_strs: true }));
  assert.equal(r.status, 200, r.body);
  assert.ok(!r.json.token_strs.includes('<|media_pad|>'));
  assert.ok(!r.json.token_strs.includes('<|kimi_image_placeholder|>'));
});

test('bad images are 400s naming the part; the server stays healthy', async () => {
  const bytes = png(20, 20, 4);
  const cases = [
    dataUrl(bytes.subarray(0, 30)),                         // truncated
    'data:image/png;base64,***',                             // bad base64
    `data:image/jpeg;base64,${bytes.toString('base64')}`,    // wrong MIME
    `data:image/svg+xml;base64,${Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"/>').toString('base64')}`,
    'https://example.com/cat.png',                           // not in --allowed-media-domains: never fetched
  ];
  for (const url of cases) {
    await assert.rejects(
      client.chat.completions.create({ model: MODEL, max_tokens: 4, messages: [{ role: 'user', content: [
        { type: 'text', text: 'x' }, { type: 'image_url', image_url: { url } }] }] }),
      (e) => e instanceof OpenAI.BadRequestError && e.param === 'messages[0].content[1].image_url', url);
  }
  const many = Array.from({ length: 17 }, () => ({ type: 'image_url', image_url: { url: dataUrl(bytes) } }));
  await assert.rejects(client.chat.completions.create({ model: MODEL, max_tokens: 4,
                                                        messages: [{ role: 'user', content: many }] }),
                       (e) => e instanceof OpenAI.BadRequestError && /at most 16/.test(e.message));
  const ok = await client.chat.completions.create({ model: MODEL, max_tokens: 2, messages: twoImages });
  assert.equal(ok.object, 'chat.completion');
});
