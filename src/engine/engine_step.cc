// One engine step: schedule (running sequences first, oldest first; then FIFO admission with prefix-cache
// lookups), one Model::Execute of a StepPlan (the slot ops since the last step + every scheduled chunk),
// prefix snapshots, the n > 1 fork, sampling, stop checks and events.
#include <algorithm>
#include <deque>
#include <string>

#include "src/engine/engine_impl.h"

namespace k3::engine {
namespace {

bool Contains(const std::vector<int32_t>& ids, int32_t id) {
  return std::find(ids.begin(), ids.end(), id) != ids.end();
}

// Prompt chunks of a request with prompt_logprobs return every position's logits ([chunk, vocab] floats):
// a smaller chunk bounds that memory.
constexpr int64_t kPromptLogprobsChunk = 256;

bool CollectsPromptLogprobs(const Sequence& seq) {
  return seq.choice == 0 && !seq.request->forked && seq.request->CollectingPromptLogprobs();
}

// Embedding requests need every prompt position's final hidden row (and so every row's logits: the model
// computes both for all_logits items): the same chunk bound as prompt logprobs.
bool NeedsAllRows(const Sequence& seq) { return seq.request->request.embed || CollectsPromptLogprobs(seq); }

}  // namespace

int64_t EngineImpl::ChunkFor(const Sequence& seq, int64_t budget) const {
  const int64_t done = seq.state->num_tokens();
  int64_t chunk = std::min<int64_t>(static_cast<int64_t>(seq.tokens.size()) - done, budget);
  if (cache_->prefix() != nullptr && done < seq.prompt_len) {
    const int64_t interval = options_.prefix_snapshot_interval;
    const int64_t next =
        interval > 0 ? std::min((done / interval + 1) * interval, seq.prompt_len) : seq.prompt_len;
    chunk = std::min(chunk, next - done);
  }
  if (NeedsAllRows(seq)) chunk = std::min(chunk, kPromptLogprobsChunk);
  return std::max<int64_t>(chunk, 0);
}

void EngineImpl::Preempt(Sequence* seq) {
  cache_->Release(seq->state.get());
  seq->state.reset();
  cache_->ReleaseSlots(seq->slots_held);
  seq->slots_held = 0;
  seq->chunk = 0;
  seq->ready_logits.clear();
  running_.erase(std::find(running_.begin(), running_.end(), seq));
  waiting_.push_front(seq);
  ++preemptions_;
}

bool EngineImpl::ReserveOrPreempt(Sequence* seq, int64_t tokens) {
  while (!cache_->Reserve(seq->state.get(), tokens)) {
    if (cache_->prefix() != nullptr && cache_->prefix()->EvictOne()) continue;
    Sequence* victim = running_.back();
    Preempt(victim);
    if (victim == seq) return false;
  }
  return true;
}

int64_t EngineImpl::ScheduleRunning(int64_t budget) {
  for (size_t i = 0; i < running_.size() && budget > 0; ++i) {
    Sequence* seq = running_[i];
    const int64_t chunk = ChunkFor(*seq, budget);
    if (chunk == 0) continue;
    if (!ReserveOrPreempt(seq, seq->state->num_tokens() + chunk)) break;
    seq->chunk = chunk;
    budget -= chunk;
  }
  return budget;
}

void EngineImpl::AdmitWaiting(int64_t budget) {
  while (!waiting_.empty() && budget > 0) {
    Sequence* seq = waiting_.front();
    RequestState* req = seq->request;
    const int64_t slots = seq->choice == 0 && !req->forked ? req->request.sampling.n : 1;
    if (!cache_->AcquireSlots(slots)) return;
    seq->slots_held = slots;
    seq->state = cache_->NewState();
    int64_t hit = 0;
    if (cache_->prefix() != nullptr && !NeedsAllRows(*seq)) {
      hit = cache_->prefix()->Restore(CacheKeys(*seq, static_cast<int64_t>(seq->tokens.size())),
                                      seq->state.get(), &seq->ready_logits);
    }
    const int64_t chunk = ChunkFor(*seq, budget);
    bool reserved = chunk == 0;
    while (!reserved) {
      reserved = cache_->Reserve(seq->state.get(), seq->state->num_tokens() + chunk);
      if (!reserved && (cache_->prefix() == nullptr || !cache_->prefix()->EvictOne())) break;
    }
    if (!reserved) {  // no room now: stays first in line
      cache_->Release(seq->state.get());
      seq->state.reset();
      seq->ready_logits.clear();
      cache_->ReleaseSlots(slots);
      seq->slots_held = 0;
      return;
    }
    if (!req->admitted_once) {
      req->admitted_once = true;
      req->usage.cached_prompt_tokens = hit;
      prompt_total_ += seq->prompt_len;
      if (cache_->prefix() != nullptr) {
        prefix_queries_ += seq->prompt_len;
        prefix_hits_ += hit;
      }
      std::lock_guard<std::mutex> lock(mu_);
      --queued_;
    }
    seq->chunk = chunk;
    budget -= chunk;
    waiting_.pop_front();
    running_.push_back(seq);
  }
}

void EngineImpl::Fork(RequestState* req) {
  Sequence* leader = req->choices[0].get();
  for (size_t i = 1; i < req->choices.size(); ++i) {
    Sequence* seq = req->choices[i].get();
    seq->state = cache_->Fork(*leader->state);
    seq->slots_held = 1;
    --leader->slots_held;
    if (leader->constraint != nullptr) seq->constraint = leader->constraint->Clone();
    running_.push_back(seq);
  }
  req->forked = true;
}

void EngineImpl::Step() {
  for (Sequence* seq : running_) seq->chunk = 0;
  AdmitWaiting(ScheduleRunning(options_.max_num_batched_tokens));

  std::vector<Sequence*> batch;
  std::vector<int64_t> last_row;  // per batch item: its last logits row (the one sampling uses)
  int64_t rows = 0;
  plan_.items.clear();
  forward_out_.capture_final_hidden = false;
  for (Sequence* seq : running_) {
    if (seq->chunk == 0 || seq->finished) continue;
    const int64_t done = seq->state->num_tokens();
    const std::vector<PromptImage>& images = seq->request->request.images;
    const bool with_images = ChunkHasImages(images, done, seq->chunk);
    if (with_images && !FetchImageRows(seq, done, seq->chunk)) continue;
    const bool all_logits = NeedsAllRows(*seq);
    if (seq->request->request.embed) forward_out_.capture_final_hidden = true;
    plan_.items.push_back(
        seq->state->ToStepItem(std::span<const int32_t>(seq->tokens.data() + done, seq->chunk), all_logits));
    if (with_images) {
      AddImageRuns(images, seq->request->image_rows, done, seq->chunk, model_->config().hidden_size,
                   &plan_.items.back());
    }
    batch.push_back(seq);
    rows += all_logits ? seq->chunk : 1;
    last_row.push_back(rows - 1);
  }
  if (!batch.empty()) {
    plan_.ops = state_log_->Drain();
    const Status forward = model_->Execute(plan_, &forward_out_);
    if (!forward.ok()) return FailAll(forward);
    for (size_t i = 0; i < batch.size(); ++i) {
      Sequence* seq = batch[i];
      if (CollectsPromptLogprobs(*seq)) CollectPromptLogprobs(seq, last_row[i] - (seq->chunk - 1));
      if (seq->request->request.embed) PoolHidden(seq, last_row[i] - (seq->chunk - 1));
      seq->state->Advance(seq->chunk);
    }
  }

  // Sequences whose every token is processed sample now: from this step's logits or restored ones.
  std::vector<std::pair<Sequence*, std::span<const float>>> to_sample;
  std::deque<std::vector<float>> restored;
  for (size_t i = 0; i < batch.size(); ++i) {
    Sequence* seq = batch[i];
    std::span<const float> row(forward_out_.logits.data() + last_row[i] * vocab_, vocab_);
    const int64_t done = seq->state->num_tokens();
    const int64_t interval = options_.prefix_snapshot_interval;
    if (cache_->prefix() != nullptr && done <= seq->prompt_len &&
        (done == seq->prompt_len || (interval > 0 && done % interval == 0))) {
      std::span<const int32_t> prefix = CacheKeys(*seq, done);
      if (!cache_->prefix()->Contains(prefix)) {
        cache_->prefix()->Insert(prefix, *seq->state,
                                 done == seq->prompt_len ? row : std::span<const float>());
      }
    }
    if (seq->request->request.embed) {
      if (done == seq->prompt_len) FinishEmbedding(seq);  // never samples
    } else if (done == static_cast<int64_t>(seq->tokens.size())) {
      to_sample.emplace_back(seq, row);
    }
  }
  for (Sequence* seq : running_) {
    if (seq->chunk == 0 && !seq->ready_logits.empty()) {
      restored.push_back(std::move(seq->ready_logits));
      seq->ready_logits.clear();
      to_sample.emplace_back(seq, std::span<const float>(restored.back()));
    }
  }
  for (const auto& [seq, row] : to_sample) {
    RequestState* req = seq->request;
    if (seq->choice == 0 && !req->forked && req->choices.size() > 1) {
      Fork(req);
      for (auto& choice : req->choices) SampleAndEmit(choice.get(), row);
    } else {
      SampleAndEmit(seq, row);
    }
  }
  RemoveFinished();
}

bool EngineImpl::FetchImageRows(Sequence* seq, int64_t begin, int64_t n) {
  RequestState* req = seq->request;
  const std::vector<PromptImage>& images = req->request.images;
  for (size_t i = 0; i < images.size(); ++i) {
    const PromptImage& image = images[i];
    if (req->image_rows[i] != nullptr || image.first_pad >= begin + n ||
        image.first_pad + image.num_pads <= begin)
      continue;
    Result<ImageRows> rows = encoder_cache_.Rows(image);
    if (!rows.ok()) {
      FailRequest(req, fmt::format("image {} could not be encoded: {}", i, rows.status().message()));
      return false;
    }
    req->image_rows[i] = *std::move(rows);
  }
  return true;
}

std::span<const int32_t> EngineImpl::CacheKeys(const Sequence& seq, int64_t len) {
  return PrefixKeys(seq.tokens, len, seq.request->request.images, image_ids_, &key_scratch_);
}

void EngineImpl::FailAll(const Status& cause) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    fatal_ = cause;
    stopping_ = true;
    drain_ = false;
    while (!incoming_.empty()) {
      std::unique_ptr<RequestState> req = std::move(incoming_.front());
      incoming_.pop_front();
      waiting_.push_back(req->choices[0].get());
      requests_.emplace(req->id, std::move(req));
    }
  }
  for (auto& [id, req] : requests_) {
    for (auto& seq : req->choices) {
      if (seq->finished) continue;
      Event event;
      event.error = "the model is unavailable: " + cause.message();
      event.unavailable = true;
      FinishSequence(seq.get(), &event, FinishReason::kError);
      Emit(seq.get(), std::move(event));
    }
  }
  RemoveFinished();
  if (options_.on_fatal) options_.on_fatal(cause);
}

