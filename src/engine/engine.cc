// Engine::Create and EngineImpl's thread-facing half: validation in Submit, Cancel, Shutdown, Metrics and
// the engine thread's loop (engine_step.cc has one step).
#include <algorithm>

#include "src/engine/engine_impl.h"

namespace k3::engine {

const char* FinishReasonName(FinishReason reason) {
  switch (reason) {
    case FinishReason::kNone:
      return "";
    case FinishReason::kStop:
      return "stop";
    case FinishReason::kLength:
      return "length";
    case FinishReason::kAbort:
      return "abort";
    case FinishReason::kError:
      return "error";
  }
  return "";
}

Result<std::unique_ptr<Engine>> Engine::Create(model::Model* model, const tokenizer::Tokenizer* tokenizer,
                                               EngineOptions options) {
  if (model == nullptr || tokenizer == nullptr)
    return InvalidArgument("the engine needs a model and a tokenizer");
  if (options.max_num_seqs < 1 || options.max_num_seqs > kMaxNumSeqs)
    return InvalidArgument("max_num_seqs must be in [1, {}]", kMaxNumSeqs);
  if (options.max_num_batched_tokens < 1) return InvalidArgument("max_num_batched_tokens must be at least 1");
  if (options.block_tokens < 1 || options.block_tokens > model::kMaxBlockTokens)
    return InvalidArgument("block_tokens must be in [1, {}]", model::kMaxBlockTokens);
  if (options.prefix_snapshot_interval < 0) return InvalidArgument("prefix_snapshot_interval must be >= 0");
  if (options.max_waiting < 0) return InvalidArgument("max_waiting must be >= 0");
  if (options.kv_cache_bytes <= 0) options.kv_cache_bytes = int64_t{1} << 30;
  const io::ModelConfig& cfg = model->config();
  if (!model->ClaimForEngine())
    return InvalidArgument("the model is driven by another engine already (one engine per model)");
  struct Unclaim {
    model::Model* model;
    ~Unclaim() {
      if (model != nullptr) model->ReleaseFromEngine();
    }
  } unclaim{model};                     // until the engine below owns the claim
  cache::KvCacheOptions cache_options;  // sized for what this rank's states hold
  cache_options.bytes = options.kv_cache_bytes;
  cache_options.block_tokens = options.block_tokens;
  cache_options.max_seqs = options.max_num_seqs;
  cache_options.prefix_caching = options.enable_prefix_caching;
  cache_options.cache_dtype = options.kv_cache_dtype;
  auto state_log = std::make_shared<model::StateOpLog>();
  K3_ASSIGN_OR_RETURN(std::unique_ptr<cache::KvCache> kv,
                      cache::KvCache::Create(model->state_config(), cache_options, state_log));
  int64_t limit = kv->max_tokens_per_sequence();
  if (cfg.max_position_embeddings > 0) limit = std::min(limit, cfg.max_position_embeddings);
  if (options.max_model_len == 0) {
    options.max_model_len = limit;
  } else if (options.max_model_len < 2 || options.max_model_len > limit) {
    return InvalidArgument(
        "max_model_len {} is not in [2, {}] (the model's context and what the KV cache budget of {} bytes "
        "holds for one sequence)",
        options.max_model_len, limit, options.kv_cache_bytes);
  }
  options.max_num_seqs =
      static_cast<int32_t>(std::min<int64_t>(options.max_num_seqs, kv->layout().num_slots));
  unclaim.model = nullptr;
  return std::unique_ptr<Engine>(
      std::make_unique<EngineImpl>(model, tokenizer, options, std::move(state_log), std::move(kv)));
}

EngineImpl::EngineImpl(model::Model* model, const tokenizer::Tokenizer* tokenizer, EngineOptions options,
                       std::shared_ptr<model::StateOpLog> state_log, std::unique_ptr<cache::KvCache> cache)
    : model_(model),
      tokenizer_(tokenizer),
      options_(options),
      state_log_(std::move(state_log)),
      cache_(std::move(cache)),
      vocab_(model->config().vocab_size),
      seed_source_(options_.seed.has_value() ? *options_.seed : std::random_device{}()),
      encoder_cache_(options_.image_encoder, options_.encoder_cache_bytes) {
  alive_ = true;
  thread_ = std::thread([this] { Loop(); });
}

EngineImpl::~EngineImpl() {
  Shutdown(false);
  // Free the model slots this engine made (sequences, prefix snapshots), so the model can serve another
  // engine later; not after a failed step (the model's states are unusable then).
  waiting_.clear();
  running_.clear();
  requests_.clear();
  cache_.reset();
  (void)FlushStateOps();  // a group already shut down refuses it: nothing left to free then
  model_->ReleaseFromEngine();
}

Result<uint64_t> EngineImpl::Submit(Request request, EventCallback on_event) {
  const SamplingParams& sp = request.sampling;
  const int64_t prompt_len = static_cast<int64_t>(request.prompt.size());
  if (prompt_len == 0) return InvalidArgument("the prompt is empty; give at least one token");
  for (int32_t id : request.prompt) {
    if (id < 0 || id >= vocab_) return InvalidArgument("prompt token id {} is outside [0, {})", id, vocab_);
  }
  for (int32_t id : sp.stop_token_ids) {
    if (id < 0 || id >= vocab_) return InvalidArgument("stop token id {} is outside [0, {})", id, vocab_);
  }
  for (const auto& [id, bias] : sp.logit_bias) {
    if (id < 0 || id >= vocab_)
      return InvalidArgument("logit_bias token id {} is outside [0, {})", id, vocab_);
  }
  if (sp.n < 1 || sp.n > options_.max_num_seqs) {
    return InvalidArgument("n is {} but must be in [1, {}] (max_num_seqs)", sp.n, options_.max_num_seqs);
  }
  if (sp.max_tokens < 0) return InvalidArgument("max_tokens must be >= 0");
  if (sp.logprobs < -1 || sp.logprobs > vocab_ || sp.prompt_logprobs < -1 || sp.prompt_logprobs > vocab_)
    return InvalidArgument("logprobs and prompt_logprobs must be in [-1, {}]", vocab_);
  if (request.embed) {
    if (sp.n != 1) return InvalidArgument("an embedding request has one choice (n = 1), not {}", sp.n);
    if (prompt_len > options_.max_model_len) {
      return InvalidArgument(
          "this model's maximum context length is {} tokens; the input for embedding has {} tokens",
          options_.max_model_len, prompt_len);
    }
  } else if (prompt_len >= options_.max_model_len) {
    return InvalidArgument(
        "this model's maximum context length is {} tokens; the prompt has {} tokens, leaving no room for "
        "output",
        options_.max_model_len, prompt_len);
  }
  if (!request.embed && prompt_len + sp.max_tokens > options_.max_model_len) {
    return InvalidArgument(
        "this model's maximum context length is {} tokens; the prompt has {} tokens and max_tokens is {} "
        "({} in total)",
        options_.max_model_len, prompt_len, sp.max_tokens, prompt_len + sp.max_tokens);
  }
  K3_RETURN_IF_ERROR(ValidatePromptImages(request.images, prompt_len, options_.image_encoder));
  auto req = std::make_unique<RequestState>();
  req->image_rows.resize(request.images.size());
  req->request = std::move(request);
  req->on_event = std::move(on_event);
  req->max_tokens = req->request.embed  ? 0
                    : sp.max_tokens > 0 ? sp.max_tokens
                                        : options_.max_model_len - prompt_len;
  req->usage.prompt_tokens = prompt_len;
  std::unique_lock<std::mutex> lock(mu_);
  if (stopping_) return Unavailable("the engine is shutting down; the request was not queued");
  if (sleeping_) {
    return Unavailable("the engine is sleeping (POST /sleep); POST /wake_up before sending requests");
  }
  if (queued_ >= options_.max_waiting) {
    return Status(StatusCode::kResourceExhausted,
                  fmt::format("the engine's queue is full ({} waiting requests); retry later", queued_));
  }
  req->id = next_id_++;
  req->seed = req->request.sampling.seed.has_value() ? *req->request.sampling.seed : seed_source_();
  const SamplingParams& params = req->request.sampling;
  for (int32_t i = 0; i < params.n; ++i) {
    auto seq = std::make_unique<Sequence>();
    seq->request = req.get();
    seq->choice = i;
    seq->tokens = req->request.prompt;
    seq->prompt_len = prompt_len;
    seq->sampler =
        std::make_unique<Sampler>(params, req->seed + static_cast<uint64_t>(i), req->request.prompt);
    tokenizer::DecodeOptions decode;
    decode.skip_special_tokens = params.skip_special_tokens;
    decode.spaces_between_special_tokens = params.spaces_between_special_tokens;
    decode.keep.assign(req->request.keep_special_ids.begin(), req->request.keep_special_ids.end());
    seq->decoder = std::make_unique<tokenizer::IncrementalDecoder>(*tokenizer_, std::move(decode));
    seq->stop = std::make_unique<StopStringMatcher>(params.stop);
    req->choices.push_back(std::move(seq));
  }
  req->choices[0]->constraint = std::move(req->request.constraint);
  const uint64_t id = req->id;
  incoming_.push_back(std::move(req));
  ++queued_;
  lock.unlock();
  cv_.notify_one();
  return id;
}

void EngineImpl::Cancel(uint64_t request_id) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    cancels_.push_back(request_id);
  }
  cv_.notify_one();
}

