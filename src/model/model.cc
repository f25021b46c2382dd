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

// Activations of one Forward, reused across layers and calls.
struct ForwardScratch {
  std::vector<float> prefix;                    // [T, D] running block sum (AttnRes) or residual stream
  std::vector<float> bank;                      // [T, B, D] frozen block sums per token (AttnRes)
  std::vector<float> mixed;                     // [T, D] mixer output
  std::vector<float> normed;                    // [T, D] RMSNorm output (sub-block input)
  std::vector<float> sublayer;                  // [T, D] attention / FFN output
  std::vector<float> final_rows;                // [rows, D] hidden rows that need logits
  std::vector<std::vector<float>> key_scratch;  // per worker [D]
  std::vector<const float*> sources;            // per worker: B + 1 source pointers
  KdaScratch kda;
  MlaScratch mla;
  MlpScratch mlp;
  MoeScratch moe;
};

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
        pool_(pool),
        collectives_(parallelism.comm),
        slots_(local_cfg_) {
    bank_capacity_ =
        cfg_.has_attn_res() ? (cfg_.num_layers + cfg_.attn_res_block_size - 1) / cfg_.attn_res_block_size : 0;
  }

  const io::ModelConfig& config() const override { return cfg_; }
  const io::ModelConfig& state_config() const override { return local_cfg_; }
  const ShardSpec& shard() const override { return shard_; }
  double CollectiveSeconds() const override { return collectives_.seconds(); }
  Status Execute(const StepPlan& plan, ForwardOutput* out) override;
  void SetKdaPrefillForm(KdaPrefillForm form) override { s_.kda.prefill_form = form; }
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
  // Attention sub-block of `layer` on normed [T, D] -> s_.sublayer.
  void Attention(const LayerWeights& layer, int64_t T, std::span<const SequenceSegment> segments) {
    float* a = Grow(s_.sublayer, T * cfg_.hidden_size);
    if (layer.attention == io::AttentionKind::kKda) {
      KdaForward(local_cfg_, layer.kda, layer.kda_index, s_.normed.data(), T, segments, &s_.kda, pool_, a,
                 &collectives_);
    } else {
      MlaForward(local_cfg_, layer.mla, layer.mla_index, s_.normed.data(), T, segments, &s_.mla, pool_, a,
                 &collectives_);
    }
  }
  // FFN sub-block of `layer` on normed [T, D] -> s_.sublayer.
  void Ffn(const LayerWeights& layer, int64_t T) {
    float* f = Grow(s_.sublayer, T * cfg_.hidden_size);
    if (layer.ffn == io::FfnKind::kDense) {
      MlpForward(local_cfg_, layer.mlp, s_.normed.data(), T, &s_.mlp, pool_, f, &collectives_);
    } else {
      MoeForward(local_cfg_, layer.moe, s_.normed.data(), T, &s_.moe, pool_, f, &collectives_);
    }
  }
  // normed[t] = RMSNorm(src[t]; w) for every row.
  void NormRows(const float* src, const std::vector<bf16>& w, int64_t T) {
    const int64_t D = cfg_.hidden_size;
    float* normed = Grow(s_.normed, T * D);
    ParallelRows(pool_, T, D, [&](int64_t t0, int64_t t1) {
      kernels::RmsNormRows(src + t0 * D, static_cast<size_t>(t1 - t0), D, D, w.data(), cfg_.rms_norm_eps,
                           normed + t0 * D);
    });
  }
  // h[t] = bf16(h[t] + sublayer[t]) for every row.
  void AddSublayer(float* h, int64_t T) {
    const int64_t D = cfg_.hidden_size;
    ParallelRows(pool_, T, D, [&](int64_t t0, int64_t t1) {
      kernels::AddRoundBf16(h + t0 * D, s_.sublayer.data() + t0 * D, static_cast<size_t>((t1 - t0) * D));
    });
  }
  // out[t] = Mix(bank[t, 0..bank_size), current[t]; mixer) for rows `rows` (spec §2.6).
  void MixRows(const float* current, const AttnResMixer& mixer, int64_t bank_size,
               std::span<const int64_t> rows, float* out) {
    const int64_t D = cfg_.hidden_size, B = bank_capacity_;
    const size_t workers = NumWorkers(pool_);
    if (s_.key_scratch.size() < workers) s_.key_scratch.resize(workers);
    Grow(s_.sources, workers * (B + 1));
    ParallelTasks(pool_, static_cast<int64_t>(rows.size()), (bank_size + 1) * 3 * D,
                  [&](size_t i, size_t worker) {
                    const int64_t t = rows[i];
                    const float** sources = s_.sources.data() + worker * (B + 1);
                    for (int64_t b = 0; b < bank_size; ++b) sources[b] = s_.bank.data() + (t * B + b) * D;
                    sources[bank_size] = current + t * D;
                    float* keys = Grow(s_.key_scratch[worker], static_cast<size_t>(D));
                    kernels::AttnResMix(sources, bank_size + 1, mixer.query.data(), D, cfg_.rms_norm_eps,
                                        keys, out + i * D);
                  });
  }

  io::ModelConfig cfg_;
  io::ModelConfig local_cfg_;  // the rank's heads (LocalConfig); cfg_ in one process
  ShardSpec shard_;
  std::unique_ptr<ModelWeights> weights_;
  std::shared_ptr<const void> storage_;
  ThreadPool* pool_;
  std::unique_ptr<VisionEncoder> vision_;  // rank 0 of a model with a vision tower
  Collectives collectives_;
  StateSlots slots_;
  std::vector<SequenceSegment> segments_;  // this step's items
  std::vector<float> local_logits_;        // [rows, N/t] (sharded)
  std::vector<float> gathered_;            // [t, rows, N/t] (rank 0)
  int64_t bank_capacity_ = 0;              // B: frozen entries per token at most
  ForwardScratch s_;
  std::vector<int64_t> all_rows_;  // 0..T-1
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

  // Embedding rows: h [T, D]; an item's embedding runs (image rows) replace its tokens' rows.
  float* h = Grow(s_.prefix, T * D);
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
  all_rows_.resize(T);
  for (int64_t t = 0; t < T; ++t) all_rows_[t] = t;
  auto capture = [&](int64_t layer) {
    if (out->capture_hidden) out->layer_hidden[layer].assign(h, h + T * D);
  };
  if (out->capture_hidden) out->layer_hidden.resize(static_cast<size_t>(cfg_.num_layers + 1));
  capture(0);
  out->routed_experts_run = 0;
  float* bank = Grow(s_.bank, T * std::max<int64_t>(B, 1) * D);
  float* mixed = Grow(s_.mixed, T * D);
  int64_t bank_size = 0;

  for (int64_t l = 0; l < cfg_.num_layers; ++l) {
    const LayerWeights& layer = weights_->layers[l];
    if (cfg_.has_attn_res()) {
      // prefix = h (the running block sum). Pre-attention mix uses the bank before this layer's push.
      const float* attn_input = h;
      if (bank_size > 0) {
        MixRows(h, layer.attention_mixer, bank_size, all_rows_, mixed);
        attn_input = mixed;
      }
      NormRows(attn_input, layer.input_norm, T);
      const bool block_start = l % cfg_.attn_res_block_size == 0;
      if (block_start) {  // freeze the finished block (the raw prefix, not the mixed value)
        K3_CHECK(bank_size < B);
        kernels::CopyRows(h, D, bank + bank_size * D, B * D, T, D);  // bank[t, bank_size] = h[t]
        ++bank_size;
      }
      Attention(layer, T, segments);
      if (block_start) {  // a new block's running sum starts at the attention output
        std::memcpy(h, s_.sublayer.data(), sizeof(float) * static_cast<size_t>(T * D));
      } else {
        AddSublayer(h, T);
      }
      MixRows(h, layer.ffn_mixer, bank_size, all_rows_, mixed);
      NormRows(mixed, layer.post_attention_norm, T);
    } else {
      NormRows(h, layer.input_norm, T);
      Attention(layer, T, segments);
      AddSublayer(h, T);
      NormRows(h, layer.post_attention_norm, T);
    }
    Ffn(layer, T);
    if (layer.ffn == io::FfnKind::kMoe) out->routed_experts_run += s_.moe.experts_run;
    AddSublayer(h, T);
    capture(l + 1);
  }

  // Final mixer (AttnRes), final norm and lm_head on the rows that need logits.
  const int64_t rows = static_cast<int64_t>(logit_rows.size());
  float* final_rows = Grow(s_.final_rows, rows * D);
  if (cfg_.has_attn_res()) {
    MixRows(h, weights_->output_mixer, bank_size, logit_rows, final_rows);
  } else {
    kernels::GatherRows(h, static_cast<size_t>(D), logit_rows.data(), static_cast<size_t>(rows), final_rows);
  }
  kernels::RmsNormRows(final_rows, rows, D, D, weights_->final_norm.data(), cfg_.rms_norm_eps, final_rows);
  out->rows = rows;
  if (out->capture_hidden || out->capture_final_hidden)
    out->final_hidden.assign(final_rows, final_rows + rows * D);
  if (!collectives_.sharded()) {
    out->logits.resize(static_cast<size_t>(rows * N));
    kernels::MatMulBf16(final_rows, rows, D, weights_->lm_head.data, N, out->logits.data(), pool_);
  } else {  // vocabulary-split lm_head: rank 0 gathers the ranks' column blocks
    const int64_t local_n = weights_->lm_head.rows;
    float* local = Grow(local_logits_, rows * local_n);
    kernels::MatMulBf16(final_rows, rows, D, weights_->lm_head.data, local_n, local, pool_);
    if (collectives_.rank() == 0) out->logits.resize(static_cast<size_t>(rows * N));
    collectives_.GatherColumns(local, rows, local_n, &gathered_, out->logits.data());
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
