// Engine tests on a small random K3 model with a byte-level tokenizer: greedy output equals
// model::GreedyGenerate, results do not depend on batching, chunking or preemption, stop strings, cancel,
// n > 1 with a seed, queue full, submit errors, the prefix cache, and embedding requests (the pooled final
// hidden rows, chunked, batched and sharded).
#include "src/engine/engine.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "src/base/check.h"
#include "src/cache/kv_cache.h"
#include "src/engine/sampler.h"
#include "src/model/greedy.h"
#include "src/model/sequences.h"
#include "src/model/testing/random_model.h"
#include "src/model/testing/thread_group.h"

namespace k3::engine {
namespace {

constexpr int32_t kEos = 256;  // <|eos|>

struct Fixture {
  ThreadPool pool{1};  // inline: results do not depend on threads, and test machines are shared
  io::ModelConfig cfg;
  std::unique_ptr<model::Model> model;
  std::unique_ptr<tokenizer::Tokenizer> tok;

  Fixture() {
    cfg = model::testing::TinyK3Config();
    cfg.vocab_size = 260;  // 256 byte ranks + 4 specials
    auto m = model::testing::MakeRandomModel(cfg, 11, &pool);
    K3_CHECK(m.ok());
    model = std::move(*m);
    std::vector<std::string> ranks;
    for (int b = 0; b < 256; ++b) ranks.push_back(std::string(1, static_cast<char>(b)));
    auto t = tokenizer::Tokenizer::Create(ranks,
                                          {{256, "<|eos|>"}, {257, "<|a|>"}, {258, "<|b|>"}, {259, "<|c|>"}});
    K3_CHECK(t.ok());
    tok = std::make_unique<tokenizer::Tokenizer>(std::move(*t));
  }
};

Fixture& F() {
  static Fixture* f = new Fixture();
  return *f;
}

struct ChoiceResult {
  std::vector<int32_t> tokens;
  std::string text;
  std::vector<TokenLogprob> logprobs;
  std::vector<TokenLogprob> prompt_logprobs;
  int prompt_logprob_events = 0;  // events that carried prompt logprobs
  FinishReason finish = FinishReason::kNone;
  std::string stop_reason;
  int events = 0;
  std::vector<float> embedding;  // embedding requests
};
struct RequestResult {
  std::map<int32_t, ChoiceResult> choices;
  Usage usage;
  bool done = false;
};

// Collects events of many requests; Wait blocks until every submitted request is done. The callbacks
// share the collected state, so an engine that outlives its Collector (a test that failed early or
// timed out) still delivers its last events into valid memory.
class Collector {
 public:
  EventCallback Callback(int key) {
    return [state = state_, key](const Event& e) { state->Add(key, e); };
  }
  void Wait(size_t count) {
    std::unique_lock<std::mutex> lock(state_->mu);
    ASSERT_TRUE(state_->cv.wait_for(lock, std::chrono::seconds(120), [&] {
      size_t done = 0;
      for (auto& [k, r] : state_->results) done += r.done;
      return done == count;
    }));
  }
  RequestResult Get(int key) {
    std::lock_guard<std::mutex> lock(state_->mu);
    return state_->results[key];
  }

 private:
  struct State {
    std::mutex mu;
    std::condition_variable cv;
    std::map<int, RequestResult> results;

