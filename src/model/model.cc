// Model::FromTensors and the batched forward pass (spec §2): embedding, the decoder layers
// (AttnRes mixers or the plain residual stream, KDA or MLA attention, dense MLP or MoE), the final norm
// and lm_head.
//
// All new tokens of a batch are stacked into one [T, D] activation matrix so every projection is one
// GEMM over T rows; the per-sequence parts (conv tails, KDA recurrence, MLA attention over the cache)
// run per segment inside the layers.
#include "src/model/model.h"

#include <algorithm>
#include <cstring>
#include <set>

#include "src/base/check.h"
#include "src/dist/communicator.h"
#include "src/kernels/attn_res.h"
#include "src/kernels/layer_ops.h"
#include "src/kernels/ops.h"
#include "src/kernels/step_env.h"
#include "src/kernels/step_ops.h"
#include "src/model/collectives.h"
#include "src/model/kda.h"
#include "src/model/layer_util.h"
#include "src/model/mla.h"
#include "src/model/mlp.h"
#include "src/model/moe.h"
#include "src/model/sequence_state.h"
#include "src/model/state_slots.h"
#include "src/model/vision/vision_encoder.h"
#include "src/model/weights.h"

namespace k3::model {
namespace {

Status CheckSupported(const io::ModelConfig& cfg) {
  if (cfg.hidden_size <= 0 || cfg.vocab_size <= 0 || cfg.num_layers <= 0) {
    return InvalidArgument("config.json: hidden_size, vocab_size and num_hidden_layers must be positive");
  }
  if (cfg.num_kda_layers() > 0 &&
      (cfg.kda_head_dim <= 0 || cfg.kda_num_heads <= 0 || cfg.short_conv_kernel_size < 1)) {
    return InvalidArgument(
        "config.json: linear_attn_config needs positive num_heads, head_dim and "
        "short_conv_kernel_size");
  }
  bool has_moe = false;
  for (int64_t l = 0; l < cfg.num_layers; ++l) has_moe |= cfg.LayerFfn(l) == io::FfnKind::kMoe;
  if (has_moe && (cfg.num_experts_per_token < 1 || cfg.num_experts_per_token > cfg.num_experts)) {
    return InvalidArgument("config.json: num_experts_per_token is {} but must be in [1, num_experts = {}]",
                           cfg.num_experts_per_token, cfg.num_experts);
  }
  if (has_moe && cfg.experts_mxfp4 &&
      (cfg.expert_io_dim() % 32 != 0 || cfg.moe_intermediate_size % 32 != 0 || cfg.mxfp4_group_size != 32)) {
    return InvalidArgument("config.json: MXFP4 experts need group size 32 and expert widths divisible by 32");
  }
  return OkStatus();
}

class ModelImpl final : public Model {
 public:
  ModelImpl(io::ModelConfig cfg, std::unique_ptr<ModelWeights> weights, std::shared_ptr<const void> storage,
            ThreadPool* pool, const Parallelism& parallelism)
      : cfg_(std::move(cfg)),
        local_cfg_(LocalConfig(cfg_, parallelism.shard)),
        shard_(parallelism.shard),
        weights_(std::move(weights)),
        storage_(std::move(storage)),
        collectives_(parallelism.comm),
        slots_(local_cfg_) {
    env_.pool = pool;
    env_.collectives = &collectives_;
    bank_capacity_ =
        cfg_.has_attn_res() ? (cfg_.num_layers + cfg_.attn_res_block_size - 1) / cfg_.attn_res_block_size : 0;
  }

  const io::ModelConfig& config() const override { return cfg_; }
  const io::ModelConfig& state_config() const override { return local_cfg_; }
  const ShardSpec& shard() const override { return shard_; }
  double CollectiveSeconds() const override { return collectives_.seconds(); }
  Status Execute(const StepPlan& plan, ForwardOutput* out) override;
  void SetKdaPrefillForm(KdaPrefillForm form) override { kda_prefill_form_ = form; }
  std::vector<std::span<const uint8_t>> ViewedStorage() const override {
    std::vector<std::span<const uint8_t>> viewed = ViewedBytes(*weights_);
    if (vision_ != nullptr) {
      for (const auto& bytes : vision_->ViewedStorage()) viewed.push_back(bytes);
    }
    return viewed;
  }
  ImageEncoder* image_encoder() override { return vision_.get(); }
  void SetVision(std::unique_ptr<VisionEncoder> vision) { vision_ = std::move(vision); }

