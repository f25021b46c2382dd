// Latent MoE: router, expert grouping over the batch, weighted combine, latent norm/up, shared experts.
#include "src/model/moe.h"

#include <algorithm>
#include <cstring>
#include <numeric>

#include "src/base/check.h"
#include "src/kernels/layer_ops.h"
#include "src/kernels/ops.h"
#include "src/model/layer_util.h"

namespace k3::model {

void RouteTokens(const float* logits, int64_t T, int64_t E, const float* correction_bias, int64_t top_k,
                 bool renormalize, float routed_scaling_factor, int32_t* experts, float* weights) {
  kernels::RouteSigmoidTopK(logits, static_cast<size_t>(T), static_cast<size_t>(E), correction_bias,
                            static_cast<size_t>(top_k), renormalize, routed_scaling_factor, experts, weights);
}

void MoeForward(const io::ModelConfig& cfg, const MoeWeights& w, const float* x, int64_t T, MoeScratch* s,
                ThreadPool* pool, float* out, Collectives* collectives) {
  const int64_t D = cfg.hidden_size, E = cfg.num_experts, Ek = cfg.num_experts_per_token;
  const int64_t Lw = cfg.expert_io_dim();
  const bool latent = w.latent_down.data != nullptr;

  // The products of x the routing needs under one fork-join: the router logits (fp32 logits of bf16 inputs
  // and upcast bf16 weights, not rounded) and the expert inputs z [T, Lw] (the latent down-projection, or x
  // itself). The shared experts' gate and up [T, Is] (Linear products, rounded) join them, except at decode
  // sizes the kernels overlap (T <= kMatMulOverlapMaxRows, ops.h), where they run beside the routed experts'
  // gate and up instead (below): there the MXFP4 experts leave memory idle that their bf16 rows can use.
  float* logits = Grow(s->logits, T * E);
  int32_t* experts = Grow(s->experts, T * Ek);
  float* weights = Grow(s->weights, T * Ek);
  const float* z = latent ? Grow(s->z, T * Lw) : x;
  const int64_t Is = w.has_shared ? w.shared.gate.rows : 0;
  float* shared_gate = w.has_shared ? Grow(s->shared_mlp.gate, T * Is) : nullptr;
  float* shared_up = w.has_shared ? Grow(s->shared_mlp.up, T * Is) : nullptr;
  const bool shared_beside_experts =
      w.has_shared && T <= static_cast<int64_t>(kernels::kMatMulOverlapMaxRows);
  kernels::MatMulJob shared_gate_up[2];
  if (w.has_shared) {
    shared_gate_up[0] = LinearJob(x, T, w.shared.gate, shared_gate);
    shared_gate_up[1] = LinearJob(x, T, w.shared.up, shared_up);
  }
  kernels::MatMulJob projections[4];
  size_t num_projections = 0;
  projections[num_projections++] = kernels::MatMulJob::Bf16(x, T, D, w.router.data, E, logits);
  if (latent) projections[num_projections++] = LinearJob(x, T, w.latent_down, s->z.data());
  if (w.has_shared && !shared_beside_experts) {
    projections[num_projections++] = shared_gate_up[0];
    projections[num_projections++] = shared_gate_up[1];
  }
  kernels::MatMulGroup(projections, num_projections, pool);
  for (size_t j = 1; j < num_projections; ++j) {  // the Linear products; the router logits stay fp32
    RoundRowsToBf16(projections[j].y, T, static_cast<int64_t>(projections[j].N), pool);
  }
  RouteTokens(logits, T, E, w.correction_bias.data(), Ek, cfg.moe_renormalize, cfg.routed_scaling_factor,
              experts, weights);

  // Group (token, slot) pairs by expert (counting sort keeps token order inside an expert).
  int32_t* begin = Grow(s->expert_begin, E + 1);
  int32_t* order = Grow(s->slot_order, T * Ek);
  std::fill(begin, begin + E + 1, 0);
  for (int64_t i = 0; i < T * Ek; ++i) ++begin[experts[i] + 1];
  for (int64_t e = 0; e < E; ++e) begin[e + 1] += begin[e];
  int32_t* next = Grow(s->expert_fill, E);  // next free slot per expert
  std::copy(begin, begin + E, next);
  for (int64_t i = 0; i < T * Ek; ++i) order[next[experts[i]]++] = static_cast<int32_t>(i);
  s->experts_run = 0;
  for (int64_t e = 0; e < E; ++e) s->experts_run += begin[e + 1] > begin[e];

  // Every selected expert over its rows: the rows of expert e are z of the tokens of its slots
  // order[begin[e]..begin[e + 1]); its outputs go back to slot_out[(token, slot)].
  const int64_t R = T * Ek;
  // Split across ranks, the shared experts' down projection runs before the experts' all-reduce and its
  // partial sums [T, D] travel behind expert_out in the same all-reduce: one latency per MoE layer instead
  // of two (the sums, and so the results, are the same).
  const bool one_reduce = w.has_shared && collectives != nullptr && collectives->sharded();
  float* gathered = Grow(s->gathered, R * Lw);  // [R, Lw], expert by expert
  // [R, Lw], same rows; then the shared experts' [T, D] when one_reduce
  float* expert_out = Grow(s->expert_out, R * Lw + (one_reduce ? T * D : 0));
  float* shared = !w.has_shared ? nullptr : one_reduce ? expert_out + R * Lw : Grow(s->shared_out, T * D);
  int32_t* token_of = Grow(s->token_of, R);  // the token of each grouped row
  for (int64_t r = 0; r < R; ++r) token_of[r] = order[r] / static_cast<int32_t>(Ek);
  ParallelRows(pool, R, Lw, [&](int64_t r0, int64_t r1) {
    kernels::GatherRows(z, static_cast<size_t>(Lw), token_of + r0, static_cast<size_t>(r1 - r0),
                        gathered + r0 * Lw);
  });
  // The shared experts beside the routed ones (BesideExperts): their gate and up in the experts' first
  // fork-join where they were not computed above, act(gate) * up between, and their down projection in the
  // experts' second fork-join where it runs at decode sizes or before the one all-reduce (split across
  // ranks, it is a partial sum [T, D] behind expert_out); otherwise beside the latent up-projection below.
  BesideExperts beside;
  kernels::MatMulJob shared_down;
  if (w.has_shared) {
    shared_down = LinearJob(shared_gate, T, w.shared.down, shared);
    if (shared_beside_experts) {
      beside.first = shared_gate_up;
      beside.num_first = 2;
    }
    beside.between = [&] {
      if (shared_beside_experts) {
        RoundRowsToBf16(shared_gate, T, Is, pool);
        RoundRowsToBf16(shared_up, T, Is, pool);
      }
      ParallelRows(pool, T, Is, [&](int64_t t0, int64_t t1) {
        GluActivation(cfg, shared_gate + t0 * Is, shared_up + t0 * Is, (t1 - t0) * Is, shared_gate + t0 * Is);
      });
    };
    if (shared_beside_experts || one_reduce) {
      beside.second = &shared_down;
      beside.num_second = 1;
    }
  }
  ExpertsForward(cfg, w.experts, begin, gathered, &s->mlp, pool, expert_out, beside);
  // Sharded: each rank holds its experts' rows (EP; zeros elsewhere, so the sum is exact) or a partial
  // sum over its slice of every expert's width (TP). Summed before the rounding, then rounded once.
  if (one_reduce) {
    collectives->AllReduceSum(expert_out, R * Lw + T * D);
  } else if (collectives != nullptr) {
    collectives->AllReduceSum(expert_out, R * Lw);
  }
  float* slot_out = Grow(s->slot_out, R * Lw);
  ParallelRows(pool, R, Lw, [&](int64_t r0, int64_t r1) {
    kernels::RoundToBf16(expert_out + r0 * Lw, static_cast<size_t>((r1 - r0) * Lw));
    kernels::ScatterRows(expert_out + r0 * Lw, static_cast<size_t>(Lw), order + r0,
                         static_cast<size_t>(r1 - r0), slot_out);
  });

  // r = bf16(sum_k w_k y_k) (fp32 sum in slot order, independent of the rest of the batch); latent:
  // then its RMSNorm.
  float* combined = Grow(s->combined, T * Lw);
  ParallelRows(pool, T, Ek * Lw, [&](int64_t t0, int64_t t1) {
    float* rows = combined + t0 * Lw;
    kernels::WeightedRowSum(slot_out + t0 * Ek * Lw, weights + t0 * Ek, static_cast<size_t>(t1 - t0),
                            static_cast<size_t>(Ek), static_cast<size_t>(Lw), rows);
    kernels::RoundToBf16(rows, static_cast<size_t>((t1 - t0) * Lw));
    if (latent && !w.latent_norm.empty()) {
      kernels::RmsNormRows(rows, static_cast<size_t>(t1 - t0), Lw, Lw, w.latent_norm.data(), cfg.rms_norm_eps,
                           rows);
    }
  });

  // Latent: the up-projection to D, beside the shared experts' down projection where it did not run with
  // the experts (one fork-join); then the bf16 add.
  if (!latent) std::memcpy(out, combined, sizeof(float) * T * D);
  kernels::MatMulJob outputs[2];
  size_t num_outputs = 0;
  if (latent) outputs[num_outputs++] = LinearJob(combined, T, w.latent_up, out);
  if (w.has_shared && beside.num_second == 0) outputs[num_outputs++] = shared_down;
  kernels::MatMulGroup(outputs, num_outputs, pool);
  // The shared experts' down projection is row-parallel.
  if (w.has_shared && collectives != nullptr && !one_reduce) collectives->AllReduceSum(shared, T * D);
  ParallelRows(pool, T, D, [&](int64_t t0, int64_t t1) {
    const size_t n = static_cast<size_t>((t1 - t0) * D);
    if (latent) kernels::RoundToBf16(out + t0 * D, n);
    if (w.has_shared) {
      kernels::RoundToBf16(shared + t0 * D, n);
      kernels::AddRoundBf16(out + t0 * D, shared + t0 * D, n);
    }
  });
}

}  // namespace k3::model
