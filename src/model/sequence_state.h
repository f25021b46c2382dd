// ModelSequenceState: the concrete per-sequence decode state behind model.h's SequenceState.
//
// Per KDA layer: the recurrent state S [H, K, V] fp32 (zero at sequence start) and the conv tails
// [3, W-1, P] fp32 (the q, k, v pre-conv projection rows of the last W-1 tokens, oldest first; zero at
// sequence start). Per MLA layer: the latent cache, one row [R + Rp] per processed token holding the
// normalised c (R) and the shared rope-slot key k_pe (Rp), bf16-valued floats.
// MLA rows are reached only through MlaRow(), so a paged cache can replace the contiguous one.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "src/io/model_config.h"
#include "src/model/model.h"

namespace k3::model {

struct KdaLayerState {
  std::vector<float> recurrent;  // [H, K, V]
  std::vector<float> conv_tail;  // [3, W-1, P]: q, k, v
};

class ModelSequenceState final : public SequenceState {
 public:
  explicit ModelSequenceState(const io::ModelConfig& cfg);

  int64_t num_tokens() const override { return num_tokens_; }
  std::unique_ptr<SequenceState> Clone() const override;

  KdaLayerState& kda(int64_t kda_index) { return kda_[kda_index]; }
  // Makes room for `tokens` cached rows in every MLA layer (rows past num_tokens() are scratch until
  // Advance covers them).
  void ReserveMlaTokens(int64_t tokens);
  // Latent row [R + Rp] of MLA layer `mla_index` at position `pos` (< reserved tokens).
  float* MlaRow(int64_t mla_index, int64_t pos);
  const float* MlaRow(int64_t mla_index, int64_t pos) const;
  int64_t mla_row_width() const { return mla_row_width_; }
  // Marks n more tokens as processed.
  void Advance(int64_t n) { num_tokens_ += n; }

 private:
  int64_t num_tokens_ = 0;
  int64_t mla_row_width_ = 0;
  int64_t mla_reserved_tokens_ = 0;
  std::vector<KdaLayerState> kda_;
  std::vector<std::vector<float>> mla_;  // per MLA layer: [reserved tokens, R + Rp]
};

}  // namespace k3::model