void EngineImpl::SampleAndEmit(Sequence* seq, std::span<const float> logits) {
  if (seq->finished) return;
  RequestState* req = seq->request;
  const SamplingParams& params = req->request.sampling;
  std::vector<int32_t> banned;
  if (seq->num_generated() < params.min_tokens) {
    banned = params.stop_token_ids;
    if (!params.ignore_eos)
      banned.insert(banned.end(), req->request.eos_token_ids.begin(), req->request.eos_token_ids.end());
  }
  const uint64_t* allowed = nullptr;
  if (seq->constraint != nullptr) {
    mask_.assign(static_cast<size_t>((vocab_ + 63) / 64), 0);
    seq->constraint->FillAllowed(mask_);
    allowed = mask_.data();
  }
  TokenLogprob logprob;
  const int32_t token = seq->sampler->Sample(logits, allowed, banned, &logprob);
  Event event;
  if (token < 0 || (seq->constraint != nullptr && !seq->constraint->Accept(token))) {
    event.error =
        token < 0 ? "no token is allowed at this step (the output constraint and the banned ids exclude all)"
                  : "the output constraint rejected the sampled token " + std::to_string(token);
    FinishSequence(seq, &event, FinishReason::kError);
    Emit(seq, std::move(event));
    return;
  }
  seq->tokens.push_back(token);
  seq->sampler->Accept(token);
  ++generation_total_;
  event.tokens.push_back(token);
  if (params.logprobs >= 0) event.logprobs.push_back(std::move(logprob));
  FinishReason reason = FinishReason::kNone;
  bool matched_string = false;
  if (Contains(params.stop_token_ids, token)) {
    reason = FinishReason::kStop;
    event.stop_reason = std::to_string(token);
  } else if (!params.ignore_eos && Contains(req->request.eos_token_ids, token)) {
    reason = FinishReason::kStop;
  } else {
    Result<std::string> text = seq->decoder->Push(static_cast<tokenizer::TokenId>(token));
    StopStringMatcher::Output out = seq->stop->Push(text.ok() ? *text : std::string());
    event.text = std::move(out.text);
    if (out.matched.has_value()) {
      reason = FinishReason::kStop;
      event.stop_reason = *out.matched;
      matched_string = true;
    }
  }
  if (reason == FinishReason::kNone && (seq->num_generated() >= req->max_tokens ||
                                        static_cast<int64_t>(seq->tokens.size()) >= options_.max_model_len)) {
    reason = FinishReason::kLength;
  }
  if (reason != FinishReason::kNone) {
    if (!matched_string) {
      StopStringMatcher::Output tail = seq->stop->Push(seq->decoder->Flush());
      event.text += tail.text;
      if (!tail.matched.has_value()) event.text += seq->stop->Flush();
    }
    FinishSequence(seq, &event, reason);
  }
  Emit(seq, std::move(event));
}