    void Add(int key, const Event& e) {
      std::lock_guard<std::mutex> lock(mu);
      RequestResult& r = results[key];
      ChoiceResult& c = r.choices[e.choice];
      c.tokens.insert(c.tokens.end(), e.tokens.begin(), e.tokens.end());
      c.text += e.text;
      c.logprobs.insert(c.logprobs.end(), e.logprobs.begin(), e.logprobs.end());
      if (!e.prompt_logprobs.empty()) {
        c.prompt_logprobs = e.prompt_logprobs;
        ++c.prompt_logprob_events;
      }
      ++c.events;
      if (!e.embedding.empty()) c.embedding = e.embedding;
      if (e.finish != FinishReason::kNone) {
        c.finish = e.finish;
        c.stop_reason = e.stop_reason;
      }
      if (e.request_done) {
        r.done = true;
        r.usage = e.usage;
        cv.notify_all();
      }
    }
  };
  std::shared_ptr<State> state_ = std::make_shared<State>();
};

std::vector<int32_t> Prompt(int seed, int len) {
  std::vector<int32_t> p;
  uint32_t x = static_cast<uint32_t>(seed) * 2654435761u + 12345u;
  for (int i = 0; i < len; ++i) {
    x = x * 1664525u + 1013904223u;
    p.push_back(static_cast<int32_t>(32 + (x >> 16) % 90));
  }
  return p;
}

Request MakeRequest(std::vector<int32_t> prompt, SamplingParams sp) {
  Request r;
  r.prompt = std::move(prompt);
  r.sampling = std::move(sp);
  r.eos_token_ids = {kEos};
  return r;
}

SamplingParams GreedyParams(int64_t max_tokens) {
  SamplingParams sp;
  sp.temperature = 0.0f;
  sp.max_tokens = max_tokens;
  sp.ignore_eos = true;
  return sp;
}

SamplingParams SeededParams(int64_t max_tokens, uint64_t seed) {
  SamplingParams sp;
  sp.temperature = 0.9f;
  sp.top_p = 0.95f;
  sp.top_k = 50;
  sp.seed = seed;
  sp.max_tokens = max_tokens;
  sp.ignore_eos = true;
  sp.logprobs = 2;
  return sp;
}

std::unique_ptr<Engine> MakeEngine(EngineOptions options = {}) {
  auto e = Engine::Create(F().model.get(), F().tok.get(), options);
  K3_CHECK(e.ok());
  return std::move(*e);
}

// Runs requests concurrently on one engine and returns the results in order.
std::vector<RequestResult> RunAll(Engine& engine, std::vector<Request> requests) {
  Collector c;
  const size_t n = requests.size();
  for (size_t i = 0; i < n; ++i) {
    auto id = engine.Submit(std::move(requests[i]), c.Callback(static_cast<int>(i)));
    EXPECT_TRUE(id.ok()) << id.status().ToString();
  }
  c.Wait(n);
  std::vector<RequestResult> out;
  for (size_t i = 0; i < n; ++i) out.push_back(c.Get(static_cast<int>(i)));
  return out;
}

TEST(Engine, GreedyEqualsGreedyGenerateWithChunkedPrefill) {
  const std::vector<int32_t> prompt = Prompt(1, 37);
  std::vector<std::vector<float>> rows;  // rows[i]: logits after position i
  auto want = model::GreedyGenerate(*F().model, prompt, 12, [&](int64_t, int32_t, std::span<const float> l) {
    rows.emplace_back(l.begin(), l.end());
  });
  ASSERT_TRUE(want.ok());
  EngineOptions options;
  options.max_num_batched_tokens = 7;  // prefill in chunks of 7
  auto engine = MakeEngine(options);
  std::vector<Request> reqs;
  SamplingParams sp = GreedyParams(12);
  sp.logprobs = 3;
  reqs.push_back(MakeRequest(prompt, sp));
  auto got = RunAll(*engine, std::move(reqs));
  EXPECT_EQ(got[0].choices[0].tokens, *want);
  // Logprobs: the raw log-softmax of the row that predicted each token.
  ASSERT_EQ(got[0].choices[0].logprobs.size(), 12u);
  for (size_t j = 0; j < 12; ++j) {
    std::vector<float> lp = rows[prompt.size() - 1 + j];
    LogSoftmax(lp);
    const TokenLogprob& t = got[0].choices[0].logprobs[j];
    EXPECT_EQ(t.token, (*want)[j]);
    EXPECT_EQ(t.logprob, lp[(*want)[j]]);
    ASSERT_EQ(t.top.size(), 3u);
    EXPECT_EQ(t.top[0].token, (*want)[j]);  // greedy: the most likely token
    EXPECT_GE(t.top[1].logprob, t.top[2].logprob);
  }
  EXPECT_EQ(got[0].choices[0].finish, FinishReason::kLength);
  EXPECT_EQ(got[0].usage.prompt_tokens, 37);
  EXPECT_EQ(got[0].usage.completion_tokens, 12);
  EXPECT_EQ(engine->Metrics().kv_cache_usage, 0.0);
}

std::vector<Request> MixedRequests(int64_t extra_tokens = 0) {
  std::vector<Request> reqs;
  for (int i = 0; i < 8; ++i) {
    const int64_t max_tokens = 10 + i + extra_tokens;
    SamplingParams sp = i % 2 == 0 ? GreedyParams(max_tokens) : SeededParams(max_tokens, 100 + i);
    reqs.push_back(MakeRequest(Prompt(10 + i, 5 + 9 * i), sp));
  }
  return reqs;
}

void ExpectSameResults(const std::vector<RequestResult>& a, const std::vector<RequestResult>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    const ChoiceResult& x = a[i].choices.at(0);
    const ChoiceResult& y = b[i].choices.at(0);
    EXPECT_EQ(x.tokens, y.tokens) << "request " << i;
    EXPECT_EQ(x.text, y.text) << "request " << i;
    ASSERT_EQ(x.logprobs.size(), y.logprobs.size());
    for (size_t t = 0; t < x.logprobs.size(); ++t) {
      EXPECT_EQ(x.logprobs[t].logprob, y.logprobs[t].logprob);
      ASSERT_EQ(x.logprobs[t].top.size(), 2u);
      EXPECT_EQ(x.logprobs[t].top[0].token, y.logprobs[t].top[0].token);
    }
  }
}

TEST(Engine, ResultsDoNotDependOnConcurrency) {
  // Alone: one request at a time.
  std::vector<RequestResult> alone;
  {
    auto engine = MakeEngine();
    for (Request& r : MixedRequests()) {
      std::vector<Request> one;
      one.push_back(std::move(r));
      alone.push_back(RunAll(*engine, std::move(one))[0]);
    }
  }
  // Together, with a small step budget so prefills are chunked and share steps with decodes.
  EngineOptions options;
  options.max_num_batched_tokens = 16;
  auto engine = MakeEngine(options);
  auto together = RunAll(*engine, MixedRequests());
  ExpectSameResults(alone, together);
  EXPECT_EQ(engine->Metrics().generation_tokens_total, 8 * 10 + 28);
}

// Rank 0 schedules, caches and samples; the other ranks mirror its state operations. A mixed workload
// (chunked prefills beside decodes, greedy and seeded sampling, n = 2, a prefix-cache hit, a cancel)
// gives the same tokens on 2 and 4 thread ranks (TP and EP) as in one process.
TEST(Engine, ShardedAcrossRanksGivesTheSameResults) {
  auto workload = [](Engine& engine) {
    std::vector<Request> reqs = MixedRequests();
    SamplingParams two = SeededParams(9, 77);
    two.n = 2;
    reqs.push_back(MakeRequest(Prompt(3, 40), two));
    std::vector<RequestResult> out = RunAll(engine, std::move(reqs));
    std::vector<Request> again;  // the same prompt once more: served from the prefix cache
    again.push_back(MakeRequest(Prompt(3, 40), GreedyParams(6)));
    out.push_back(RunAll(engine, std::move(again))[0]);
    return out;
  };
  EngineOptions options;
  options.max_num_batched_tokens = 16;
  options.prefix_snapshot_interval = 16;
  std::vector<RequestResult> want;
  {
    auto engine = MakeEngine(options);
    want = workload(*engine);
  }
  EXPECT_GT(want.back().usage.cached_prompt_tokens, 0);
  auto tensors = model::testing::MakeRandomTensors(F().cfg, 11);
  for (auto [world, ep] : {std::pair{2, false}, std::pair{4, false}, std::pair{2, true}}) {
    SCOPED_TRACE(testing::Message() << "world " << world << (ep ? " EP" : " TP"));
    model::testing::ThreadGroup group(F().cfg, tensors, world, ep);
    auto engine = Engine::Create(&group.leader(), F().tok.get(), options);
    ASSERT_TRUE(engine.ok());
    std::vector<RequestResult> got = workload(**engine);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) {
      for (const auto& [choice, w] : want[i].choices) {
        EXPECT_EQ(got[i].choices[choice].tokens, w.tokens) << "request " << i << " choice " << choice;
        EXPECT_EQ(got[i].choices[choice].text, w.text) << "request " << i << " choice " << choice;
      }
      EXPECT_EQ(got[i].usage.cached_prompt_tokens, want[i].usage.cached_prompt_tokens) << "request " << i;
    }
    // A cancelled request frees its slot on every rank (the workers see the frees in the next plan).
    Collector c;
    auto id = (*engine)->Submit(MakeRequest(Prompt(5, 30), GreedyParams(500)), c.Callback(0));
    ASSERT_TRUE(id.ok());
    (*engine)->Cancel(*id);
    c.Wait(1);
    auto after = RunAll(**engine, MixedRequests());
    EXPECT_EQ(after[0].choices[0].tokens, want[0].choices[0].tokens);
    engine->reset();
    const Status workers = group.Finish();  // a worker that missed a free or a clone would have failed
    EXPECT_TRUE(workers.ok()) << workers.ToString();
  }
}

