// POST /v1/embeddings (OpenAI's embeddings API, as vLLM serves it), over engine requests with
// Request::embed set: the request is a prefill only, nothing is sampled.
//
// Request fields:
//   model                  a served name (another: 404), optional as on the other routes
//   input                  a string, a list of strings, a list of token ids or a list of token-id lists
//                          (at most kMaxCompletionPrompts inputs); an empty list or an empty input is a 400
//   encoding_format        "float" (default): arrays of numbers; "base64": each vector's little-endian
//                          float32 bytes, base64 (what the openai SDKs ask for and decode by default)
//   dimensions             400: the model has no matryoshka representation (vLLM's answer too)
//   user                   accepted, no effect
//   truncate_prompt_tokens vLLM's: k >= 1 keeps each input's last k tokens; -1: the last max_model_len;
//                          above max_model_len: 400
//   add_special_tokens     vLLM's; accepted, no effect (K3's tokenizer adds no BOS/EOS)
//   normalize              vLLM's pooling option: false returns the plain mean (default true)
// Other fields are ignored, as on the other routes. An input longer than max_model_len is a 400.
//
// Response: {"id": "embd-...", "object": "list", "created", "model", "data": [{"object": "embedding",
// "index": i, "embedding": [D floats] or "base64..."}], "usage": {"prompt_tokens", "total_tokens",
// "completion_tokens": 0, "prompt_tokens_details": null}}. Each vector is the mean over the input's
// positions of the model's final-normed hidden state (what lm_head multiplies), L2-normalised
// (src/engine/embedding_pool.cc).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "src/api/openai.h"

namespace k3::api {

struct EmbeddingPlan {
  std::vector<std::vector<int32_t>> inputs;  // token ids of each input, in index order
  std::string model;
  bool base64 = false;  // encoding_format "base64"
  bool normalize = true;
  int64_t prompt_tokens = 0;  // over all inputs
  bool stream = false;        // (never; the server's Generation reads these two)
  int32_t n = 1;
};
std::optional<EmbeddingPlan> ParseEmbedding(std::string_view body, const ServerContext& ctx, ApiError* error);
// One engine request (embed) per input, in index order.
std::vector<engine::Request> EmbeddingRequests(const EmbeddingPlan& plan);

// Engine events of the requests of one plan (event.choice = input index) -> the response body.
class EmbeddingResponder {
 public:
  static constexpr bool kDoneMarker = false;  // never streams
  EmbeddingResponder(const EmbeddingPlan& plan, const ServerContext& ctx, std::string id, int64_t created);
  ~EmbeddingResponder();
  std::vector<std::string> OnEvent(const engine::Event& event);  // always empty (no streaming)
  std::string FinalBody() const;
  const std::optional<ApiError>& failure() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace k3::api
