// Greedy decoding and top-k of a logits row.
#include "src/model/greedy.h"

#include <algorithm>
#include <numeric>

#include "src/model/sequences.h"

namespace k3::model {

std::vector<std::pair<int32_t, float>> TopLogits(std::span<const float> logits, int64_t k) {
  std::vector<int32_t> ids(logits.size());
  std::iota(ids.begin(), ids.end(), 0);
  const size_t top = static_cast<size_t>(std::clamp<int64_t>(k, 0, static_cast<int64_t>(ids.size())));
  std::partial_sort(ids.begin(), ids.begin() + top, ids.end(), [&](int32_t a, int32_t b) {
    return logits[a] != logits[b] ? logits[a] > logits[b] : a < b;
  });
  std::vector<std::pair<int32_t, float>> out;
  for (size_t i = 0; i < top; ++i) out.emplace_back(ids[i], logits[ids[i]]);
  return out;
}

Result<std::vector<int32_t>> GreedyGenerate(Model& model, std::span<const int32_t> prompt, int64_t max_new,
                                            const StepCallback& on_step, const ForwardCallback& on_forward,
                                            const std::vector<EmbeddingRun>& prompt_embeddings) {
  const int64_t N = model.config().vocab_size;
  if (prompt.empty()) return InvalidArgument("the prompt is empty; give at least one token id");
  for (int32_t id : prompt) {
    if (id < 0 || id >= N) {
      return InvalidArgument("token id {} is outside the model's vocabulary [0, {})", id, N);
    }
  }
  Sequences sequences(model);
  const int32_t seq = sequences.New();
  ForwardOutput out;
  out.capture_hidden = static_cast<bool>(on_forward);
  SequenceBatchItem item{seq, prompt, /*all_logits=*/true, prompt_embeddings};
  K3_RETURN_IF_ERROR(sequences.Forward(std::span<const SequenceBatchItem>(&item, 1), &out));
  if (on_forward) on_forward(out);
  for (int64_t i = 0; i < out.rows; ++i) {
    if (on_step) on_step(i, prompt[i], std::span<const float>(out.logits.data() + i * N, N));
  }
  std::vector<int32_t> generated;
  std::span<const float> last(out.logits.data() + (out.rows - 1) * N, N);
  for (int64_t step = 0; step < max_new; ++step) {
    const int32_t next = TopLogits(last, 1)[0].first;
    generated.push_back(next);
    if (step + 1 == max_new) break;  // the last token's successor is not needed
    SequenceBatchItem decode{seq, std::span<const int32_t>(&generated.back(), 1), false};
    K3_RETURN_IF_ERROR(sequences.Forward(std::span<const SequenceBatchItem>(&decode, 1), &out));
    if (on_forward) on_forward(out);
    last = std::span<const float>(out.logits.data(), N);
    if (on_step) on_step(sequences.num_tokens(seq) - 1, next, last);
  }
  return generated;
}

}  // namespace k3::model
