// LatentRows: where one sequence's cached MLA rows of one layer are, as the kernels see the paged cache
// (the model's ModelSequenceState owns the memory; spec §6): a block table whose blocks each hold
// [num_mla_layers, block_tokens, R + Rp] values of the cache dtype. Row `pos` of layer l is row
// l * block_tokens + pos % block_tokens of block pos / block_tokens.
#pragma once

#include <cstddef>
#include <cstdint>

#include "src/base/bf16.h"

namespace k3::kernels {

struct LatentRows {
  std::byte* const* blocks = nullptr;  // the block table
  int64_t block_tokens = 0;
  int64_t layer_row0 = 0;  // the layer's first row inside a block (mla_index * block_tokens)
  int64_t row_bytes = 0;   // (R + Rp) * bytes of the dtype
  bool bf16_rows = true;   // bf16 values stored as bf16; false: as fp32

  std::byte* Row(int64_t pos) const {
    return blocks[pos / block_tokens] + (layer_row0 + pos % block_tokens) * row_bytes;
  }
  bf16* RowBf16(int64_t pos) const { return reinterpret_cast<bf16*>(Row(pos)); }
  float* RowF32(int64_t pos) const { return reinterpret_cast<float*>(Row(pos)); }
};

// One sequence's new rows in the batch and its cache of the layer (which has room for them).
struct LatentSequence {
  int64_t row_begin = 0;  // first row in the batch
  int64_t rows = 0;       // new tokens
  int64_t start_pos = 0;  // position of the first new token
  LatentRows cache;
};

}  // namespace k3::kernels
