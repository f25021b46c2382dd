// Differential test, node side: encodes every string of WORKDIR/cases.jsonl with the tiktoken npm package
// (OpenAI's Rust core compiled to WASM) configured with the K3 tokenizer files and the reference
// pre-tokeniser pattern (fancy-regex syntax, `&&` intersections), and compares the ids with
// WORKDIR/k3.jsonl written by k3_tokenizer. The reference's long-input guard (400,000-character windows,
// runs of whitespace / non-whitespace cut at 25,000) is applied here as the K3 Python tokenizer does.
//   node compare.cjs WORKDIR     exit 0 when every case matches and decodes back to its text
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

// Python's str.isspace().
const SPACES = new Set([0x85, 0xa0, 0x1680, 0x2028, 0x2029, 0x202f, 0x205f, 0x3000]);
function isSpace(cp) {
  return (cp >= 0x09 && cp <= 0x0d) || (cp >= 0x1c && cp <= 0x20) || (cp >= 0x2000 && cp <= 0x200a) || SPACES.has(cp);
}

// The reference's _split_whitespaces_or_nonwhitespaces over 400,000-character windows.
function* guardSegments(text) {
  const chars = Array.from(text);
  for (let w = 0; w < chars.length; w += 400000) {
    const s = chars.slice(w, w + 400000);
    let runLength = 0;
    let runIsSpace = s.length > 0 ? isSpace(s[0].codePointAt(0)) : false;
    let sliceStart = 0;
    for (let i = 0; i < s.length; i++) {
      const nowSpace = isSpace(s[i].codePointAt(0));
      if (runIsSpace !== nowSpace) {
        runLength = 1;
        runIsSpace = nowSpace;
      } else if (++runLength > 25000) {
        yield s.slice(sliceStart, i).join('');
        sliceStart = i;
        runLength = 1;
      }
    }
    yield s.slice(sliceStart).join('');
  }
}

function encode(text, allowSpecial) {
  const ids = [];
  for (const segment of guardSegments(text)) {
    const part = allowSpecial ? encoder.encode(segment, 'all') : encoder.encode_ordinary(segment);
    for (const id of part) ids.push(id);
  }
  return ids;
}

const cases = read('cases.jsonl').split('\n').filter((line) => line.length > 0);
const expected = read('k3.jsonl').split('\n').filter((line) => line.length > 0);
if (cases.length !== expected.length || cases.length === 0) {
  console.error(`case count mismatch: ${cases.length} texts, ${expected.length} results`);
  process.exit(1);
}
const decoder = new TextDecoder('utf-8', { fatal: true });
let mismatches = 0;
let tokens = 0;
for (let i = 0; i < cases.length; i++) {
  const { text } = JSON.parse(cases[i]);
  const k3 = JSON.parse(expected[i]);
  for (const [kind, allow] of [['ordinary', false], ['special', true]]) {
    const ids = encode(text, allow);
    tokens += ids.length;
    const same = ids.length === k3[kind].length && ids.every((id, j) => id === k3[kind][j]);
    const roundTrip = decoder.decode(encoder.decode(Uint32Array.from(ids))) === text;
    if (!same || !roundTrip) {
      if (++mismatches <= 10) {
        let first = 0;
        while (first < ids.length && ids[first] === k3[kind][first]) first++;
        console.error(`case ${i} (${kind}): ${same ? 'ids equal' : `ids differ at ${first}`}, round trip ${roundTrip}`);
        console.error(`  text     ${JSON.stringify(text).slice(0, 300)}`);
        console.error(`  tiktoken ${JSON.stringify(ids.slice(first, first + 12))}`);
        console.error(`  k3       ${JSON.stringify(k3[kind].slice(first, first + 12))}`);
      }
    }
  }
}
encoder.free();
console.log(`${cases.length} strings x 2 (specials disallowed / allowed), ${tokens} tiktoken tokens: ${mismatches} mismatches`);
process.exit(mismatches === 0 ? 0 : 1);