// A model whose forward fails (a lost rank) fails every request with an unavailable error and stops.
TEST(Engine, LostRankFailsEveryRequestAndStops) {
  auto tensors = model::testing::MakeRandomTensors(F().cfg, 11);
  model::testing::ThreadGroup group(F().cfg, tensors, 2, false);
  ASSERT_TRUE(group.Finish().ok());  // the worker has left: the next plan cannot be sent
  Status fatal;
  EngineOptions options;
  options.on_fatal = [&](const Status& s) { fatal = s; };
  auto engine = Engine::Create(&group.leader(), F().tok.get(), options);
  ASSERT_TRUE(engine.ok());
  Collector c;
  auto id = (*engine)->Submit(MakeRequest(Prompt(1, 8), GreedyParams(4)), c.Callback(0));
  ASSERT_TRUE(id.ok());
  c.Wait(1);
  EXPECT_EQ(c.Get(0).choices[0].finish, FinishReason::kError);
  (*engine)->Shutdown(true);
  EXPECT_FALSE((*engine)->Alive());
  EXPECT_FALSE(fatal.ok());
}

TEST(Engine, PreemptionByRecomputeKeepsResults) {
  const auto& f = F();
  cache::KvCacheOptions probe;
  probe.prefix_caching = false;
  auto layout = cache::PlanKvCache(f.cfg, probe);
  ASSERT_TRUE(layout.ok());
  EngineOptions options;
  options.enable_prefix_caching = false;
  options.max_num_seqs = 8;
  options.max_num_batched_tokens = 32;
  // Half the budget is for slots: 8 slots, and the other half is 10 bf16 blocks of 128 tokens (the probe's
  // blocks are 16 tokens), less than 8 sequences of 130 to 144 tokens (2 blocks each) need.
  options.block_tokens = 128;
  options.kv_cache_bytes = 16 * layout->slot_bytes;
  ASSERT_EQ(8 * layout->slot_bytes / (layout->block_bytes * 8), 10);
  std::vector<RequestResult> small;
  {
    auto engine = MakeEngine(options);
    ASSERT_EQ(engine->options().max_model_len, 1280);
    // 110 more tokens each: most sequences grow into a second block while others still run.
    small = RunAll(*engine, MixedRequests(110));
    EXPECT_GT(engine->Metrics().preemptions_total, 0);
    EXPECT_EQ(engine->Metrics().kv_cache_usage, 0.0);
    // One engine per model (its KV cache names the model's blocks): a second is refused meanwhile.
    auto second = Engine::Create(F().model.get(), F().tok.get(), EngineOptions{});
    ASSERT_FALSE(second.ok());
    EXPECT_NE(second.status().message().find("another engine"), std::string::npos)
        << second.status().message();
  }
  // Once it is gone, an engine with another block size takes the model over.
  auto big = RunAll(*MakeEngine(), MixedRequests(110));
  ExpectSameResults(big, small);
}

// vLLM's --seed: requests without a seed draw theirs from a source seeded once, so the same requests in
// the same order sample the same tokens in another run; unseeded engines differ.
TEST(Engine, EngineSeedMakesSeedlessSamplingReproducible) {
  auto run = [](std::optional<uint64_t> seed) {
    EngineOptions options;
    options.seed = seed;
    auto engine = MakeEngine(options);
    std::vector<Request> reqs;
    for (int i = 0; i < 3; ++i)
      reqs.push_back(MakeRequest(Prompt(2, 10 + i), SamplingParams{.max_tokens = 12}));
    std::vector<std::vector<int32_t>> tokens;
    for (RequestResult& r : RunAll(*engine, std::move(reqs))) tokens.push_back(r.choices[0].tokens);
    return tokens;
  };
  const auto a = run(42), b = run(42), c = run(43);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
}

TEST(Engine, StopStringAcrossTokenBoundaries) {
  auto engine = MakeEngine();
  std::vector<Request> reqs;
  reqs.push_back(MakeRequest(Prompt(3, 20), GreedyParams(40)));
  const ChoiceResult free_run = RunAll(*engine, std::move(reqs))[0].choices[0];
  ASSERT_GT(free_run.text.size(), 12u);
  // Every token is one byte, so a 3-byte stop string spans three tokens (the text may hold U+FFFD).
  size_t start = 6;
  while (start < free_run.text.size() && (static_cast<unsigned char>(free_run.text[start]) & 0xC0) == 0x80)
    ++start;
  const std::string stop = free_run.text.substr(start, 3);
  SamplingParams sp = GreedyParams(40);
  sp.stop = {stop};
  reqs.clear();
  reqs.push_back(MakeRequest(Prompt(3, 20), sp));
  const ChoiceResult stopped = RunAll(*engine, std::move(reqs))[0].choices[0];
  EXPECT_EQ(stopped.text, free_run.text.substr(0, free_run.text.find(stop)));
  EXPECT_EQ(stopped.finish, FinishReason::kStop);
  EXPECT_EQ(stopped.stop_reason, stop);
  EXPECT_LT(stopped.tokens.size(), free_run.tokens.size());
}

TEST(Engine, StopTokenIdsAndMinTokens) {
  auto engine = MakeEngine();
  std::vector<Request> reqs;
  reqs.push_back(MakeRequest(Prompt(4, 10), GreedyParams(20)));
  const ChoiceResult free_run = RunAll(*engine, std::move(reqs))[0].choices[0];
  const int32_t third = free_run.tokens[2];
  size_t first_at = 0;
  while (free_run.tokens[first_at] != third) ++first_at;
  SamplingParams sp = GreedyParams(20);
  sp.stop_token_ids = {third};
  reqs.clear();
  reqs.push_back(MakeRequest(Prompt(4, 10), sp));
  const ChoiceResult stopped = RunAll(*engine, std::move(reqs))[0].choices[0];
  EXPECT_EQ(stopped.finish, FinishReason::kStop);
  EXPECT_EQ(stopped.stop_reason, std::to_string(third));
  EXPECT_EQ(stopped.tokens,
            std::vector<int32_t>(free_run.tokens.begin(), free_run.tokens.begin() + first_at + 1));
  // min_tokens past the stop id: it is masked until then.
  sp.min_tokens = static_cast<int64_t>(first_at) + 3;
  reqs.clear();
  reqs.push_back(MakeRequest(Prompt(4, 10), sp));
  const ChoiceResult later = RunAll(*engine, std::move(reqs))[0].choices[0];
  EXPECT_GE(later.tokens.size(), first_at + 3);
}

