// Embedding requests (Request::embed): mean pooling of the final-normed hidden rows over the prompt, fed
// chunk by chunk as the prefill runs, then L2 normalisation (vLLM's default for embedding pooling).
//
// Rows are added in position order, one Axpy per row, so a prompt gives the same sum however the
// scheduler chunks it (up to the forward's own chunking noise) and whatever else is in the batch. The
// arithmetic is the kernels' (Axpy, Dot): nothing here loops over floats.
#include <algorithm>
#include <cmath>

#include "src/engine/engine_impl.h"
#include "src/kernels/ops.h"

namespace k3::engine {

void EngineImpl::PoolHidden(Sequence* seq, int64_t first_row) {
  RequestState* req = seq->request;
  const int64_t D = model_->config().hidden_size;
  if (req->pooled_sum.empty()) req->pooled_sum.assign(static_cast<size_t>(D), 0.0f);
  const int64_t done = seq->state->num_tokens();  // position of the chunk's first token
  for (int64_t j = 0; j < seq->chunk; ++j) {
    // forward_out_.final_hidden [rows, D]: row first_row + j is prompt position done + j.
    if (done + j != req->pooled_rows || done + j >= seq->prompt_len) continue;  // pooled before preemption
    const float* row = forward_out_.final_hidden.data() + (first_row + j) * D;
    kernels::Axpy(1.0f, row, req->pooled_sum.data(), static_cast<size_t>(D));
    ++req->pooled_rows;
  }
}

void EngineImpl::FinishEmbedding(Sequence* seq) {
  RequestState* req = seq->request;
  const size_t D = req->pooled_sum.size();
  Event event;
  event.embedding.assign(D, 0.0f);
  // mean = sum / n; normalised: mean / |mean| = sum / |sum| (a zero vector stays zero).
  float scale = 1.0f / static_cast<float>(std::max<int64_t>(req->pooled_rows, 1));
  if (req->request.embed_normalize) {
    const float norm = std::sqrt(kernels::Dot(req->pooled_sum.data(), req->pooled_sum.data(), D));
    scale = norm > 0.0f ? 1.0f / norm : 0.0f;
  }
  kernels::Axpy(scale, req->pooled_sum.data(), event.embedding.data(), D);
  FinishSequence(seq, &event, FinishReason::kStop);
  Emit(seq, std::move(event));
}

}  // namespace k3::engine
