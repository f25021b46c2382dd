// Model: a loaded K3-family checkpoint and its batched forward pass (spec §2).
//
//   auto model = Model::Load(dir, &pool);                // mmap + check every tensor against the config
//   auto seq = model->NewSequenceState();                // KDA states + conv tails + MLA latent cache
//   SequenceBatchItem items[] = {{seq.get(), prompt_ids}};
//   K3_CHECK_OK(model->Forward(items, &logits));         // logits of each item's last token (or all)
//
// Sharded (Parallelism with a communicator of world t > 1): every rank loads the same checkpoint and
// binds only its part (shard.h); all ranks call Forward with the same batch in the same order, and only
// rank 0 receives logits. A failed collective (a lost rank) makes Forward return its Status.
//
// Forward takes a batch of sequences, each with its new tokens (a prefill chunk or a single decode token)
// and its own state, advances every state by those tokens and returns logits. Results do not depend on
// how a prompt is chunked or on what else is in the batch (up to fp32 summation order, <= 1e-5).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "src/base/status.h"
#include "src/base/thread_pool.h"
#include "src/io/model_config.h"
#include "src/kernels/kda_core.h"
#include "src/model/shard.h"
#include "src/model/state_log.h"

namespace k3::io {
struct TensorView;
}  // namespace k3::io
namespace k3::dist {
class Communicator;
}  // namespace k3::dist

namespace k3::model {

using kernels::KdaPrefillForm;  // the KDA prefill algorithm (kernels/kda_core.h)

// Per-sequence decode state. Sizes (see spec §6): per KDA layer H*K*V fp32 recurrent state plus
// 3 * (W-1) * P fp32 conv tails; per MLA layer (kv_lora + rope) floats per cached token.
// The engine issue replaces the contiguous MLA cache by paged blocks behind the same accessors.
class SequenceState {
 public:
  virtual ~SequenceState() = default;
  // Number of tokens already processed (the next token's position).
  virtual int64_t num_tokens() const = 0;
  // Deep copy (prefix snapshots, n > 1).
  virtual std::unique_ptr<SequenceState> Clone() const = 0;
};

struct SequenceBatchItem {
  SequenceState* state = nullptr;
  std::span<const int32_t> tokens;  // >= 1 new tokens
  bool all_logits = false;          // true: logits for every new token; false: only the last
};

// How one model is split over ranks: the rank's shard and the group's communicator (null: one process;
// its rank and world size must match shard's).
struct Parallelism {
  ShardSpec shard;
  dist::Communicator* comm = nullptr;
};

// Output of Forward: logits rows, concatenated over items in batch order; item i contributes
// tokens.size() rows if all_logits else 1. Shape [rows, vocab_size].
struct ForwardOutput {
  std::vector<float> logits;
  int64_t rows = 0;
};

class Model {
 public:
  virtual ~Model() = default;
  // Loads config.json and every tensor of ListTensors(config); errors name the tensor and the mismatch.
  static Result<std::unique_ptr<Model>> Load(const std::string& dir, ThreadPool* pool,
                                             const Parallelism& parallelism = {});
  // Builds a model over tensors found through `lookup` (a checkpoint, or tensors made in memory by tests);
  // `storage` keeps the tensors' bytes alive for the model's lifetime. Same checks as Load.
  static Result<std::unique_ptr<Model>> FromTensors(
      const io::ModelConfig& cfg, const std::function<const io::TensorView*(const std::string&)>& lookup,
      std::shared_ptr<const void> storage, ThreadPool* pool, const Parallelism& parallelism = {});

  // The checkpoint's config.
  virtual const io::ModelConfig& config() const = 0;
  // What one rank's per-sequence state holds (LocalConfig: H/t heads); config() in one process.
  virtual const io::ModelConfig& state_config() const = 0;
  virtual const ShardSpec& shard() const = 0;
  virtual std::unique_ptr<SequenceState> NewSequenceState() const = 0;
  // Each item's state must come from this model's NewSequenceState(), appear once in the batch, and its
  // token ids must be < vocab_size (checked: a violation is a programming error and aborts). Not ok only
  // when a collective failed (sharded models); the states are then unusable.
  virtual Status Forward(std::span<const SequenceBatchItem> batch, ForwardOutput* out) = 0;
  // Seconds spent inside collectives so far (0 in one process); rank 0's includes sending the plans.
  virtual double CollectiveSeconds() const { return 0.0; }
  // Rank 0 of a sharded model: the log its states must be made with (KvCache), so the other ranks mirror
  // them. Null in one process and on the other ranks.
  virtual std::shared_ptr<StateOpLog> state_log() const { return nullptr; }
  // KDA prefill algorithm (kda_core.h); kRecurrent by default.
  virtual void SetKdaPrefillForm(KdaPrefillForm form) = 0;
};

}  // namespace k3::model