void EngineImpl::FinishSequence(Sequence* seq, Event* event, FinishReason reason) {
  RequestState* req = seq->request;
  seq->finished = true;
  event->finish = reason;
  if (seq->state != nullptr) {
    cache_->Release(seq->state.get());
    seq->state.reset();
  }
  cache_->ReleaseSlots(seq->slots_held);
  seq->slots_held = 0;
  req->usage.completion_tokens += seq->num_generated();
  if (++req->finished_choices == static_cast<int32_t>(req->choices.size())) {
    event->request_done = true;
    event->usage = req->usage;
    if (!req->admitted_once) {
      std::lock_guard<std::mutex> lock(mu_);
      --queued_;
    }
  }
}

void EngineImpl::CollectPromptLogprobs(Sequence* seq, int64_t first_row) {
  RequestState* req = seq->request;
  const int64_t done = seq->state->num_tokens();  // position of the chunk's first token
  const int32_t k = req->request.sampling.prompt_logprobs;
  for (int64_t j = 0; j < seq->chunk; ++j) {
    // Row j holds the distribution of the token after position done + j.
    const int64_t next = done + j + 1;
    if (next >= seq->prompt_len || next - 1 != static_cast<int64_t>(req->prompt_logprobs.size())) continue;
    const float* row = forward_out_.logits.data() + (first_row + j) * vocab_;
    logprob_row_.assign(row, row + vocab_);
    LogSoftmax(logprob_row_);
    req->prompt_logprobs.push_back(MakeTokenLogprob(logprob_row_, seq->tokens[next], k));
  }
}

void EngineImpl::Emit(Sequence* seq, Event event) {
  event.choice = seq->choice;
  if (!seq->prompt_logprobs_sent && seq->request->request.sampling.prompt_logprobs >= 0) {
    seq->prompt_logprobs_sent = true;
    event.prompt_logprobs = seq->request->prompt_logprobs;
  }
  // Metrics first, so a client that sees the request end also sees its cache released.
  if (event.request_done) PublishMetrics();
  if (seq->request->on_event) seq->request->on_event(event);
}

void EngineImpl::RemoveFinished() {
  std::erase_if(running_, [](const Sequence* s) { return s->finished; });
  std::erase_if(waiting_, [](const Sequence* s) { return s->finished; });
  std::erase_if(requests_, [](const auto& kv) {
    return kv.second->finished_choices == static_cast<int32_t>(kv.second->choices.size());
  });
}

}  // namespace k3::engine