TEST(Engine, CancelAbortsAndFreesTheCache) {
  Collector c;
  std::mutex mu;
  std::condition_variable cv;
  int events = 0;
  auto inner = c.Callback(0);
  // Declared after what its callback uses, so it is destroyed (its thread stopped) first: the callback
  // still locks `mu` after `inner` has woken c.Wait (ASan: stack-use-after-scope at the end of the test).
  auto engine = MakeEngine();
  auto id = engine->Submit(MakeRequest(Prompt(5, 12), GreedyParams(2000)), [&](const Event& e) {
    inner(e);
    std::lock_guard<std::mutex> lock(mu);
    ++events;
    cv.notify_all();
  });
  ASSERT_TRUE(id.ok());
  {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return events >= 3; });
  }
  engine->Cancel(*id);
  c.Wait(1);
  const RequestResult r = c.Get(0);
  EXPECT_EQ(r.choices.at(0).finish, FinishReason::kAbort);
  EXPECT_LT(r.choices.at(0).tokens.size(), 2000u);
  EXPECT_EQ(engine->Metrics().kv_cache_usage, 0.0);
  EXPECT_EQ(engine->Metrics().num_running, 0);
  engine->Cancel(*id);  // unknown now: no-op
}

TEST(Engine, NChoicesWithSeedAreReproducibleAndMatchSeedPlusI) {
  auto engine = MakeEngine();
  SamplingParams sp = SeededParams(12, 42);
  sp.n = 2;
  std::vector<Request> reqs;
  reqs.push_back(MakeRequest(Prompt(6, 15), sp));
  reqs.push_back(MakeRequest(Prompt(6, 15), sp));
  reqs.push_back(MakeRequest(Prompt(6, 15), SeededParams(12, 43)));
  auto r = RunAll(*engine, std::move(reqs));
  ASSERT_EQ(r[0].choices.size(), 2u);
  EXPECT_EQ(r[0].choices[0].tokens, r[1].choices[0].tokens);
  EXPECT_EQ(r[0].choices[1].tokens, r[1].choices[1].tokens);
  EXPECT_NE(r[0].choices[0].tokens, r[0].choices[1].tokens);
  EXPECT_EQ(r[0].choices[1].tokens, r[2].choices[0].tokens);  // choice 1 uses seed + 1
  EXPECT_EQ(r[0].usage.completion_tokens, 24);
  EXPECT_EQ(r[0].usage.prompt_tokens, 15);
}

// Allows only the digits '0'..'9' for `digits` tokens, then only `end`.
class DigitsConstraint final : public chat::TokenConstraint {
 public:
  DigitsConstraint(int digits, int32_t end) : digits_(digits), end_(end) {}
  void FillAllowed(std::span<uint64_t> mask) override {
    std::fill(mask.begin(), mask.end(), 0);
    auto allow = [&](int32_t id) { mask[id / 64] |= uint64_t{1} << (id % 64); };
    if (count_ < digits_) {
      for (int32_t c = '0'; c <= '9'; ++c) allow(c);
    } else {
      allow(end_);
    }
  }
  bool Accept(int32_t token) override {
    const bool ok = count_ < digits_ ? token >= '0' && token <= '9' : token == end_;
    count_ += ok;
    return ok;
  }
  bool IsComplete() const override { return count_ >= digits_; }
  std::unique_ptr<TokenConstraint> Clone() const override {
    return std::make_unique<DigitsConstraint>(*this);
  }

 private:
  int digits_;
  int32_t end_;
  int count_ = 0;
};

TEST(Engine, ConstraintMasksEveryStepAndIsClonedPerChoice) {
  auto engine = MakeEngine();
  SamplingParams sp = SeededParams(20, 5);
  sp.ignore_eos = false;
  sp.n = 3;
  Request req = MakeRequest(Prompt(8, 9), sp);
  req.constraint = std::make_unique<DigitsConstraint>(5, kEos);
  std::vector<Request> reqs;
  reqs.push_back(std::move(req));
  const RequestResult r = RunAll(*engine, std::move(reqs))[0];
  ASSERT_EQ(r.choices.size(), 3u);
  for (const auto& [i, c] : r.choices) {
    ASSERT_EQ(c.tokens.size(), 6u) << "choice " << i;
    EXPECT_EQ(c.tokens.back(), kEos);
    EXPECT_EQ(c.finish, FinishReason::kStop);
    EXPECT_EQ(c.text.size(), 5u);
    for (char ch : c.text) EXPECT_TRUE(ch >= '0' && ch <= '9') << c.text;
  }
}

TEST(Engine, QueueFullAndSubmitErrors) {
  EngineOptions options;
  options.max_waiting = 2;
  options.max_model_len = 64;
  auto engine = MakeEngine(options);
  EXPECT_EQ(engine->Submit(MakeRequest({}, GreedyParams(4)), nullptr).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(engine->Submit(MakeRequest({1, 260}, GreedyParams(4)), nullptr).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(engine->Submit(MakeRequest(Prompt(1, 60), GreedyParams(5)), nullptr).status().code(),
            StatusCode::kInvalidArgument);
  // Block the engine thread inside the first request's first event, then fill the queue.
  std::mutex mu;
  std::condition_variable cv;
  bool entered = false, release = false;
  Collector c;
  auto inner = c.Callback(0);
  ASSERT_TRUE(engine
                  ->Submit(MakeRequest(Prompt(1, 5), GreedyParams(3)),
                           [&](const Event& e) {
                             std::unique_lock<std::mutex> lock(mu);
                             entered = true;
                             cv.notify_all();
                             cv.wait(lock, [&] { return release; });
                             lock.unlock();
                             inner(e);
                           })
                  .ok());
  {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return entered; });
  }
  EXPECT_TRUE(engine->Submit(MakeRequest(Prompt(2, 5), GreedyParams(3)), c.Callback(1)).ok());
  EXPECT_TRUE(engine->Submit(MakeRequest(Prompt(3, 5), GreedyParams(3)), c.Callback(2)).ok());
  auto full = engine->Submit(MakeRequest(Prompt(4, 5), GreedyParams(3)), nullptr);
  EXPECT_EQ(full.status().code(), StatusCode::kResourceExhausted);
  {
    std::lock_guard<std::mutex> lock(mu);
    release = true;
  }
  cv.notify_all();
  c.Wait(3);
  engine->Shutdown(true);
  EXPECT_FALSE(engine->Alive());
  EXPECT_EQ(engine->Submit(MakeRequest(Prompt(4, 5), GreedyParams(3)), nullptr).status().code(),
            StatusCode::kUnavailable);
}

