// Model: a loaded K3-family checkpoint, the per-sequence states it owns and its batched forward pass
// (spec §2).
//
//   auto model = Model::Load(dir, &pool);          // mmap + check every tensor against the config
//   StepPlan plan;                                  // step_plan.h: slot ops + the batch, by slot id
//   plan.ops = {{StateOpKind::kNew, /*slot=*/0}};   // KDA states + conv tails + MLA latent cache
//   plan.items = {{.slot = 0, .start_pos = 0, .tokens = prompt_ids}};
//   K3_CHECK_OK(model->Execute(plan, &logits));     // logits of each item's last token (or all)
//
// Sequence states live on the model side, in slots named by the caller (the engine's KV cache, or
// Sequences in sequences.h for one-process tools): Execute applies the plan's slot operations in order,
// then advances every item's slot by its new tokens (a prefill chunk or a single decode token) and
// returns logits. The same serialisable plan drives every rank of a sharded model (rank_group.h), so the
// engine never touches a state's memory and a device backend keeps its states where its kernels run.
// Results do not depend on how a prompt is chunked or on what else is in the batch (up to fp32
// summation order, <= 1e-5).
//
// Sharded (Parallelism with a communicator of world t > 1): every rank loads the same checkpoint and
// binds only its part (shard.h); all ranks execute the same plans in the same order, and only rank 0
// receives logits. A failed collective (a lost rank) makes Execute return its Status.
#pragma once

#include <atomic>
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
#include "src/model/image_encoder.h"
#include "src/model/shard.h"
#include "src/model/step_plan.h"

namespace k3::io {
struct TensorView;
}  // namespace k3::io
namespace k3::dist {
class Communicator;
}  // namespace k3::dist

namespace k3::model {

using kernels::KdaPrefillForm;  // the KDA prefill algorithm (kernels/kda_core.h)

// Per-sequence state sizes (spec §6): per KDA layer H*K*V fp32 recurrent state plus 3 * (W-1) * P fp32
// conv tails; per MLA layer (kv_lora + rope) floats per cached token (sequence_state.h).

// How one model is split over ranks: the rank's shard and the group's communicator (null: one process;
// its rank and world size must match shard's).
struct Parallelism {
  ShardSpec shard;
  dist::Communicator* comm = nullptr;
};

// Output of Execute: logits rows, concatenated over items in batch order; item i contributes
// tokens.size() rows if all_logits else 1. Shape [rows, vocab_size].
// With capture_hidden set by the caller (k3 run --dump-hidden), the hidden states of the step too, for
// layer-by-layer comparison with another implementation (on rank 0 of a group; every rank holds the
// whole residual stream):
//   layer_hidden[0]      [T, D] the embeddings of the step's T tokens (every row, batch order)
//   layer_hidden[l]      [T, D] the residual stream after layer l (1..num_layers; with AttnRes, the
//                        running sum of the current block, as the layer leaves it)
//   final_hidden         [rows, D] the rows that get logits, after the output mixer and the final norm
//                        (logits = final_hidden @ lm_head^T)
// capture_final_hidden fills final_hidden alone (the engine's embedding requests pool these rows).
struct ForwardOutput {
  std::vector<float> logits;
  int64_t rows = 0;
  bool capture_hidden = false;
  bool capture_final_hidden = false;
  std::vector<std::vector<float>> layer_hidden;
  std::vector<float> final_hidden;
  // Distinct routed experts the step ran, summed over the MoE layers (this rank's, when sharded): with
  // the dense weights, what a decode step reads (bench/decode_bench's batched roofline).
  int64_t routed_experts_run = 0;
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
  // Applies plan.ops to the slots, then runs plan.items as one batch (kind kForward; other kinds are
  // no-ops here). A plan that names a missing slot or block, repeats a slot in the batch, disagrees with
  // a slot's position or holds a token id outside the vocabulary is DataLoss (the slots stay as the ops
  // left them). Not ok also when a collective failed (sharded models); the states are then unusable.
  virtual Status Execute(const StepPlan& plan, ForwardOutput* out) = 0;
  // Seconds spent inside collectives so far (0 in one process); rank 0's includes sending the plans.
  virtual double CollectiveSeconds() const { return 0.0; }
  // KDA prefill algorithm (kda_core.h); kRecurrent by default.
  virtual void SetKdaPrefillForm(KdaPrefillForm form) = 0;
  // The bytes of FromTensors' storage this model reads (its weights as viewed, ViewedBytes in
  // weights.h): a loader may hand every other page of its buffers back to the system.
  virtual std::vector<std::span<const uint8_t>> ViewedStorage() const = 0;

  // The checkpoint's vision tower (vision_config + vision_tower.* / mm_projector.* tensors), or null for a
  // text-only model. Rank 0 encodes images and sends the rows inside the step plan (EmbeddingRun), so
  // other ranks never run it.
  virtual ImageEncoder* image_encoder() { return nullptr; }

  // One engine drives a model at a time: its KV cache chooses the block ids of the model's paged MLA
  // memory. Engine::Create claims the model (false: another engine holds it); the engine releases it.
  bool ClaimForEngine() { return !claimed_by_engine_.exchange(true); }
  void ReleaseFromEngine() { claimed_by_engine_.store(false); }

 private:
  std::atomic<bool> claimed_by_engine_{false};
};

}  // namespace k3::model
