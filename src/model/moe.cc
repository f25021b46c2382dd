// Latent MoE: router, expert grouping over the batch, weighted combine, latent norm/up, shared experts.
#include "src/model/moe.h"

#include <cstring>

#include "src/kernels/layer_ops.h"
#include "src/kernels/moe_step.h"
#include "src/kernels/step_ops.h"
#include "src/model/mlp.h"

namespace k3::model {

void RouteTokens(const float* logits, int64_t T, int64_t E, const float* correction_bias, int64_t top_k,
                 bool renormalize, float routed_scaling_factor, int32_t* experts, float* weights) {
  kernels::RouteSigmoidTopK(logits, static_cast<size_t>(T), static_cast<size_t>(E), correction_bias,
                            static_cast<size_t>(top_k), renormalize, routed_scaling_factor, experts, weights);
}

int64_t MoeForward(const LayerStep& step, const MoeWeights& w, const float* x, float* out) {
  const io::ModelConfig& cfg = step.cfg;
  kernels::StepEnv& env = step.env;
  const int64_t T = step.T;
  const int64_t D = cfg.hidden_size, E = cfg.num_experts, Ek = cfg.num_experts_per_token;
  const int64_t Lw = cfg.expert_io_dim(), R = T * Ek;
  const bool latent = w.latent_down.data != nullptr;
  kernels::ScratchArena::Frame frame(env.arena);
  auto take = [&](int64_t n) { return env.arena.Take<float>(static_cast<size_t>(n)); };

  // The products of x the routing needs under one fork-join: the router logits (fp32 logits of bf16 inputs
  // and upcast bf16 weights, not rounded) and the expert inputs z [T, Lw] (the latent down-projection, or x
  // itself). The shared experts' gate and up [T, Is] (Linear products, rounded) join them, except at decode
  // sizes the kernels overlap (T <= kMatMulOverlapMaxRows, ops.h), where they run beside the routed experts'
  // gate and up instead (below): there the MXFP4 experts leave memory idle that their bf16 rows can use.
  float* logits = take(T * E);                         // [T, E]
  int32_t* experts = env.arena.Take<int32_t>(T * Ek);  // [T, Ek]
  float* weights = take(T * Ek);                       // [T, Ek]
  float* z_latent = latent ? take(T * Lw) : nullptr;   // [T, Lw] expert inputs
  const float* z = latent ? z_latent : x;
  const int64_t Is = w.has_shared ? w.shared.gate.rows : 0;
  float* shared_gate = w.has_shared ? take(T * Is) : nullptr;  // [T, Is]
  float* shared_up = w.has_shared ? take(T * Is) : nullptr;    // [T, Is]
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
  if (latent) projections[num_projections++] = LinearJob(x, T, w.latent_down, z_latent);
  if (w.has_shared && !shared_beside_experts) {
    projections[num_projections++] = shared_gate_up[0];
    projections[num_projections++] = shared_gate_up[1];
  }
  kernels::MatMulGroup(env, projections, num_projections);
  for (size_t j = 1; j < num_projections; ++j) {  // the Linear products; the router logits stay fp32
    kernels::RoundToBf16Rows(env, projections[j].y, T, static_cast<int64_t>(projections[j].N));
  }
  RouteTokens(logits, T, E, w.correction_bias.data(), Ek, cfg.moe_renormalize, cfg.routed_scaling_factor,
              experts, weights);

  // The (token, slot) pairs grouped by expert: expert e's rows are order[begin[e] .. begin[e + 1]).
  int32_t* begin = env.arena.Take<int32_t>(E + 1);  // [E + 1]
  int32_t* order = env.arena.Take<int32_t>(R);      // [R]
  const int64_t experts_run = kernels::GroupByExpert(env, experts, T, Ek, E, begin, order);

  // Every selected expert over its rows: the rows of expert e are z of the tokens of its slots; its
  // outputs go back to slot_out[(token, slot)].
  // Split across ranks, the shared experts' down projection runs before the experts' all-reduce and its
  // partial sums [T, D] travel behind expert_out in the same all-reduce: one latency per MoE layer instead
  // of two (the sums, and so the results, are the same).
  const bool one_reduce = w.has_shared && env.sharded();
  float* gathered = take(R * Lw);  // [R, Lw], expert by expert
  // [R, Lw], same rows; then the shared experts' [T, D] when one_reduce
  float* expert_out = take(R * Lw + (one_reduce ? T * D : 0));
  float* shared = !w.has_shared ? nullptr : one_reduce ? expert_out + R * Lw : take(T * D);
  int32_t* token_of = env.arena.Take<int32_t>(R);  // the token of each grouped row
  for (int64_t r = 0; r < R; ++r) token_of[r] = order[r] / static_cast<int32_t>(Ek);
  kernels::GatherRows(env, z, Lw, token_of, R, gathered);
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
      kernels::GluRows(env, GluOf(cfg), shared_gate, shared_up, T, Is,
                       /*round_inputs=*/shared_beside_experts);
    };
    if (shared_beside_experts || one_reduce) {
      beside.second = &shared_down;
      beside.num_second = 1;
    }
  }
  ExpertsForward(step, w.experts, begin, gathered, expert_out, beside);
  // Sharded: each rank holds its experts' rows (EP; zeros elsewhere, so the sum is exact) or a partial
  // sum over its slice of every expert's width (TP). Summed before the rounding, then rounded once.
  if (one_reduce) {
    env.collectives->AllReduceSum(expert_out, R * Lw + T * D);
  } else if (env.collectives != nullptr) {
    env.collectives->AllReduceSum(expert_out, R * Lw);
  }
  float* slot_out = take(R * Lw);  // [R, Lw] expert outputs per (token, slot)
  kernels::RoundScatterRows(env, expert_out, Lw, order, R, slot_out);

  // r = bf16(sum_k w_k y_k) (fp32 sum in slot order, independent of the rest of the batch); latent:
  // then its RMSNorm.
  float* combined = take(T * Lw);  // [T, Lw]
  kernels::CombineExpertSlots(env, slot_out, weights, T, Ek, Lw,
                              latent && !w.latent_norm.empty() ? w.latent_norm.data() : nullptr,
                              cfg.rms_norm_eps, combined);

  // Latent: the up-projection to D, beside the shared experts' down projection where it did not run with
  // the experts (one fork-join); then the bf16 add.
  if (!latent) std::memcpy(out, combined, sizeof(float) * T * D);
  kernels::MatMulJob outputs[2];
  size_t num_outputs = 0;
  if (latent) outputs[num_outputs++] = LinearJob(combined, T, w.latent_up, out);
  if (w.has_shared && beside.num_second == 0) outputs[num_outputs++] = shared_down;
  kernels::MatMulGroup(env, outputs, num_outputs);
  // The shared experts' down projection is row-parallel.
  if (w.has_shared && env.collectives != nullptr && !one_reduce) env.collectives->AllReduceSum(shared, T * D);
  kernels::RoundAddRows(env, out, /*round_out=*/latent, w.has_shared ? shared : nullptr, T, D);
  return experts_run;
}

}  // namespace k3::model
