// ModelSequenceState: one slot's per-sequence decode state, owned by the model (state_slots.h).
//
// Per KDA layer: the recurrent state S [H, K, V] fp32 (zero at sequence start) and the conv tails
// [3, W-1, P] fp32 (the q, k, v pre-conv projection rows of the last W-1 tokens, oldest first; zero at
// sequence start). Per MLA layer: the latent cache, one row [R + Rp] per processed token holding the
// normalised c (R) and the shared rope-slot key k_pe (Rp), bf16 values stored as bf16 (2 bytes, the
// default) or as fp32 (4 bytes; cache_dtype.h).
//
// The MLA cache is paged: a block table maps position p to block p / block_tokens, and each block holds
// [num_mla_layers, block_tokens, R + Rp] values of the cache dtype (MlaBlockBytes). A standalone state (the
// default) owns its blocks and grows them on demand; a paged state (SetExternalMlaBlocks) is given its blocks
// by its slot table (state_slots.h) from each plan's block table: the engine's KV cache chooses the block
// ids, counts references and orders copy-on-write copies; the block memory stays here, on the model side. MLA
// rows are reached only through MlaRowBf16() / MlaRowF32(), whichever matches cache_dtype().
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "src/base/bf16.h"
#include "src/base/check.h"
#include "src/io/model_config.h"
#include "src/kernels/latent_rows.h"
#include "src/model/cache_dtype.h"

namespace k3::model {

struct KdaLayerState {
  std::vector<float> recurrent;  // [H, K, V]
  std::vector<float> conv_tail;  // [3, W-1, P]: q, k, v
};

class ModelSequenceState {
 public:
  // Block size of standalone states.
  static constexpr int64_t kStandaloneBlockTokens = 64;

  explicit ModelSequenceState(const io::ModelConfig& cfg, CacheDtype cache_dtype = CacheDtype::kBf16);
  ModelSequenceState(const ModelSequenceState&) = delete;
  ModelSequenceState& operator=(const ModelSequenceState&) = delete;

  // Number of tokens already processed (the next token's position).
  int64_t num_tokens() const { return num_tokens_; }
  // Standalone: a deep copy. Paged: KDA state copied, the block table shared (the KV cache counts the
  // extra references; a block is written in place only while one table refers to it).
  std::unique_ptr<ModelSequenceState> Clone() const;

  int64_t num_kda_layers() const { return static_cast<int64_t>(kda_.size()); }
  KdaLayerState& kda(int64_t kda_index) { return kda_[kda_index]; }
  const KdaLayerState& kda(int64_t kda_index) const { return kda_[kda_index]; }

  // Makes room for `tokens` cached rows in every MLA layer (rows past num_tokens() are scratch until
  // Advance covers them). Standalone: allocates blocks; paged: checks the table already covers them.
  void ReserveMlaTokens(int64_t tokens);
  CacheDtype cache_dtype() const { return cache_dtype_; }
  // Latent row [R + Rp] of MLA layer `mla_index` at position `pos` (< reserved tokens), in the cache
  // dtype: MlaRowBf16 for kBf16 states, MlaRowF32 for kF32 ones.
  bf16* MlaRowBf16(int64_t mla_index, int64_t pos) {
    K3_DCHECK(cache_dtype_ == CacheDtype::kBf16);
    return reinterpret_cast<bf16*>(MlaRowBytes(mla_index, pos));
  }
  float* MlaRowF32(int64_t mla_index, int64_t pos) {
    K3_DCHECK(cache_dtype_ == CacheDtype::kF32);
    return reinterpret_cast<float*>(MlaRowBytes(mla_index, pos));
  }
  int64_t mla_row_width() const { return mla_row_width_; }
  // The kernels' view of MLA layer `mla_index`'s rows (valid until the block table changes).
  kernels::LatentRows MlaRows(int64_t mla_index) {
    return {blocks_.data(), block_tokens_, mla_index * block_tokens_,
            mla_row_width_ * CacheDtypeBytes(cache_dtype_), cache_dtype_ == CacheDtype::kBf16};
  }
  // Marks n more tokens as processed.
  void Advance(int64_t n) { num_tokens_ += n; }

  // --- paged MLA cache (src/cache) ---
  // Bytes of one block: num_mla_layers * block_tokens * (R + Rp) * CacheDtypeBytes(dtype).
  static int64_t MlaBlockBytes(const io::ModelConfig& cfg, int64_t block_tokens, CacheDtype dtype);
  // Switches an empty standalone state to external blocks of `block_tokens` tokens in `dtype`.
  void SetExternalMlaBlocks(int64_t block_tokens, CacheDtype dtype);
  bool paged() const { return paged_; }
  int64_t block_tokens() const { return block_tokens_; }
  int64_t num_blocks() const { return static_cast<int64_t>(blocks_.size()); }
  int32_t block_id(int64_t index) const { return block_ids_[index]; }
  const std::vector<int32_t>& block_ids() const { return block_ids_; }
  // Appends block `id` whose memory is `data` (paged states only).
  void AppendBlock(int32_t id, std::byte* data);
  // Replaces table entry `index` (copy-on-write: the caller has copied the rows into `data`).
  void ReplaceBlock(int64_t index, int32_t id, std::byte* data);
  // Empties the block table and sets num_tokens() to 0; returns the ids that were in it.
  std::vector<int32_t> ReleaseBlocks();
  // Sets the processed-token count (restoring a prefix snapshot: the table must cover n tokens).
  void SetNumTokens(int64_t n);

 private:
  ModelSequenceState() = default;  // for Clone
  std::byte* MlaRowBytes(int64_t mla_index, int64_t pos) {
    K3_DCHECK(pos >= 0 && pos < static_cast<int64_t>(blocks_.size()) * block_tokens_);
    return blocks_[pos / block_tokens_] +
           (mla_index * block_tokens_ + pos % block_tokens_) * mla_row_width_ * CacheDtypeBytes(cache_dtype_);
  }
  int64_t block_bytes() const;

  int64_t num_tokens_ = 0;
  int64_t mla_row_width_ = 0;
  int64_t num_mla_layers_ = 0;
  int64_t block_tokens_ = kStandaloneBlockTokens;
  bool paged_ = false;
  CacheDtype cache_dtype_ = CacheDtype::kBf16;
  std::vector<KdaLayerState> kda_;
  std::vector<std::byte*> blocks_;                   // block table: memory of each block
  std::vector<int32_t> block_ids_;                   // paged: pool ids of blocks_
  std::vector<std::unique_ptr<std::byte[]>> owned_;  // standalone: the blocks themselves
};

}  // namespace k3::model
