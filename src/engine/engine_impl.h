// EngineImpl: the Engine behind Engine::Create — the engine thread, the request queues and one step of
// scheduling + forward + sampling (engine_step.cc).
//
// Threads: Submit / Cancel / Shutdown / Metrics take mu_ briefly and hand work to the engine thread
// through incoming_ and cancels_; everything else (sequences, the cache, the model) is touched only by
// the engine thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <random>
#include <thread>
#include <unordered_map>
#include <vector>

#include "src/cache/kv_cache.h"
#include "src/engine/engine.h"
#include "src/engine/image_inputs.h"
#include "src/engine/sequence.h"

namespace k3::engine {

class EngineImpl final : public Engine {
 public:
  EngineImpl(model::Model* model, const tokenizer::Tokenizer* tokenizer, EngineOptions options,
             std::shared_ptr<model::StateOpLog> state_log, std::unique_ptr<cache::KvCache> cache);
  ~EngineImpl() override;

  Result<uint64_t> Submit(Request request, EventCallback on_event) override;
  void Cancel(uint64_t request_id) override;
  EngineMetrics Metrics() const override;
  bool ResetPrefixCache(std::function<void(int64_t dropped)> done) override;
  bool Sleep(std::function<void()> done) override;
  void WakeUp() override;
  bool IsSleeping() const override;
  bool Alive() const override { return alive_.load(); }
  const EngineOptions& options() const override { return options_; }
  void Shutdown(bool drain) override;

 private:
  void Loop();
  bool HasWork() const { return !waiting_.empty() || !running_.empty(); }
  void AbortRequest(RequestState* req);
  // Idle: executes the slot ops no step has carried yet (finished sequences' slots are freed now, not
  // at the next request).
  Status FlushStateOps();

  // --- engine_step.cc ---
  void Step();
  // Schedules running sequences within `budget` tokens (may preempt); returns the budget left.
  int64_t ScheduleRunning(int64_t budget);
  void AdmitWaiting(int64_t budget);
  // Tokens to process next for `seq` within `budget` (stops at the next snapshot position in the prompt).
  int64_t ChunkFor(const Sequence& seq, int64_t budget) const;
  // Reserve blocks for seq's chunk: evicts snapshots, then preempts newest running sequences. False if
  // `seq` itself had to be preempted.
  bool ReserveOrPreempt(Sequence* seq, int64_t tokens);
  void Preempt(Sequence* seq);
  void Fork(RequestState* req);
  void SampleAndEmit(Sequence* seq, std::span<const float> logits);
  // Appends the prompt logprobs of seq's chunk (prompt_logprobs requests) from its logits rows, the
  // first at forward_out_ row first_row; positions already collected are skipped.
  void CollectPromptLogprobs(Sequence* seq, int64_t first_row);
  // Embedding requests: adds the final hidden rows of seq's chunk (forward_out_ rows first_row ..) to
  // its pooled sum (embedding_pool.cc); once the prompt is done, emits the pooled vector and finishes.
  void PoolHidden(Sequence* seq, int64_t first_row);
  void FinishEmbedding(Sequence* seq);
  // Images: fetches (encoding when needed) the rows of every image in seq's chunk; false when one could
  // not be encoded (the request has then ended with an error).
  bool FetchImageRows(Sequence* seq, int64_t begin, int64_t n);
  // The prefix-cache keys of seq's tokens[0, len) (image_inputs.h).
  std::span<const int32_t> CacheKeys(const Sequence& seq, int64_t len);
  // Ends every choice of `req` with an error event.
  void FailRequest(RequestState* req, const std::string& error);
  // The model failed (a lost rank): every request ends with an error event marked unavailable, the
  // engine stops and options_.on_fatal hears why.
  void FailAll(const Status& cause);
  void FinishSequence(Sequence* seq, Event* event, FinishReason reason);
  void Emit(Sequence* seq, Event event);
  void RemoveFinished();
  void PublishMetrics();

  model::Model* model_;
  const tokenizer::Tokenizer* tokenizer_;
  EngineOptions options_;
  std::shared_ptr<model::StateOpLog> state_log_;  // slot ops since the last step's plan
  std::unique_ptr<cache::KvCache> cache_;
  const int64_t vocab_;

  // Shared with callers (mu_).
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::unique_ptr<RequestState>> incoming_;
  std::vector<uint64_t> cancels_;
  std::vector<std::function<void(int64_t)>> prefix_resets_;  // ResetPrefixCache callbacks not yet run
  bool sleeping_ = false;                                    // Sleep called, WakeUp not yet (mu_)
  std::vector<std::function<void()>> sleep_waiters_;         // Sleep callbacks until the memory is released
  int64_t queued_ = 0;  // incoming + waiting requests not yet admitted (queue-full check)
  uint64_t next_id_ = 1;
  bool stopping_ = false;
  bool drain_ = true;
  Status fatal_;  // why the engine stopped on its own (a failed forward)
  std::mt19937_64 seed_source_;
  EngineMetrics metrics_;

  // Engine thread only.
  std::unordered_map<uint64_t, std::unique_ptr<RequestState>> requests_;
  std::deque<Sequence*> waiting_;   // FIFO; preempted sequences go back to the front
  std::vector<Sequence*> running_;  // admission order (newest last)
  int64_t prefix_queries_ = 0, prefix_hits_ = 0, prompt_total_ = 0, generation_total_ = 0, preemptions_ = 0;
  model::StepPlan plan_;  // this step's (reused)
  model::ForwardOutput forward_out_;
  std::vector<uint64_t> mask_;
  std::vector<float> logprob_row_;  // one log-softmax row (prompt logprobs)
  EncoderCache encoder_cache_;
  ImageKeyIds image_ids_;
  std::vector<int32_t> key_scratch_;

  std::atomic<bool> alive_{false};
  std::thread thread_;
};

}  // namespace k3::engine
