// Engine: the facade the server talks to. One engine thread owns the model; HTTP threads only call
// Submit / Cancel / Metrics, which are thread-safe.
//
//   auto engine = Engine::Create(model, tokenizer, options);          // starts the engine thread
//   auto id = engine->Submit(std::move(request), [](const Event& e) { /* engine thread: post it on */ });
//   engine->Cancel(*id);                                            // client went away
//
// Each step the scheduler admits waiting requests (FIFO) within the memory budget, looks up the prefix
// cache, builds one StepPlan (the state-slot ops since the last step, then a batch of prefill chunks within
// the token budget and decode tokens, by slot id), has the model execute it, samples every sequence (with its
// TokenConstraint mask), detokenises, checks stop conditions and emits Events. A full cache preempts the
// newest running sequence (recompute later). Embedding requests (Request::embed) are scheduled the same
// way but only prefill: their final hidden rows are mean-pooled (embedding_pool.cc) and nothing is sampled.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "src/base/status.h"
#include "src/chat/token_constraint.h"
#include "src/model/cache_dtype.h"
#include "src/model/model.h"
#include "src/tokenizer/tokenizer.h"

namespace k3::engine {

// OpenAI / vLLM sampling parameters (already validated by src/api).
struct SamplingParams {
  float temperature = 1.0f;  // 0: greedy
  float top_p = 1.0f;        // (0, 1]
  int32_t top_k = 0;         // 0 or -1: off
  float min_p = 0.0f;
  float presence_penalty = 0.0f;
  float frequency_penalty = 0.0f;
  float repetition_penalty = 1.0f;
  std::optional<uint64_t> seed;         // set: the choice's samples are reproducible (choice i uses seed + i)
  std::vector<std::string> stop;        // stop strings (not included in the output text)
  std::vector<int32_t> stop_token_ids;  // extra ids that end a choice (included in tokens, not text)
  int64_t max_tokens = 0;               // 0: up to max_model_len - prompt length
  bool ignore_eos = false;
  int64_t min_tokens = 0;  // eos / stop ids masked until this many tokens
  int32_t logprobs = -1;   // -1: none; k >= 0: the sampled token's logprob + top k
  // -1: none; k >= 0: every prompt token's logprob (given the tokens before it) + top k, as vLLM's
  // prompt_logprobs and echo + logprobs. Such a request skips the prefix cache (every position is computed).
  int32_t prompt_logprobs = -1;
  std::vector<std::pair<int32_t, float>> logit_bias;  // added to logits before sampling
  int32_t n = 1;  // choices, each its own sequence (prompt shared via cache)
  // Detokenisation (vLLM's fields; these defaults keep every special's name in the text, vLLM's are true):
  bool skip_special_tokens = false;            // specials add no text (except Request::keep_special_ids)
  bool spaces_between_special_tokens = false;  // a rendered special is set apart by spaces
};

// One image's pixels as the image processor left them (src/image): what the tower encodes.
struct ImagePixels {
  std::vector<float> patches;  // [grid_h * grid_w, 3 * patch * patch]
  int64_t grid_h = 0;
  int64_t grid_w = 0;
};

// An image in the prompt: the run of <|media_pad|> ids whose embedding rows its encoding replaces.
struct PromptImage {
  int64_t first_pad = 0;  // prompt position of the first pad
  int64_t num_pads = 0;   // = the encoder's output rows for the grid
  // Identifies the pixels (a hash of the image bytes and the processor settings): images with equal keys
  // encode to the same rows, so the encoder cache and the prefix cache share them; different keys never
  // share a prefix.
  std::string content_key;
  std::shared_ptr<const ImagePixels> pixels;
};

struct Request {
  std::vector<int32_t> prompt;  // rendered ids, non-empty
  SamplingParams sampling;
  std::vector<int32_t> eos_token_ids;                 // end a choice unless ignore_eos (e.g. <|end_of_msg|>)
  std::unique_ptr<chat::TokenConstraint> constraint;  // optional; cloned per choice
  std::string client_id;                              // X-Request-Id / log tag (may be empty)
  std::vector<int32_t> keep_special_ids;  // specials rendered as they are whatever the options (the chat
                                          // markup its output parser reads)
  // An embedding request (POST /v1/embeddings): prefill only, no token is sampled or generated. Its one
  // event carries the mean over the prompt positions of the final-normed hidden rows (what lm_head
  // multiplies), L2-normalised when embed_normalize. Needs n = 1; sampling and max_tokens are ignored; the
  // prompt may fill max_model_len. Skips the prefix cache (every position is computed).
  bool embed = false;
  bool embed_normalize = true;
  // Images in the prompt, in prompt order, not overlapping (needs EngineOptions::image_encoder). Each is
  // encoded once, on the engine thread, before the first prefill chunk that reaches its pads.
  std::vector<PromptImage> images;
};

enum class FinishReason { kNone, kStop, kLength, kAbort, kError };
const char* FinishReasonName(FinishReason reason);  // "stop", "length", "abort", "error"

struct TopLogprob {
  int32_t token = 0;
  float logprob = 0.0f;
};
struct TokenLogprob {
  int32_t token = 0;
  float logprob = 0.0f;         // of the sampled token, from the distribution before sampling filters
  std::vector<TopLogprob> top;  // k most likely, descending
  int32_t rank = 1;             // 1 + the number of ids more likely than it (vLLM's rank)
};

// Usage of the whole request (all choices).
struct Usage {
  int64_t prompt_tokens = 0;
  int64_t cached_prompt_tokens = 0;  // prompt tokens served from the prefix cache (first choice)
  int64_t completion_tokens = 0;     // summed over choices
};

// Delivered in order per request, on the engine thread. Keep the callback short (copy and post).
struct Event {
  int32_t choice = 0;                  // 0 .. n-1
  std::vector<int32_t> tokens;         // tokens generated since the previous event of this choice
  std::string text;                    // their text (UTF-8 complete; stop strings cut; held-back bytes
                                       // of a possible stop-string prefix come later)
  std::vector<TokenLogprob> logprobs;  // one per token when requested
  // With prompt_logprobs, on the first event of each choice: entry i is prompt token i + 1's logprob and
  // top k (the first prompt token has none), prompt length - 1 entries.
  std::vector<TokenLogprob> prompt_logprobs;
  FinishReason finish = FinishReason::kNone;  // set on the choice's last event
  std::string stop_reason;                    // the matched stop string or stop id (as decimal text), if any
  std::string error;                          // with kError
  bool unavailable = false;   // with kError: the model itself failed (HTTP 503), not the request
  bool request_done = false;  // last event of the whole request (all choices finished)
  // With Request::embed, on the request's one event (finish kStop): the pooled vector [hidden_size].
  std::vector<float> embedding;
  Usage usage;  // filled when request_done
};
using EventCallback = std::function<void(const Event&)>;

// Most running sequences an engine takes (its model slots come from one StateOpLog range, with room for
// the prefix cache's snapshots).
inline constexpr int32_t kMaxNumSeqs = 1 << 15;

struct EngineOptions {
  int64_t max_model_len = 0;              // 0: the model's context (config) capped by the cache
  int32_t max_num_seqs = 64;              // running sequences
  int64_t max_num_batched_tokens = 2048;  // tokens per step (prefill chunks + decodes)
  int64_t kv_cache_bytes = 0;             // MLA blocks + KDA slots + snapshots; 0: 1 GiB
  int32_t block_tokens = 16;              // MLA cache block size
  model::CacheDtype kv_cache_dtype = model::CacheDtype::kBf16;  // what the MLA blocks store
  bool enable_prefix_caching = true;
  int64_t prefix_snapshot_interval = 256;  // KDA state snapshot every N prompt tokens
  int32_t max_waiting = 1024;              // queued requests beyond this: Submit fails (HTTP 429)
  // Seeds the seeds of requests that give none (vLLM's --seed): the same requests in the same order
  // sample the same tokens run after run. Unset: random.
  std::optional<uint64_t> seed;
  // Called once on the engine thread when a forward fails (a sharded model lost a rank); the engine has
  // failed every request and stops. The server answers 503 from then on and exits non-zero.
  std::function<void(const Status&)> on_fatal;
  // The vision tower (Model::image_encoder()); null: requests with images are refused.
  model::ImageEncoder* image_encoder = nullptr;
  // Encoded images kept for reuse (n > 1 recomputes, retries, the same image again), least recently used
  // dropped first; 0: only while a request needs them.
  int64_t encoder_cache_bytes = int64_t{256} << 20;
};

struct EngineMetrics {
  int64_t num_running = 0;
  int64_t num_waiting = 0;
  double kv_cache_usage = 0.0;       // 0..1, blocks + slots in use by running sequences
  int64_t prefix_cache_queries = 0;  // tokens looked up (cumulative)
  int64_t prefix_cache_hits = 0;     // tokens found (cumulative)
  int64_t prompt_tokens_total = 0;
  int64_t generation_tokens_total = 0;
  int64_t preemptions_total = 0;
  int64_t images_encoded_total = 0;      // encoder runs
  int64_t encoder_cache_hits_total = 0;  // images served from the encoder cache
};

class Engine {
 public:
  virtual ~Engine() = default;
  // The model and tokenizer must outlive the engine. Starts the engine thread.
  static Result<std::unique_ptr<Engine>> Create(model::Model* model, const tokenizer::Tokenizer* tokenizer,
                                                EngineOptions options);

