// EmbeddingResponder: the engine's pooled vectors of one /v1/embeddings request -> its response body, as
// vLLM's EmbeddingResponse (data in input order, floats or base64 float32, usage without completion).
#include <bit>
#include <utility>

#include "src/api/embeddings.h"
#include "src/api/errors.h"
#include "src/api/json_dump.h"
#include "src/base/base64.h"

namespace k3::api {

struct EmbeddingResponder::Impl {
  std::string model;
  bool base64 = false;
  std::string id;
  int64_t created = 0;
  std::vector<std::vector<float>> vectors;  // [inputs][hidden_size]
  engine::Usage usage;
  std::optional<ApiError> failure;
};

EmbeddingResponder::EmbeddingResponder(const EmbeddingPlan& plan, const ServerContext&, std::string id,
                                       int64_t created)
    : impl_(std::make_unique<Impl>()) {
  impl_->model = plan.model;
  impl_->base64 = plan.base64;
  impl_->id = std::move(id);
  impl_->created = created;
  impl_->vectors.resize(plan.inputs.size());
}

EmbeddingResponder::~EmbeddingResponder() = default;

std::vector<std::string> EmbeddingResponder::OnEvent(const engine::Event& event) {
  Impl& s = *impl_;
  if (event.choice >= 0 && static_cast<size_t>(event.choice) < s.vectors.size() && !event.embedding.empty())
    s.vectors[static_cast<size_t>(event.choice)] = event.embedding;
  if (event.finish == engine::FinishReason::kError && !s.failure) {
    s.failure = EngineFailure(event.error, event.unavailable);
  } else if (event.finish == engine::FinishReason::kAbort && !s.failure) {
    s.failure = EngineFailure("the embedding request was aborted (the server is shutting down)", true);
  }
  if (event.request_done) s.usage = event.usage;
  return {};
}

std::string EmbeddingResponder::FinalBody() const {
  static_assert(std::endian::native == std::endian::little, "base64 embeddings are little-endian float32");
  const Impl& s = *impl_;
  nlohmann::json data = nlohmann::json::array();
  for (size_t i = 0; i < s.vectors.size(); ++i) {
    const std::vector<float>& v = s.vectors[i];
    nlohmann::json embedding;
    if (s.base64) {
      embedding =
          Base64Encode(std::string_view(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float)));
    } else {
      embedding = v;
    }
    data.push_back({{"object", "embedding"}, {"index", i}, {"embedding", std::move(embedding)}});
  }
  return DumpJson({{"id", s.id},
                   {"object", "list"},
                   {"created", s.created},
                   {"model", s.model},
                   {"data", std::move(data)},
                   {"usage",
                    {{"prompt_tokens", s.usage.prompt_tokens},
                     {"total_tokens", s.usage.prompt_tokens},
                     {"completion_tokens", 0},
                     {"prompt_tokens_details", nullptr}}}});
}

const std::optional<ApiError>& EmbeddingResponder::failure() const { return impl_->failure; }

}  // namespace k3::api