bool EngineImpl::ResetPrefixCache(std::function<void(int64_t dropped)> done) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return false;
    prefix_resets_.push_back(std::move(done));
  }
  cv_.notify_one();
  return true;
}

bool EngineImpl::Sleep(std::function<void()> done) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return false;
    sleeping_ = true;
    sleep_waiters_.push_back(std::move(done));
  }
  cv_.notify_one();
  return true;
}

void EngineImpl::WakeUp() {
  std::lock_guard<std::mutex> lock(mu_);
  sleeping_ = false;
}

bool EngineImpl::IsSleeping() const {
  std::lock_guard<std::mutex> lock(mu_);
  return sleeping_;
}

EngineMetrics EngineImpl::Metrics() const {
  std::lock_guard<std::mutex> lock(mu_);
  EngineMetrics m = metrics_;
  m.num_waiting += static_cast<int64_t>(incoming_.size());
  return m;
}

void EngineImpl::Shutdown(bool drain) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!stopping_) drain_ = drain;
    if (!drain) drain_ = false;
    stopping_ = true;
  }
  cv_.notify_one();
  if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
}

void EngineImpl::Loop() {
  for (;;) {
    std::vector<uint64_t> cancels;
    std::vector<std::function<void(int64_t)>> prefix_resets;
    std::vector<std::function<void()>> sleep_waiters;
    bool stopping = false, drain = true;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] {
        return stopping_ || !incoming_.empty() || !cancels_.empty() || !prefix_resets_.empty() || HasWork() ||
               (!sleep_waiters_.empty() && !HasWork());
      });
      while (!incoming_.empty()) {
        std::unique_ptr<RequestState> req = std::move(incoming_.front());
        incoming_.pop_front();
        waiting_.push_back(req->choices[0].get());
        const uint64_t id = req->id;
        requests_.emplace(id, std::move(req));
      }
      cancels.swap(cancels_);
      prefix_resets.swap(prefix_resets_);
      // Sleep takes effect once the requests queued before it are done.
      if (!HasWork()) sleep_waiters.swap(sleep_waiters_);
      stopping = stopping_;
      drain = drain_;
    }
    for (uint64_t id : cancels) {
      auto it = requests_.find(id);
      if (it != requests_.end()) AbortRequest(it->second.get());
    }
    if (stopping && !drain) {
      for (auto& [id, req] : requests_) AbortRequest(req.get());
    }
    RemoveFinished();
    for (auto& done : prefix_resets) {
      int64_t dropped = 0;
      while (cache_->prefix() != nullptr && cache_->prefix()->EvictOne()) ++dropped;
      done(dropped);
    }
    if (!sleep_waiters.empty()) {
      while (cache_->prefix() != nullptr && cache_->prefix()->EvictOne()) {
      }
      state_log_->ReleaseBlocks();
      const Status released = FlushStateOps();
      if (!released.ok()) FailAll(released);
      for (auto& done : sleep_waiters) done();
    }
    if (stopping && !HasWork()) break;
    if (HasWork()) Step();
    if (!HasWork()) {
      const Status flushed = FlushStateOps();
      if (!flushed.ok()) FailAll(flushed);
    }
    PublishMetrics();
  }
  PublishMetrics();
  alive_ = false;
}