 private:
  // The forward pass over the batch's segments (their states prepared, tokens checked).
  Status Forward(std::span<const SequenceSegment> segments, std::span<const StepItem> items,
                 ForwardOutput* out);
  // Attention sub-block of `layer`: normed [T, D] -> sublayer [T, D].
  void Attention(const LayerStep& step, const LayerWeights& layer, const float* normed, float* sublayer) {
    if (layer.attention == io::AttentionKind::kKda) {
      KdaForward(step, layer.kda, layer.kda_index, normed, sublayer);
    } else {
      MlaForward(step, layer.mla, layer.mla_index, normed, sublayer);
    }
  }
  // FFN sub-block of `layer`: normed [T, D] -> sublayer [T, D]; the routed experts it ran (MoE).
  int64_t Ffn(const LayerStep& step, const LayerWeights& layer, const float* normed, float* sublayer) {
    if (layer.ffn == io::FfnKind::kDense) {
      MlpForward(step, layer.mlp, normed, sublayer);
      return 0;
    }
    return MoeForward(step, layer.moe, normed, sublayer);
  }

  io::ModelConfig cfg_;
  io::ModelConfig local_cfg_;  // the rank's heads (LocalConfig); cfg_ in one process
  ShardSpec shard_;
  std::unique_ptr<ModelWeights> weights_;
  std::shared_ptr<const void> storage_;
  std::unique_ptr<VisionEncoder> vision_;  // rank 0 of a model with a vision tower
  Collectives collectives_;
  StateSlots slots_;
  kernels::StepEnv env_;  // the kernels' pool, scratch arena, collectives, numerics
  KdaPrefillForm kda_prefill_form_ = KdaPrefillForm::kRecurrent;
  std::vector<SequenceSegment> segments_;  // this step's items
  int64_t bank_capacity_ = 0;              // B: frozen entries per token at most
};

Status ModelImpl::Execute(const StepPlan& plan, ForwardOutput* out) {
  for (const StateOp& op : plan.ops) K3_RETURN_IF_ERROR(slots_.Apply(op));
  out->rows = 0;
  if (plan.kind != StepKind::kForward || plan.items.empty()) return OkStatus();
  // Segments: each sequence's rows in the stacked batch.
  segments_.clear();
  std::set<int32_t> seen;
  int64_t T = 0;
  for (const StepItem& item : plan.items) {
    if (!seen.insert(item.slot).second)
      return DataLoss("step plan: slot {} appears twice in one batch", item.slot);
    for (const EmbeddingRun& run : item.embeddings) {
      if (run.width != cfg_.hidden_size || run.bf16.size() != static_cast<size_t>(run.rows) * run.width)
        return DataLoss("step plan: an embedding run of width {} ({} values) for a model of hidden size {}",
                        run.width, run.bf16.size(), cfg_.hidden_size);
    }
    K3_ASSIGN_OR_RETURN(ModelSequenceState * state, slots_.Prepare(item));
    const int64_t n = static_cast<int64_t>(item.tokens.size());
    segments_.push_back(SequenceSegment{state, T, n, state->num_tokens()});
    T += n;
  }
  return Forward(segments_, plan.items, out);
}

Status ModelImpl::Forward(std::span<const SequenceSegment> segments, std::span<const StepItem> items,
                          ForwardOutput* out) {
  const int64_t D = cfg_.hidden_size, N = cfg_.vocab_size, B = bank_capacity_;
  const int64_t T = segments.back().row_begin + segments.back().rows;
  std::vector<int64_t> logit_rows;
  for (size_t i = 0; i < segments.size(); ++i) {
    const SequenceSegment& seg = segments[i];
    for (int64_t r = items[i].all_logits ? 0 : seg.rows - 1; r < seg.rows; ++r)
      logit_rows.push_back(seg.row_begin + r);
    seg.state->ReserveMlaTokens(seg.start_pos + seg.rows);
  }

  // The step's activations (the arena's memory of the last step is reused).
  env_.arena.Reset();
  auto take = [&](int64_t n) { return env_.arena.Take<float>(static_cast<size_t>(n)); };
  float* h = take(T * D);  // [T, D] residual stream, or running block sum (AttnRes)
  float* bank = take(T * std::max<int64_t>(B, 1) * D);  // [T, B, D] frozen block sums (AttnRes)
  float* mixed = take(T * D);                           // [T, D] mixer output (AttnRes)
  float* normed = take(T * D);                          // [T, D] RMSNorm output (sub-block input)
  float* sublayer = take(T * D);                        // [T, D] attention / FFN output
  int64_t* all_rows = env_.arena.Take<int64_t>(T);      // 0..T-1
  for (int64_t t = 0; t < T; ++t) all_rows[t] = t;
  const LayerStep step{local_cfg_, T, segments, env_, kda_prefill_form_};
  const float eps = cfg_.rms_norm_eps;
  int64_t bank_size = 0;
  // out = Mix(bank[t, 0..bank_size), current[t]; mixer) for the rows `rows` (spec §2.6).
  auto mix = [&](const float* current, const AttnResMixer& mixer, const int64_t* rows, int64_t n,
                 float* mix_out) {
    kernels::AttnResMixRows(env_, {bank, B, bank_size}, current, rows, n, mixer.query.data(), D, eps,
                            mix_out);
  };

  // Embedding rows: h [T, D]; an item's embedding runs (image rows) replace its tokens' rows.
  {
    int64_t row = 0;
    for (const StepItem& item : items) {
      for (int32_t id : item.tokens) {
        kernels::Bf16ToF32(weights_->embed.data + static_cast<int64_t>(id) * D, D, h + row * D);
        ++row;
      }
      const int64_t item_row0 = row - static_cast<int64_t>(item.tokens.size());
      for (const EmbeddingRun& run : item.embeddings) {
        kernels::Bf16ToF32(reinterpret_cast<const bf16*>(run.bf16.data()), static_cast<int64_t>(run.rows) * D,
                           h + (item_row0 + run.first_row) * D);
      }
    }
  }
  auto capture = [&](int64_t layer) {
    if (out->capture_hidden) out->layer_hidden[layer].assign(h, h + T * D);
  };
  if (out->capture_hidden) out->layer_hidden.resize(static_cast<size_t>(cfg_.num_layers + 1));
  capture(0);
  out->routed_experts_run = 0;

  for (int64_t l = 0; l < cfg_.num_layers; ++l) {
    const LayerWeights& layer = weights_->layers[l];
    if (cfg_.has_attn_res()) {
      // prefix = h (the running block sum). Pre-attention mix uses the bank before this layer's push.
      const float* attn_input = h;
      if (bank_size > 0) {
        mix(h, layer.attention_mixer, all_rows, T, mixed);
        attn_input = mixed;
      }
      kernels::RmsNormRows(env_, attn_input, T, D, layer.input_norm.data(), eps, normed);
      const bool block_start = l % cfg_.attn_res_block_size == 0;
      if (block_start) {  // freeze the finished block (the raw prefix, not the mixed value)
        K3_CHECK(bank_size < B);
        kernels::CopyRows(h, D, bank + bank_size * D, B * D, T, D);  // bank[t, bank_size] = h[t]
        ++bank_size;
      }
      Attention(step, layer, normed, sublayer);
      if (block_start) {  // a new block's running sum starts at the attention output
        std::memcpy(h, sublayer, sizeof(float) * static_cast<size_t>(T * D));
      } else {
        kernels::AddRoundBf16Rows(env_, h, sublayer, T, D);
      }
      mix(h, layer.ffn_mixer, all_rows, T, mixed);
      kernels::RmsNormRows(env_, mixed, T, D, layer.post_attention_norm.data(), eps, normed);
    } else {
      kernels::RmsNormRows(env_, h, T, D, layer.input_norm.data(), eps, normed);
      Attention(step, layer, normed, sublayer);
      kernels::AddRoundBf16Rows(env_, h, sublayer, T, D);
      kernels::RmsNormRows(env_, h, T, D, layer.post_attention_norm.data(), eps, normed);
    }
    out->routed_experts_run += Ffn(step, layer, normed, sublayer);
    kernels::AddRoundBf16Rows(env_, h, sublayer, T, D);
    capture(l + 1);
  }

  // Final mixer (AttnRes), final norm and lm_head on the rows that need logits.
  const int64_t rows = static_cast<int64_t>(logit_rows.size());
  float* final_rows = take(rows * D);  // [rows, D]
  if (cfg_.has_attn_res()) {
    mix(h, weights_->output_mixer, logit_rows.data(), rows, final_rows);
  } else {
    kernels::GatherRows(h, static_cast<size_t>(D), logit_rows.data(), static_cast<size_t>(rows), final_rows);
  }
  kernels::RmsNormRows(final_rows, rows, D, D, weights_->final_norm.data(), eps, final_rows);
  out->rows = rows;
  if (out->capture_hidden || out->capture_final_hidden)
    out->final_hidden.assign(final_rows, final_rows + rows * D);
  if (!collectives_.sharded()) {
    out->logits.resize(static_cast<size_t>(rows * N));
    kernels::MatMulBf16(final_rows, rows, D, weights_->lm_head.data, N, out->logits.data(), env_.pool);
  } else {  // vocabulary-split lm_head: rank 0 gathers the ranks' column blocks
    const int64_t local_n = weights_->lm_head.rows;
    float* local = take(rows * local_n);  // [rows, N/t]
    float* gathered =
        collectives_.rank() == 0 ? take(collectives_.world() * rows * local_n) : nullptr;  // [t, rows, N/t]
    kernels::MatMulBf16(final_rows, rows, D, weights_->lm_head.data, local_n, local, env_.pool);
    if (collectives_.rank() == 0) out->logits.resize(static_cast<size_t>(rows * N));
    collectives_.GatherColumns(local, rows, local_n, gathered, out->logits.data());
  }

  for (const SequenceSegment& seg : segments) seg.state->Advance(seg.rows);
  return collectives_.status();
}

}  // namespace

Result<std::unique_ptr<Model>> Model::FromTensors(
    const io::ModelConfig& cfg, const std::function<const io::TensorView*(const std::string&)>& lookup,
    std::shared_ptr<const void> storage, ThreadPool* pool, const Parallelism& parallelism) {
  K3_RETURN_IF_ERROR(CheckSupported(cfg));
  K3_RETURN_IF_ERROR(CheckShardable(cfg, parallelism.shard));
  if (parallelism.comm != nullptr && (parallelism.comm->rank() != parallelism.shard.rank ||
                                      parallelism.comm->world_size() != parallelism.shard.world)) {
    return Internal("the communicator is rank {} of {} but the shard is rank {} of {}",
                    parallelism.comm->rank(), parallelism.comm->world_size(), parallelism.shard.rank,
                    parallelism.shard.world);
  }
  if (parallelism.shard.sharded() && parallelism.comm == nullptr)
    return Internal("a sharded model needs a communicator");
  K3_ASSIGN_OR_RETURN(std::unique_ptr<ModelWeights> weights, BindWeights(cfg, lookup));
  ShardWeights(cfg, parallelism.shard, weights.get());
  // The vision tower on rank 0 only: it encodes images and sends their rows in the step plans.
  std::unique_ptr<VisionEncoder> vision;
  if (cfg.vision.has_value() && parallelism.shard.rank == 0) {
    K3_ASSIGN_OR_RETURN(std::unique_ptr<VisionTower> tower, VisionTower::FromTensors(cfg, lookup, storage));
    vision = std::make_unique<VisionEncoder>(std::move(tower), pool);
  }
  auto model = std::make_unique<ModelImpl>(cfg, std::move(weights), std::move(storage), pool, parallelism);
  model->SetVision(std::move(vision));
  return std::unique_ptr<Model>(std::move(model));
}

}  // namespace k3::model
