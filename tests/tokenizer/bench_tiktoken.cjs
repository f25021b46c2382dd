// Benchmark peer for bench/tokenizer_bench.cc: encodes DIR/text.txt with the tiktoken npm package using
// DIR's K3 tokenizer files, as ~64 KB documents cut at line ends exactly as the C++ side cuts them.
// Prints "tiktoken <MB/s> MB/s <tokens> tokens" (best of 3 passes).
'use strict';
const fs = require('fs');
const path = require('path');
const { Tiktoken } = require('tiktoken/lite');

const dir = process.argv[2];
const read = (name) => fs.readFileSync(path.join(dir, name), 'utf8');
const config = JSON.parse(read('tokenizer_config.json'));
const specials = {};
for (const [id, entry] of Object.entries(config.added_tokens_decoder)) specials[entry.content] = Number(id);
const encoder = new Tiktoken(read('tiktoken.model'), specials, read('pattern.txt'));

const bytes = fs.readFileSync(path.join(dir, 'text.txt'));
const documents = [];
for (let start = 0; start < bytes.length;) {
  let end = bytes.indexOf(0x0a, start + 65536);
  end = end < 0 ? bytes.length : end + 1;
  documents.push(bytes.subarray(start, end).toString('utf8'));
  start = end;
}
let best = Infinity;
let tokens = 0;
for (let pass = 0; pass < 3; pass++) {
  const start = process.hrtime.bigint();
  let count = 0;
  for (const document of documents) count += encoder.encode_ordinary(document).length;
  best = Math.min(best, Number(process.hrtime.bigint() - start) / 1e9);
  tokens = count;
}
encoder.free();
console.log(`tiktoken ${(bytes.length / 1e6 / best).toFixed(3)} MB/s ${tokens} tokens`);