Status EngineImpl::FlushStateOps() {
  if (!fatal_.ok()) return OkStatus();
  model::StepPlan plan;
  plan.ops = state_log_->Drain();
  if (plan.ops.empty()) return OkStatus();
  return model_->Execute(plan, &forward_out_);
}

void EngineImpl::AbortRequest(RequestState* req) {
  for (auto& seq : req->choices) {
    if (seq->finished) continue;
    Event event;
    FinishSequence(seq.get(), &event, FinishReason::kAbort);
    Emit(seq.get(), std::move(event));
  }
}

void EngineImpl::FailRequest(RequestState* req, const std::string& error) {
  for (auto& seq : req->choices) {
    if (seq->finished) continue;
    Event event;
    event.error = error;
    FinishSequence(seq.get(), &event, FinishReason::kError);
    Emit(seq.get(), std::move(event));
  }
}

void EngineImpl::PublishMetrics() {
  std::vector<const RequestState*> running_requests, waiting_requests;
  for (const Sequence* seq : running_)
    if (!seq->finished) running_requests.push_back(seq->request);
  for (const Sequence* seq : waiting_)
    if (!seq->finished) waiting_requests.push_back(seq->request);
  auto distinct = [](std::vector<const RequestState*>& v) {
    std::sort(v.begin(), v.end());
    return static_cast<int64_t>(std::unique(v.begin(), v.end()) - v.begin());
  };
  std::lock_guard<std::mutex> lock(mu_);
  metrics_.num_running = distinct(running_requests);
  metrics_.num_waiting = distinct(waiting_requests);
  metrics_.kv_cache_usage = cache_->Usage();
  metrics_.prefix_cache_queries = prefix_queries_;
  metrics_.prefix_cache_hits = prefix_hits_;
  metrics_.prompt_tokens_total = prompt_total_;
  metrics_.generation_tokens_total = generation_total_;
  metrics_.preemptions_total = preemptions_;
  metrics_.images_encoded_total = encoder_cache_.encoded();
  metrics_.encoder_cache_hits_total = encoder_cache_.hits();
}

}  // namespace k3::engine
