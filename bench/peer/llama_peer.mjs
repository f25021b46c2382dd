// bench/peer/llama_peer.mjs: the llama.cpp half of the side-by-side benchmark (bench/peer/run.py),
// through node-llama-cpp's prebuilt CPU binaries (pinned in package-lock.json). One process is one
// measured run, the mirror of bench/peer/peer_k3.cc:
//   node llama_peer.mjs --model FILE.gguf --threads N --prompt-ids 1,2,3 --decode-steps S
// loads the GGUF (no GPU layers, mmap), warms up on the context's sequence and clears it, then prefills
// the prompt in one batch and greedily decodes S tokens one step at a time. Prints one JSON line:
// prefill and decode seconds and the greedy tokens (the prefill's argmax first).
//   node llama_peer.mjs --model FILE.gguf --threads N --prompt-ids 1,2,3 --score
// instead evaluates the whole sequence once, untimed, and prints the argmax after every position (the
// mirror of `peer_k3 score`: top-1 agreement of the two engines on one shared context).
import {getLlama, LlamaLogLevel} from "node-llama-cpp";

function flag(name, fallback) {
  const i = process.argv.indexOf(name);
  return i >= 0 && i + 1 < process.argv.length ? process.argv[i + 1] : fallback;
}

const modelPath = flag("--model", "");
const threads = Number(flag("--threads", "1"));
const prompt = flag("--prompt-ids", "").split(",").filter((s) => s !== "").map(Number);
const promptLen = prompt.length;
const steps = Number(flag("--decode-steps", "32"));
const score = process.argv.includes("--score");
if (!modelPath || !(threads >= 1) || !(promptLen >= 1) || prompt.some((t) => !Number.isInteger(t)) ||
    !(steps >= 0)) {
  console.error("usage: node llama_peer.mjs --model FILE.gguf --threads N --prompt-ids 1,2,3 " +
                "(--decode-steps S | --score)");
  process.exit(2);
}

// maxThreads 0: the context's thread count is used as given, never lowered by node-llama-cpp
const llama = await getLlama({gpu: false, build: "never", maxThreads: 0, logLevel: LlamaLogLevel.error});
const model = await llama.loadModel({modelPath, gpuLayers: 0, useMmap: true});
const batch = Math.max(512, promptLen);
const context = await model.createContext({
  contextSize: Math.max(1024, promptLen + steps + 64),
  batchSize: batch,
  threads: {ideal: threads, min: threads},
  sequences: 1,
});
const sequence = context.getSequence();

// Every position's greedy next token from one evaluation of the whole sequence.
async function argmaxAfterEachPosition(ids) {
  const out = await sequence.controlledEvaluate(ids.map((t) => [t, {generateNext: {token: true}}]));
  return ids.map((_, i) => out[i].next.token);
}

// The prompt in one controlled evaluation, the next token (greedy) generated after its last position.
async function prefill(ids) {
  const items = ids.map((t, i) => (i === ids.length - 1 ? [t, {generateNext: {token: true}}] : t));
  const out = await sequence.controlledEvaluate(items);
  return out[ids.length - 1].next.token;
}

// `count` greedy decode steps starting from `first`; returns the generated tokens.
async function decode(first, count) {
  const tokens = [];
  if (count === 0) return tokens;
  for await (const token of sequence.evaluate([first], {temperature: 0})) {
    tokens.push(token);
    if (tokens.length >= count) break;
  }
  return tokens;
}

// One measured run: a warm-up on the sequence (every weight page a token reads, and the graph allocations
// of both batch shapes), cleared, then the timed prefill of the prompt and `steps` greedy decode steps.
async function timedRun() {
  await decode(await prefill(prompt.slice(0, Math.min(promptLen, 8))), 2);
  await sequence.clearHistory();
  const t0 = performance.now();
  const first = await prefill(prompt);
  const t1 = performance.now();
  const rest = await decode(first, steps);
  const t2 = performance.now();
  return {
    engine: "llama.cpp",
    threads,
    prompt_tokens: promptLen,
    prefill_s: (t1 - t0) / 1000,
    decode_tokens: rest.length,
    decode_s: (t2 - t1) / 1000,
    tokens: [first, ...rest],
  };
}

console.log(JSON.stringify(score ? {engine: "llama.cpp", threads, argmax: await argmaxAfterEachPosition(prompt)}
                                 : await timedRun()));
await context.dispose();
await model.dispose();
await llama.dispose();
