// StepPlan: one engine step as every rank of a sharded model executes it (spec/distributed.md, "One
// engine step across ranks"), and its wire format.
//
// Model::Execute runs one plan against the slots its model owns, in one process as on every rank.
// Rank 0 owns requests, scheduler, cache bookkeeping and sampling. Each step it sends the plan: the
// state-slot operations since the last plan (new / clone / copy KDA / free a slot, copy an MLA block for
// copy-on-write) and the batch (slot, position, new token ids, whether every row's logits are wanted,
// and for paged states the block table). Workers hold no request and no text: they replay the slot
// operations on their own shard of the state and run the same forward.
//
// Wire format (little-endian): "K3SP" u32 version, u8 kind, u64 sequence number, u32 op count, ops
// (u8 kind, i32 a, i32 b), u32 item count, items (i32 slot, i64 start_pos, u8 all_logits, i32
// block_tokens, u8 cache dtype (0 bf16, 1 fp32), u32 n tokens, i32 tokens[n], u32 m blocks, i32 blocks[m],
// u32 e embedding runs, each (i32 first_row, i32 rows, u32 width, u16 bf16 values[rows * width])).
// DecodeStepPlan checks every count against the bytes left and the limits below, so a malformed plan is an
// error, never a crash or a huge allocation.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "src/base/status.h"
#include "src/model/cache_dtype.h"

namespace k3::model {

enum class StateOpKind : uint8_t {
  kNew = 1,        // a: slot (an empty standalone state), b: its CacheDtype (0 bf16, 1 fp32)
  kClone = 2,      // a: source slot, b: new slot (a copy: KDA state, position and block table)
  kCopyKda = 3,    // a: source slot, b: target slot (KDA states and conv tails only)
  kFree = 4,       // a: slot
  kCopyBlock = 5,  // a: source block, b: target block (MLA rows of every layer, in the blocks' dtype)
  // (no operands) frees the memory of every paged MLA block (the engine is asleep: no paged slot lives;
  // a block is allocated again when a later plan names it).
  kReleaseBlocks = 6,
};

struct StateOp {
  StateOpKind kind = StateOpKind::kNew;
  int32_t a = 0;
  int32_t b = 0;
  bool operator==(const StateOp&) const = default;
};

// Rows of an item whose embedding is given instead of looked up by token id: an image's projector output
// for its <|media_pad|> tokens (vision.md §4). `bf16` is [rows, width] (width = the model's hidden size,
// checked by Model::Execute), the rows item.tokens[first_row, first_row + rows).
struct EmbeddingRun {
  int32_t first_row = 0;
  int32_t rows = 0;
  int32_t width = 0;
  std::vector<uint16_t> bf16;
  bool operator==(const EmbeddingRun&) const = default;
};

struct StepItem {
  int32_t slot = 0;
  int64_t start_pos = 0;  // tokens already in the state
  bool all_logits = false;
  int32_t block_tokens = 0;  // > 0: a paged state whose table is `blocks`
  std::vector<int32_t> tokens;
  std::vector<int32_t> blocks;
  CacheDtype cache_dtype = CacheDtype::kBf16;  // paged: what its blocks store (cache_dtype.h)
  std::vector<EmbeddingRun> embeddings;        // in row order, not overlapping, inside tokens
  bool operator==(const StepItem&) const = default;
};

enum class StepKind : uint8_t {
  kForward = 1,    // apply ops, run the batch
  kHeartbeat = 2,  // nothing to do (rank 0 is alive and idle)
  kShutdown = 3,   // leave the worker loop with success
};

struct StepPlan {
  StepKind kind = StepKind::kForward;
  uint64_t sequence = 0;  // 1, 2, ... per plan sent; a gap or a repeat is a protocol error
  std::vector<StateOp> ops;
  std::vector<StepItem> items;
  bool operator==(const StepPlan&) const = default;
};

// Limits a decoder accepts (a plan above them is refused, not allocated).
inline constexpr uint32_t kMaxPlanOps = 1u << 22;
inline constexpr uint32_t kMaxPlanItems = 1u << 16;
inline constexpr uint32_t kMaxItemTokens = 1u << 24;
inline constexpr uint32_t kMaxItemBlocks = 1u << 24;
inline constexpr size_t kMaxPlanBytes = size_t{1} << 30;
inline constexpr int32_t kMaxSlotId = 1 << 24;
inline constexpr int32_t kMaxBlockTokens = 1 << 12;     // tokens per paged MLA block
inline constexpr int32_t kMaxBlockId = 1 << 22;         // the KV cache never has more blocks (kv_cache.cc)
inline constexpr int32_t kMaxEmbeddingWidth = 1 << 16;  // hidden size of any K3-family model is below it

std::string EncodeStepPlan(const StepPlan& plan);
// The same with `sequence` in place of plan.sequence (rank 0 numbers the plans the engine built).
std::string EncodeStepPlan(const StepPlan& plan, uint64_t sequence);
// DataLoss naming what is wrong (bad magic, version, a count past the end or above a limit, an unknown
// kind, a negative slot or position, embedding runs out of order or outside the item's tokens, trailing
// bytes).
Result<StepPlan> DecodeStepPlan(std::string_view bytes);

}  // namespace k3::model