TEST(Engine, PrefixCacheHitGivesTheSameOutput) {
  EngineOptions options;
  options.prefix_snapshot_interval = 16;
  options.max_num_batched_tokens = 20;
  auto engine = MakeEngine(options);
  const std::vector<int32_t> prompt = Prompt(9, 45);
  auto run = [&](std::vector<int32_t> p) {
    std::vector<Request> reqs;
    reqs.push_back(MakeRequest(std::move(p), GreedyParams(10)));
    return RunAll(*engine, std::move(reqs))[0];
  };
  const RequestResult first = run(prompt);
  EXPECT_EQ(first.usage.cached_prompt_tokens, 0);
  const RequestResult second = run(prompt);
  EXPECT_EQ(second.usage.cached_prompt_tokens, 45);  // the prompt-end snapshot (with its logits)
  EXPECT_EQ(second.choices.at(0).tokens, first.choices.at(0).tokens);
  // A longer prompt with the same start hits the snapshot at the prompt end of the first one.
  std::vector<int32_t> longer = prompt;
  for (int32_t t : Prompt(10, 7)) longer.push_back(t);
  const RequestResult third = run(longer);
  EXPECT_EQ(third.usage.cached_prompt_tokens, 45);
  auto want = model::GreedyGenerate(*F().model, longer, 10, nullptr);
  // (GreedyGenerate runs on the engine's model: only after the engine is idle.)
  ASSERT_TRUE(want.ok());
  EXPECT_EQ(third.choices.at(0).tokens, *want);
  // A prompt diverging at position 40 hits the interval snapshot at 32.
  std::vector<int32_t> other = prompt;
  other[40] = other[40] == 33 ? 34 : 33;
  EXPECT_EQ(run(other).usage.cached_prompt_tokens, 32);
  const EngineMetrics m = engine->Metrics();
  EXPECT_EQ(m.prefix_cache_queries, 45 + 45 + 52 + 45);
  EXPECT_EQ(m.prefix_cache_hits, 45 + 45 + 32);
  EXPECT_EQ(m.kv_cache_usage, 0.0);
}

// ResetPrefixCache drops every snapshot on the engine thread: the next identical prompt is computed again.
TEST(Engine, ResetPrefixCacheDropsEverySnapshot) {
  EngineOptions options;
  options.prefix_snapshot_interval = 16;
  auto engine = MakeEngine(options);
  const std::vector<int32_t> prompt = Prompt(31, 40);
  auto run = [&] {
    std::vector<Request> reqs;
    reqs.push_back(MakeRequest(prompt, GreedyParams(3)));
    return RunAll(*engine, std::move(reqs))[0];
  };
  const RequestResult first = run();
  EXPECT_EQ(run().usage.cached_prompt_tokens, 40);
  std::promise<int64_t> dropped;
  ASSERT_TRUE(engine->ResetPrefixCache([&](int64_t n) { dropped.set_value(n); }));
  auto future = dropped.get_future();
  ASSERT_EQ(future.wait_for(std::chrono::seconds(60)), std::future_status::ready);
  EXPECT_EQ(future.get(), 3);  // snapshots at 16, 32 and the prompt end
  const RequestResult again = run();
  EXPECT_EQ(again.usage.cached_prompt_tokens, 0);
  EXPECT_EQ(again.choices.at(0).tokens, first.choices.at(0).tokens);
  engine->Shutdown(true);
  EXPECT_FALSE(engine->ResetPrefixCache([](int64_t) {}));
}

// Sleep: requests queued before it finish, new ones are refused, the memory is released; after WakeUp the
// same request gives the same tokens (the cache is allocated again).
TEST(Engine, SleepReleasesTheCacheAndWakeUpServesAgain) {
  auto engine = MakeEngine();
  const std::vector<int32_t> prompt = Prompt(41, 30);
  Collector before;
  ASSERT_TRUE(engine->Submit(MakeRequest(prompt, GreedyParams(6)), before.Callback(0)).ok());
  std::promise<void> asleep;
  ASSERT_TRUE(engine->Sleep([&] { asleep.set_value(); }));
  EXPECT_TRUE(engine->IsSleeping());
  auto refused = engine->Submit(MakeRequest(prompt, GreedyParams(6)), [](const Event&) {});
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("sleeping"), std::string::npos);
  auto future = asleep.get_future();
  ASSERT_EQ(future.wait_for(std::chrono::seconds(60)), std::future_status::ready);
  before.Wait(1);
  const RequestResult first = before.Get(0);
  EXPECT_EQ(first.choices.at(0).tokens.size(), 6u);  // the queued request finished first
  EXPECT_EQ(engine->Metrics().kv_cache_usage, 0.0);
  engine->WakeUp();
  EXPECT_FALSE(engine->IsSleeping());
  std::vector<Request> reqs;
  reqs.push_back(MakeRequest(prompt, GreedyParams(6)));
  const RequestResult again = RunAll(*engine, std::move(reqs))[0];
  EXPECT_EQ(again.usage.cached_prompt_tokens, 0);  // the prefix cache was dropped
  EXPECT_EQ(again.choices.at(0).tokens, first.choices.at(0).tokens);
  engine->Shutdown(true);
  EXPECT_FALSE(engine->Sleep([] {}));
}

// prompt_logprobs: every prompt token's logprob given the tokens before it, equal to a log-softmax of
// the model's all-position logits; computed even when the prefix cache holds the prompt (the request
// skips it), across prefill chunks, once per request, delivered to every choice.
TEST(Engine, PromptLogprobsMatchTheModelsLogitsAtEveryPosition) {
  EngineOptions options;
  options.prefix_snapshot_interval = 16;
  options.max_num_batched_tokens = 20;  // the 45-token prompt takes 3 chunks
  auto engine = MakeEngine(options);
  const std::vector<int32_t> prompt = Prompt(21, 45);
  std::vector<Request> warm;
  warm.push_back(MakeRequest(prompt, GreedyParams(4)));
  RunAll(*engine, std::move(warm));  // the prompt is now in the prefix cache
  SamplingParams sp = GreedyParams(4);
  sp.prompt_logprobs = 3;
  sp.n = 2;
  std::vector<Request> reqs;
  reqs.push_back(MakeRequest(prompt, sp));
  const RequestResult got = RunAll(*engine, std::move(reqs))[0];
  EXPECT_EQ(got.usage.cached_prompt_tokens, 0);

  model::Sequences seqs(*F().model);
  model::ForwardOutput out;
  const int32_t slot = seqs.New();
  const model::SequenceBatchItem item{slot, prompt, true};
  ASSERT_TRUE(seqs.Forward(std::span(&item, 1), &out).ok());
  const int32_t vocab = F().cfg.vocab_size;
  for (const auto& [choice, result] : got.choices) {
    SCOPED_TRACE(choice);
    EXPECT_EQ(result.prompt_logprob_events, 1);
    ASSERT_EQ(result.prompt_logprobs.size(), prompt.size() - 1);
    for (size_t i = 0; i + 1 < prompt.size(); ++i) {
      std::vector<float> row(out.logits.begin() + static_cast<int64_t>(i) * vocab,
                             out.logits.begin() + static_cast<int64_t>(i + 1) * vocab);
      LogSoftmax(row);
      const TokenLogprob& entry = result.prompt_logprobs[i];
      EXPECT_EQ(entry.token, prompt[i + 1]);
      EXPECT_NEAR(entry.logprob, row[prompt[i + 1]], 1e-4f) << "prompt token " << i + 1;
      ASSERT_EQ(entry.top.size(), 3u);
      EXPECT_EQ(entry.top[0].token, ArgMax(row));
      EXPECT_GE(entry.top[0].logprob, entry.top[1].logprob);
      EXPECT_GE(entry.top[1].logprob, entry.top[2].logprob);
    }
  }
  // Generation is unchanged by the all-position logits.
  EXPECT_EQ(got.choices.at(0).tokens, got.choices.at(1).tokens);
  auto want = model::GreedyGenerate(*F().model, prompt, 4, nullptr);
  ASSERT_TRUE(want.ok());
  EXPECT_EQ(got.choices.at(0).tokens, *want);
  EXPECT_EQ(engine->Metrics().kv_cache_usage, 0.0);
}

