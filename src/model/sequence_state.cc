// ModelSequenceState: allocation, the MLA block table and copies.
#include "src/model/sequence_state.h"

#include <algorithm>
#include <cstring>

namespace k3::model {

ModelSequenceState::ModelSequenceState(const io::ModelConfig& cfg, CacheDtype cache_dtype)
    : cache_dtype_(cache_dtype) {
  const int64_t H = cfg.kda_num_heads, K = cfg.kda_head_dim, P = cfg.kda_proj_dim();
  const int64_t taps = cfg.short_conv_kernel_size - 1;
  kda_.resize(static_cast<size_t>(cfg.num_kda_layers()));
  for (KdaLayerState& s : kda_) {
    s.recurrent.assign(static_cast<size_t>(H * K * K), 0.0f);
    s.conv_tail.assign(static_cast<size_t>(3 * taps * P), 0.0f);
  }
  mla_row_width_ = cfg.kv_lora_rank + cfg.qk_rope_head_dim;
  num_mla_layers_ = cfg.num_mla_layers();
}

int64_t ModelSequenceState::MlaBlockBytes(const io::ModelConfig& cfg, int64_t block_tokens,
                                          CacheDtype dtype) {
  return cfg.num_mla_layers() * block_tokens * (cfg.kv_lora_rank + cfg.qk_rope_head_dim) *
         CacheDtypeBytes(dtype);
}

int64_t ModelSequenceState::block_bytes() const {
  return std::max<int64_t>(num_mla_layers_ * block_tokens_ * mla_row_width_ * CacheDtypeBytes(cache_dtype_),
                           1);
}

std::unique_ptr<ModelSequenceState> ModelSequenceState::Clone() const {
  auto copy = std::unique_ptr<ModelSequenceState>(new ModelSequenceState());
  copy->num_tokens_ = num_tokens_;
  copy->mla_row_width_ = mla_row_width_;
  copy->num_mla_layers_ = num_mla_layers_;
  copy->block_tokens_ = block_tokens_;
  copy->paged_ = paged_;
  copy->cache_dtype_ = cache_dtype_;
  copy->kda_ = kda_;
  copy->block_ids_ = block_ids_;
  if (paged_) {
    copy->blocks_ = blocks_;
    return copy;
  }
  const size_t bytes = static_cast<size_t>(block_bytes());
  for (const std::byte* block : blocks_) {
    copy->owned_.push_back(std::make_unique<std::byte[]>(bytes));
    std::memcpy(copy->owned_.back().get(), block, bytes);
    copy->blocks_.push_back(copy->owned_.back().get());
  }
  return copy;
}

void ModelSequenceState::ReserveMlaTokens(int64_t tokens) {
  const int64_t have = static_cast<int64_t>(blocks_.size()) * block_tokens_;
  if (tokens <= have) return;
  K3_CHECK(!paged_);  // a paged state's blocks are appended by the pool before Forward
  const size_t bytes = static_cast<size_t>(block_bytes());
  while (static_cast<int64_t>(blocks_.size()) * block_tokens_ < tokens) {
    owned_.push_back(std::make_unique<std::byte[]>(bytes));
    blocks_.push_back(owned_.back().get());
  }
}

void ModelSequenceState::SetExternalMlaBlocks(int64_t block_tokens, CacheDtype dtype) {
  K3_CHECK(num_tokens_ == 0 && blocks_.empty() && block_tokens > 0);
  paged_ = true;
  block_tokens_ = block_tokens;
  cache_dtype_ = dtype;
}

void ModelSequenceState::AppendBlock(int32_t id, std::byte* data) {
  K3_CHECK(paged_);
  blocks_.push_back(data);
  block_ids_.push_back(id);
}

void ModelSequenceState::ReplaceBlock(int64_t index, int32_t id, std::byte* data) {
  K3_CHECK(paged_ && index >= 0 && index < num_blocks());
  blocks_[index] = data;
  block_ids_[index] = id;
}

std::vector<int32_t> ModelSequenceState::ReleaseBlocks() {
  std::vector<int32_t> ids = std::move(block_ids_);
  block_ids_.clear();
  blocks_.clear();
  owned_.clear();
  num_tokens_ = 0;
  return ids;
}

void ModelSequenceState::SetNumTokens(int64_t n) {
  K3_CHECK(n >= 0 && n <= num_blocks() * block_tokens_);
  num_tokens_ = n;
}

}  // namespace k3::model