  // Queues a request. Errors: kInvalidArgument (empty prompt, prompt + max_tokens over max_model_len,
  // token id out of range), kResourceExhausted (waiting queue full: HTTP 429), kUnavailable after
  // Shutdown and while asleep (HTTP 503). The callback is called on the engine thread for every Event.
  virtual Result<uint64_t> Submit(Request request, EventCallback on_event) = 0;
  // Ends the request's choices with kAbort at the next step and frees their cache. Unknown ids: no-op.
  virtual void Cancel(uint64_t request_id) = 0;
  virtual EngineMetrics Metrics() const = 0;
  // Drops every prefix-cache snapshot (vLLM's POST /reset_prefix_cache); running requests keep their own
  // blocks. `done` runs on the engine thread with the number of snapshots dropped (0 without a prefix
  // cache), or not at all when the engine has stopped: returns false then.
  virtual bool ResetPrefixCache(std::function<void(int64_t dropped)> done) = 0;
  // Sleep mode (vLLM's POST /sleep, /wake_up, GET /is_sleeping): from the call on, Submit refuses new
  // requests (kUnavailable, "the engine is sleeping": HTTP 503); once the requests already queued have
  // finished, the prefix cache is dropped and the model frees its paged cache memory, then `done` runs on the
  // engine thread. False (and `done` never runs) when the engine has stopped. WakeUp takes requests again
  // (the memory is allocated again as they need it).
  virtual bool Sleep(std::function<void()> done) = 0;
  virtual void WakeUp() = 0;
  virtual bool IsSleeping() const = 0;
  // True while the engine thread is running its loop.
  virtual bool Alive() const = 0;
  virtual const EngineOptions& options() const = 0;  // with defaults resolved (max_model_len etc.)
  // Stops admitting; `drain` true: running and waiting requests finish first; false: they end kAbort.
  // Joins the engine thread. Idempotent.
  virtual void Shutdown(bool drain) = 0;
};

}  // namespace k3::engine