// Embedding requests (Request::embed): the mean of the final-normed hidden rows, L2-normalised.
Request EmbedRequest(std::vector<int32_t> prompt, bool normalize = true) {
  Request r = MakeRequest(std::move(prompt), SamplingParams{});
  r.embed = true;
  r.embed_normalize = normalize;
  return r;
}

// The reference: one plain forward of the whole prompt, final_hidden rows averaged in double.
std::vector<double> ReferenceEmbedding(model::Model& m, const std::vector<int32_t>& prompt, bool normalize) {
  model::Sequences seqs(m);
  model::ForwardOutput out;
  out.capture_hidden = true;
  const model::SequenceBatchItem item{seqs.New(), prompt, true};
  K3_CHECK(seqs.Forward(std::span(&item, 1), &out).ok());
  const size_t D = static_cast<size_t>(m.config().hidden_size);
  K3_CHECK(out.final_hidden.size() == prompt.size() * D);
  std::vector<double> mean(D, 0.0);
  for (size_t r = 0; r < prompt.size(); ++r)
    for (size_t d = 0; d < D; ++d)
      mean[d] += out.final_hidden[r * D + d] / static_cast<double>(prompt.size());
  double norm = 0.0;
  for (double v : mean) norm += v * v;
  norm = std::sqrt(norm);
  if (normalize)
    for (double& v : mean) v /= norm;
  return mean;
}

void ExpectNear(const std::vector<float>& got, const std::vector<double>& want, double tol) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t d = 0; d < want.size(); ++d) ASSERT_NEAR(got[d], want[d], tol) << "dimension " << d;
}

void ExpectNear(const std::vector<float>& got, const std::vector<float>& want, double tol) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t d = 0; d < want.size(); ++d) ASSERT_NEAR(got[d], want[d], tol) << "dimension " << d;
}

TEST(Engine, EmbeddingIsTheNormalisedMeanOfTheFinalHiddenRows) {
  const std::vector<int32_t> long_prompt = Prompt(31, 45), short_prompt = Prompt(32, 6);
  const auto want_long = ReferenceEmbedding(*F().model, long_prompt, true);
  const auto want_short = ReferenceEmbedding(*F().model, short_prompt, true);
  const auto want_mean = ReferenceEmbedding(*F().model, short_prompt, false);
  for (int64_t budget : {int64_t{2048}, int64_t{20}, int64_t{7}}) {  // one chunk, 3 chunks, 7 chunks
    SCOPED_TRACE(testing::Message() << "max_num_batched_tokens " << budget);
    EngineOptions options;
    options.max_num_batched_tokens = budget;
    options.prefix_snapshot_interval = 16;
    auto engine = MakeEngine(options);
    const int64_t generated_before = engine->Metrics().generation_tokens_total;
    std::vector<Request> reqs;
    reqs.push_back(EmbedRequest(long_prompt));
    reqs.push_back(EmbedRequest(short_prompt));
    reqs.push_back(EmbedRequest(short_prompt, /*normalize=*/false));
    const std::vector<RequestResult> got = RunAll(*engine, std::move(reqs));
    ExpectNear(got[0].choices.at(0).embedding, want_long, 1e-5);
    ExpectNear(got[1].choices.at(0).embedding, want_short, 1e-5);
    ExpectNear(got[2].choices.at(0).embedding, want_mean, 1e-4);
    for (const RequestResult& r : got) {
      ASSERT_EQ(r.choices.size(), 1u);
      const ChoiceResult& c = r.choices.at(0);
      EXPECT_TRUE(c.tokens.empty());  // nothing sampled
      EXPECT_TRUE(c.text.empty());
      EXPECT_EQ(c.events, 1);
      EXPECT_EQ(c.finish, FinishReason::kStop);
      EXPECT_EQ(r.usage.completion_tokens, 0);
    }
    EXPECT_EQ(got[0].usage.prompt_tokens, 45);
    EXPECT_EQ(got[0].usage.cached_prompt_tokens, 0);
    const EngineMetrics m = engine->Metrics();
    EXPECT_EQ(m.generation_tokens_total, generated_before);
    EXPECT_EQ(m.kv_cache_usage, 0.0);
  }
}

TEST(Engine, EmbeddingDoesNotDependOnTheBatchOrThePrefixCache) {
  const std::vector<int32_t> prompt = Prompt(41, 45);
  EngineOptions options;
  options.max_num_batched_tokens = 24;
  options.prefix_snapshot_interval = 16;
  auto engine = MakeEngine(options);
  std::vector<Request> alone;
  alone.push_back(EmbedRequest(prompt));
  const std::vector<float> want = RunAll(*engine, std::move(alone))[0].choices.at(0).embedding;
  ASSERT_FALSE(want.empty());
  // Batched with generation requests (one of them the same prompt, now in the prefix cache) and another
  // embedding; the generations are unchanged by the embeddings beside them.
  std::vector<Request> mixed = MixedRequests();
  const size_t generations = mixed.size();
  std::vector<Request> plain = MixedRequests();
  mixed.push_back(MakeRequest(prompt, GreedyParams(5)));
  mixed.push_back(EmbedRequest(Prompt(42, 30)));
  mixed.push_back(EmbedRequest(prompt));
  const std::vector<RequestResult> got = RunAll(*engine, std::move(mixed));
  ExpectNear(got.back().choices.at(0).embedding, want, 1e-5);
  EXPECT_EQ(got.back().usage.cached_prompt_tokens, 0);  // every position computed
  const std::vector<RequestResult> solo = RunAll(*engine, std::move(plain));
  for (size_t i = 0; i < generations; ++i) {
    for (const auto& [choice, w] : solo[i].choices)
      EXPECT_EQ(got[i].choices.at(choice).tokens, w.tokens) << "request " << i;
  }
}

