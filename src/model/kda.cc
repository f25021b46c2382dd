// KDA attention layer over a batch (spec §2.3).
#include "src/model/kda.h"

#include <iterator>

#include "src/kernels/kda_step.h"
#include "src/kernels/step_ops.h"

namespace k3::model {

void KdaForward(const LayerStep& step, const KdaWeights& w, int64_t kda_index, const float* x, float* out) {
  const io::ModelConfig& cfg = step.cfg;
  kernels::StepEnv& env = step.env;
  const int64_t T = step.T;
  const int64_t H = cfg.kda_num_heads, K = cfg.kda_head_dim, V = cfg.kda_head_dim, P = cfg.kda_proj_dim();
  const int64_t W = cfg.short_conv_kernel_size;
  kernels::ScratchArena::Frame frame(env.arena);
  auto take = [&](int64_t n) { return env.arena.Take<float>(static_cast<size_t>(n)); };
  float* q_raw = take(T * P);  // [T, P] pre-conv projections
  float* k_raw = take(T * P);
  float* v_raw = take(T * P);
  float* q = take(T * P);  // [T, P] after conv + SiLU
  float* k = take(T * P);
  float* v = take(T * P);
  float* low_rank = take(T * K);       // [T, K] f_a outputs
  float* gate_low_rank = take(T * K);  // [T, K] g_a outputs (low-rank output gate)
  float* g = take(T * P);              // [T, P] log decay (fp32)
  float* beta = take(T * H);           // [T, H] (fp32)
  float* out_gate = take(T * P);       // [T, P]
  float* o = take(T * P);              // [T, P] core output, then gated-norm output

  // 1. Every projection of x under one fork-join (bf16 GEMMs): q, k, v, the decay gate's f_a, beta's b_proj
  //    and the output gate (full rank, or its g_a); then the second halves of the low-rank gates.
  const bool full_rank_gate = w.g_proj.data != nullptr;
  const kernels::MatMulJob projections[] = {
      LinearJob(x, T, w.q_proj, q_raw),
      LinearJob(x, T, w.k_proj, k_raw),
      LinearJob(x, T, w.v_proj, v_raw),
      LinearJob(x, T, w.f_a_proj, low_rank),
      LinearJob(x, T, w.b_proj, beta),
      full_rank_gate ? LinearJob(x, T, w.g_proj, out_gate) : LinearJob(x, T, w.g_a_proj, gate_low_rank)};
  kernels::Linears(env, projections, std::size(projections));
  const kernels::MatMulJob second_halves[] = {LinearJob(low_rank, T, w.f_b_proj, g),
                                              LinearJob(gate_low_rank, T, w.g_b_proj, out_gate)};
  kernels::Linears(env, second_halves, full_rank_gate ? 1 : 2);

  // Each sequence's rows and its state of this layer.
  const size_t num_segments = step.segments.size();
  kernels::KdaSequence* sequences = env.arena.Take<kernels::KdaSequence>(num_segments);
  for (size_t i = 0; i < num_segments; ++i) {
    const SequenceSegment& seg = step.segments[i];
    KdaLayerState& state = seg.state->kda(kda_index);
    sequences[i] = {seg.row_begin, seg.rows, state.recurrent.data(), state.conv_tail.data()};
  }
  const std::span<const kernels::KdaSequence> batch(sequences, num_segments);

  // 2. Short causal conv + SiLU per sequence; tails updated in place.
  kernels::KdaShortConv(
      env, {{q_raw, k_raw, v_raw}, {w.q_conv.data(), w.k_conv.data(), w.v_conv.data()}, {q, k, v}}, W, P,
      batch);
  // 3. Decay gate g (fp32) from f = f_b(f_a(x)); 4. beta = sigmoid(b_proj x) (fp32). (5. The output gate was
  //    projected in step 1.)
  kernels::KdaGates(
      env, {w.dt_bias.data(), w.a_exp.data(), cfg.kda_has_gate_lower_bound, cfg.kda_gate_lower_bound}, T, H,
      K, g, beta);
  // 6. Delta rule per (sequence, head): the recurrence, or the chunked form for prefill chunks when asked.
  kernels::KdaDeltaRule(env, {q, k, v, g, beta}, H, K, step.kda_prefill_form, batch, o);
  // 7. Per-head gated RMSNorm (fp32 weight, bf16 out) over T*H rows of V, then o_proj (row-parallel).
  kernels::GatedRmsNormRows(env, o, out_gate, w.o_norm.data(), T * H, V, cfg.rms_norm_eps, o);
  kernels::RowParallelLinear(env, LinearJob(o, T, w.o_proj, out));
}

}  // namespace k3::model
