// ModelSequenceState: allocation, MLA row access and deep copies.
#include "src/model/sequence_state.h"

#include <algorithm>

#include "src/base/check.h"

namespace k3::model {

ModelSequenceState::ModelSequenceState(const io::ModelConfig& cfg) {
  const int64_t H = cfg.kda_num_heads, K = cfg.kda_head_dim, P = cfg.kda_proj_dim();
  const int64_t taps = cfg.short_conv_kernel_size - 1;
  kda_.resize(static_cast<size_t>(cfg.num_kda_layers()));
  for (KdaLayerState& s : kda_) {
    s.recurrent.assign(static_cast<size_t>(H * K * K), 0.0f);
    s.conv_tail.assign(static_cast<size_t>(3 * taps * P), 0.0f);
  }
  mla_row_width_ = cfg.kv_lora_rank + cfg.qk_rope_head_dim;
  mla_.resize(static_cast<size_t>(cfg.num_mla_layers()));
}

std::unique_ptr<SequenceState> ModelSequenceState::Clone() const {
  return std::make_unique<ModelSequenceState>(*this);
}

void ModelSequenceState::ReserveMlaTokens(int64_t tokens) {
  if (tokens <= mla_reserved_tokens_) return;
  // Grow geometrically so a decode loop reallocates O(log n) times.
  int64_t reserved = std::max<int64_t>(tokens, mla_reserved_tokens_ * 2);
  for (std::vector<float>& rows : mla_) rows.resize(static_cast<size_t>(reserved * mla_row_width_));
  mla_reserved_tokens_ = reserved;
}

float* ModelSequenceState::MlaRow(int64_t mla_index, int64_t pos) {
  K3_DCHECK(pos >= 0 && pos < mla_reserved_tokens_);
  return mla_[mla_index].data() + pos * mla_row_width_;
}

const float* ModelSequenceState::MlaRow(int64_t mla_index, int64_t pos) const {
  K3_DCHECK(pos >= 0 && pos < mla_reserved_tokens_);
  return mla_[mla_index].data() + pos * mla_row_width_;
}

}  // namespace k3::model