TEST(Engine, EmbeddingSubmitChecks) {
  EngineOptions options;
  options.max_model_len = 64;
  auto engine = MakeEngine(options);
  Request two = EmbedRequest(Prompt(1, 8));
  two.sampling.n = 2;
  EXPECT_EQ(engine->Submit(std::move(two), nullptr).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(engine->Submit(EmbedRequest(Prompt(1, 65)), nullptr).status().code(),
            StatusCode::kInvalidArgument);
  std::vector<Request> full;  // an embedding may fill the context (nothing is generated)
  full.push_back(EmbedRequest(Prompt(1, 64)));
  const RequestResult r = RunAll(*engine, std::move(full))[0];
  EXPECT_EQ(r.choices.at(0).finish, FinishReason::kStop);
  ExpectNear(r.choices.at(0).embedding, ReferenceEmbedding(*F().model, Prompt(1, 64), true), 1e-5);
}

TEST(Engine, EmbeddingWhenShardedAcrossRanks) {
  const std::vector<int32_t> prompt = Prompt(51, 40);
  const auto want = ReferenceEmbedding(*F().model, prompt, true);
  EngineOptions options;
  options.max_num_batched_tokens = 16;
  auto tensors = model::testing::MakeRandomTensors(F().cfg, 11);
  model::testing::ThreadGroup group(F().cfg, tensors, 2, false);
  auto engine = Engine::Create(&group.leader(), F().tok.get(), options);
  ASSERT_TRUE(engine.ok());
  std::vector<Request> reqs;
  reqs.push_back(EmbedRequest(prompt));
  reqs.push_back(MakeRequest(Prompt(52, 10), GreedyParams(4)));
  const std::vector<RequestResult> got = RunAll(**engine, std::move(reqs));
  ExpectNear(got[0].choices.at(0).embedding, want, 1e-5);
  EXPECT_EQ(got[1].choices.at(0).tokens.size(), 4u);
  engine->reset();
  const Status workers = group.Finish();
  EXPECT_TRUE(workers.ok()) << workers.ToString();
}

TEST(Engine, ConcurrentSubmitAndCancelFromManyThreads) {
  EngineOptions options;
  options.max_num_seqs = 6;
  options.max_num_batched_tokens = 24;
  auto engine = MakeEngine(options);
  Collector c;
  constexpr int kThreads = 4, kPerThread = 8;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        const int key = t * kPerThread + i;
        SamplingParams sp = key % 3 == 0 ? GreedyParams(6 + key % 5) : SeededParams(6 + key % 7, key);
        sp.n = 1 + key % 2;
        auto id = engine->Submit(MakeRequest(Prompt(key, 3 + key % 11), sp), c.Callback(key));
        ASSERT_TRUE(id.ok());
        if (key % 4 == 1) engine->Cancel(*id);
      }
    });
  }
  for (std::thread& th : threads) th.join();
  c.Wait(kThreads * kPerThread);
  for (int key = 0; key < kThreads * kPerThread; ++key) {
    const RequestResult r = c.Get(key);
    ASSERT_EQ(r.choices.size(), static_cast<size_t>(1 + key % 2)) << key;
    for (const auto& [i, choice] : r.choices) {
      EXPECT_NE(choice.finish, FinishReason::kNone);
      if (key % 4 != 1) {
        EXPECT_EQ(choice.finish, FinishReason::kLength) << key;
      }
    }
  }
  const EngineMetrics m = engine->Metrics();
  EXPECT_EQ(m.kv_cache_usage, 0.0);
  EXPECT_EQ(m.num_running, 0);
  EXPECT_EQ(m.num_waiting, 0);
}

// A stand-in for the vision tower at the ImageEncoder seam (the real tower has its own tests against the
// PyTorch reference): 2 x 2 merge of 1-value patches, each row a fixed pattern scaled by the merged
// patches' sum, so different pixels give different rows. Counts its runs.
class SumEncoder final : public model::ImageEncoder {
 public:
  explicit SumEncoder(int64_t width) : width_(width) {}
  int64_t patch_values() const override { return 1; }
  int64_t output_width() const override { return width_; }
  int64_t OutputTokens(int64_t grid_h, int64_t grid_w) const override {
    return grid_h % 2 == 0 && grid_w % 2 == 0 ? grid_h * grid_w / 4 : 0;
  }
  Status Encode(std::span<const float> patches, int64_t grid_h, int64_t grid_w,
                std::vector<uint16_t>* rows) override {
    ++runs;
    rows->clear();
    for (int64_t y = 0; y < grid_h; y += 2) {
      for (int64_t x = 0; x < grid_w; x += 2) {
        const float sum = patches[y * grid_w + x] + patches[y * grid_w + x + 1] +
                          patches[(y + 1) * grid_w + x] + patches[(y + 1) * grid_w + x + 1];
        for (int64_t j = 0; j < width_; ++j) {
          const float v = 0.05f * sum * std::sin(0.37f * static_cast<float>(j + 1));
          uint32_t bits;
          std::memcpy(&bits, &v, 4);
          rows->push_back(static_cast<uint16_t>(bits >> 16));  // truncation: any fixed rounding will do
        }
      }
    }
    return OkStatus();
  }
  std::atomic<int> runs{0};

 private:
  int64_t width_;
};

// An image of grid_h x grid_w one-value patches, the values drawn from `seed`.
std::shared_ptr<const ImagePixels> Pixels(int seed, int64_t grid_h, int64_t grid_w) {
  auto pixels = std::make_shared<ImagePixels>();
  pixels->grid_h = grid_h;
  pixels->grid_w = grid_w;
  uint32_t x = static_cast<uint32_t>(seed) * 2654435761u + 7u;
  for (int64_t i = 0; i < grid_h * grid_w; ++i) {
    x = x * 1664525u + 1013904223u;
    pixels->patches.push_back(static_cast<float>(x >> 8) / 16777216.0f * 2.0f - 1.0f);
  }
  return pixels;
}

// A prompt of `before` text ids, `pads` pad ids (257) and `after` text ids, with its image.
Request ImageRequest(int image_seed, int64_t before, int64_t pads, int64_t after, int64_t max_tokens) {
  std::vector<int32_t> prompt = Prompt(21, static_cast<int>(before));
  const int64_t first_pad = static_cast<int64_t>(prompt.size());
  prompt.insert(prompt.end(), static_cast<size_t>(pads), 257);
  for (int32_t t : Prompt(22, static_cast<int>(after))) prompt.push_back(t);
  Request r = MakeRequest(std::move(prompt), GreedyParams(max_tokens));
  r.images.push_back(
      PromptImage{first_pad, pads, "image-" + std::to_string(image_seed), Pixels(image_seed, 4, pads)});
  return r;
}

// The greedy continuation computed without the engine: the whole prompt in one forward with the image rows.
std::vector<int32_t> GreedyWithImage(SumEncoder& encoder, const Request& request, int64_t max_new) {
  std::vector<uint16_t> rows;
  const PromptImage& image = request.images[0];
  K3_CHECK(encoder.Encode(image.pixels->patches, image.pixels->grid_h, image.pixels->grid_w, &rows).ok());
  model::EmbeddingRun run{static_cast<int32_t>(image.first_pad), static_cast<int32_t>(image.num_pads),
                          static_cast<int32_t>(encoder.output_width()), rows};
  auto out = model::GreedyGenerate(*F().model, request.prompt, max_new, nullptr, {}, {run});
  K3_CHECK(out.ok());
  return *out;
}

// An image's rows replace its pads' embeddings: the engine's output (prefill chunked across the image,
// beside other requests) equals a one-forward greedy run with the rows; the image changes the output.
TEST(Engine, ImageRowsReplaceThePadEmbeddingsAcrossChunks) {
  SumEncoder encoder(F().cfg.hidden_size);
  EngineOptions options;
  options.image_encoder = &encoder;
  options.max_num_batched_tokens = 7;  // chunks end inside the image
  options.enable_prefix_caching = false;
  auto engine = MakeEngine(options);
  std::vector<Request> requests;
  requests.push_back(ImageRequest(1, 5, 6, 4, 8));
  requests.push_back(MakeRequest(Prompt(3, 9), GreedyParams(8)));
  requests.push_back(ImageRequest(2, 5, 6, 4, 8));
  const std::vector<RequestResult> results = RunAll(*engine, std::move(requests));
  engine->Shutdown(true);
  const std::vector<int32_t> want1 = GreedyWithImage(encoder, ImageRequest(1, 5, 6, 4, 8), 8);
  const std::vector<int32_t> want2 = GreedyWithImage(encoder, ImageRequest(2, 5, 6, 4, 8), 8);
  EXPECT_EQ(results[0].choices.at(0).tokens, want1);
  EXPECT_EQ(results[2].choices.at(0).tokens, want2);
  EXPECT_NE(want1, want2);  // the pixels matter
  EXPECT_EQ(results[0].usage.prompt_tokens, 15);
  auto text_only = model::GreedyGenerate(*F().model, ImageRequest(1, 5, 6, 4, 8).prompt, 8, nullptr);
  ASSERT_TRUE(text_only.ok());
  EXPECT_NE(*text_only, want1);  // the rows are used, not the pad id's embedding
}

// The prefix cache keys images by content: the same image shares the whole prompt, a different image with
// the same ids shares only what comes before it. The encoder runs once per distinct image and request
// needing it; a repeated image that the prefix cache does not cover comes from the encoder cache.
TEST(Engine, ImagesArePrefixCachedByContentAndEncodedOnce) {
  SumEncoder encoder(F().cfg.hidden_size);
  EngineOptions options;
  options.image_encoder = &encoder;
  options.prefix_snapshot_interval = 4;
  auto engine = MakeEngine(options);
  auto run = [&](Request r) {
    std::vector<Request> reqs;
    reqs.push_back(std::move(r));
    return RunAll(*engine, std::move(reqs))[0];
  };
  const RequestResult first = run(ImageRequest(1, 5, 6, 4, 6));
  EXPECT_EQ(first.usage.cached_prompt_tokens, 0);
  EXPECT_EQ(encoder.runs.load(), 1);
  const RequestResult same = run(ImageRequest(1, 5, 6, 4, 6));
  EXPECT_EQ(same.usage.cached_prompt_tokens, 15);
  EXPECT_EQ(same.choices.at(0).tokens, first.choices.at(0).tokens);
  EXPECT_EQ(encoder.runs.load(), 1);  // nothing left to encode
  const RequestResult other = run(ImageRequest(2, 5, 6, 4, 6));
  EXPECT_EQ(other.usage.cached_prompt_tokens, 4);  // the snapshot before the image, not past it
  EXPECT_EQ(encoder.runs.load(), 2);
  // Same image, other text after it: the prompt-end snapshot covers the image; nothing is encoded.
  const RequestResult more = run(ImageRequest(1, 5, 6, 9, 6));
  EXPECT_EQ(more.usage.cached_prompt_tokens, 15);
  EXPECT_EQ(encoder.runs.load(), 2);
  // Same image after other text: no prefix hit reaches it, and its rows come from the encoder cache.
  const RequestResult shifted = run(ImageRequest(1, 3, 6, 4, 6));
  EXPECT_EQ(shifted.usage.cached_prompt_tokens, 0);
  EXPECT_EQ(encoder.runs.load(), 2);
  const EngineMetrics m = engine->Metrics();
  EXPECT_EQ(m.images_encoded_total, 2);
  EXPECT_EQ(m.encoder_cache_hits_total, 1);
  EXPECT_EQ(more.choices.at(0).tokens, GreedyWithImage(encoder, ImageRequest(1, 5, 6, 9, 6), 6));
  EXPECT_EQ(shifted.choices.at(0).tokens, GreedyWithImage(encoder, ImageRequest(1, 3, 6, 4, 6), 6));
}

TEST(Engine, ImageSubmitChecks) {
  SumEncoder encoder(F().cfg.hidden_size);
  auto no_tower = MakeEngine();
  Collector c;
  auto refused = no_tower->Submit(ImageRequest(1, 5, 6, 4, 4), c.Callback(0));
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("no vision tower"), std::string::npos);
  no_tower->Shutdown(false);
  no_tower.reset();
  EngineOptions options;
  options.image_encoder = &encoder;
  auto engine = MakeEngine(options);
  Request outside = ImageRequest(1, 5, 6, 0, 4);
  outside.images[0].first_pad = 8;  // past the prompt's end
  EXPECT_FALSE(engine->Submit(std::move(outside), c.Callback(1)).ok());
  Request wrong_grid = ImageRequest(1, 5, 6, 4, 4);
  wrong_grid.images[0].num_pads = 5;  // the 4 x 6 grid encodes to 6 rows
  auto grid = engine->Submit(std::move(wrong_grid), c.Callback(2));
  ASSERT_FALSE(grid.ok());
  EXPECT_NE(grid.status().message().find("encodes to 6 rows"), std::string::npos) << grid.status().ToString();
  Request overlapping = ImageRequest(1, 5, 6, 4, 4);
  overlapping.images.push_back(overlapping.images[0]);
  EXPECT_FALSE(engine->Submit(std::move(overlapping), c.Callback(3)).ok());
}

TEST(Engine, ShutdownWithoutDrainAbortsRunningRequests) {
  auto engine = MakeEngine();
  Collector c;
  ASSERT_TRUE(engine->Submit(MakeRequest(Prompt(1, 8), GreedyParams(3000)), c.Callback(0)).ok());
  engine->Shutdown(false);
  c.Wait(1);
  EXPECT_EQ(c.Get(0).choices.at(0).finish, FinishReason::kAbort);
  EXPECT_FALSE(engine->Alive());
}

}  // namespace
}  // namespace k3::engine
