// KDA attention layer over a batch (spec §2.3).
#include "src/model/kda.h"

#include <algorithm>
#include <cmath>
#include <iterator>

#include "src/base/check.h"
#include "src/kernels/layer_ops.h"
#include "src/kernels/ops.h"

namespace k3::model {

void KdaForward(const io::ModelConfig& cfg, const KdaWeights& w, int64_t kda_index, const float* x, int64_t T,
                std::span<const SequenceSegment> segments, KdaScratch* s, ThreadPool* pool, float* out,
                Collectives* collectives) {
  const int64_t H = cfg.kda_num_heads, K = cfg.kda_head_dim, V = cfg.kda_head_dim, P = cfg.kda_proj_dim();
  const int64_t W = cfg.short_conv_kernel_size;
  float* q_raw = Grow(s->q_raw, T * P);
  float* k_raw = Grow(s->k_raw, T * P);
  float* v_raw = Grow(s->v_raw, T * P);
  float* q = Grow(s->q, T * P);
  float* k = Grow(s->k, T * P);
  float* v = Grow(s->v, T * P);
  float* low_rank = Grow(s->low_rank, T * K);
  float* g = Grow(s->g, T * P);
  float* beta = Grow(s->beta, T * H);
  float* out_gate = Grow(s->out_gate, T * P);
  float* o = Grow(s->o, T * P);
  if (s->workers.size() < NumWorkers(pool)) s->workers.resize(NumWorkers(pool));

  // 1. Every projection of x under one fork-join (bf16 GEMMs): q, k, v, the decay gate's f_a, beta's b_proj
  //    and the output gate (full rank, or its g_a); then the second halves of the low-rank gates.
  const bool full_rank_gate = w.g_proj.data != nullptr;
  float* gate_low_rank = Grow(s->gate_low_rank, T * K);
  const kernels::MatMulJob projections[] = {
      LinearJob(x, T, w.q_proj, q_raw),
      LinearJob(x, T, w.k_proj, k_raw),
      LinearJob(x, T, w.v_proj, v_raw),
      LinearJob(x, T, w.f_a_proj, low_rank),
      LinearJob(x, T, w.b_proj, beta),
      full_rank_gate ? LinearJob(x, T, w.g_proj, out_gate) : LinearJob(x, T, w.g_a_proj, gate_low_rank)};
  Linears(projections, std::size(projections), pool);
  const kernels::MatMulJob second_halves[] = {LinearJob(low_rank, T, w.f_b_proj, g),
                                              LinearJob(gate_low_rank, T, w.g_b_proj, out_gate)};
  Linears(second_halves, full_rank_gate ? 1 : 2, pool);

  // 2. Short causal conv + SiLU per sequence, channels split over the pool; tails updated in place.
  constexpr int64_t kChannelsPerTask = 256;
  const int64_t channel_tasks = (P + kChannelsPerTask - 1) / kChannelsPerTask;
  for (const SequenceSegment& seg : segments) {
    float* tails = seg.state->kda(kda_index).conv_tail.data();  // [3, W-1, P]
    ParallelTasks(pool, 3 * channel_tasks, seg.rows * kChannelsPerTask * W, [&](size_t task, size_t worker) {
      const int64_t stream = static_cast<int64_t>(task) / channel_tasks;
      const int64_t c0 = (static_cast<int64_t>(task) % channel_tasks) * kChannelsPerTask;
      const int64_t c1 = std::min(P, c0 + kChannelsPerTask);
      const float* raw = stream == 0 ? q_raw : stream == 1 ? k_raw : v_raw;
      const float* taps = (stream == 0 ? w.q_conv : stream == 1 ? w.k_conv : w.v_conv).data();
      float* dst = stream == 0 ? q : stream == 1 ? k : v;
      float* scratch = Grow(s->workers[worker].conv_taps, static_cast<size_t>(W * kChannelsPerTask));
      kernels::CausalConvSilu(raw + seg.row_begin * P, taps, W, P, seg.rows, c0, c1,
                              tails + stream * (W - 1) * P, scratch, dst + seg.row_begin * P);
    });
  }

  // 3. Decay gate g (fp32) from f = f_b(f_a(x)).
  // 4. beta = sigmoid(b_proj x) (fp32). (5. The output gate was projected in step 1.)
  ParallelRows(pool, T, P, [&](int64_t t0, int64_t t1) {
    kernels::KdaDecayGate(g + t0 * P, w.dt_bias.data(), w.a_exp.data(), static_cast<size_t>(t1 - t0), H, K,
                          cfg.kda_has_gate_lower_bound, cfg.kda_gate_lower_bound);
    kernels::SigmoidInPlace(beta + t0 * H, static_cast<size_t>((t1 - t0) * H));
  });

  // 6. Delta rule per (sequence, head): the recurrence, or the chunked form for prefill chunks when asked.
  const float q_scale = 1.0f / std::sqrt(static_cast<float>(K));
  const int64_t num_segments = static_cast<int64_t>(segments.size());
  int64_t max_rows = 0;
  for (const SequenceSegment& seg : segments) max_rows = std::max(max_rows, seg.rows);
  ParallelTasks(pool, num_segments * H, max_rows * K * V * 4, [&](size_t task, size_t worker) {
    const SequenceSegment& seg = segments[task / H];
    const int64_t h = static_cast<int64_t>(task) % H;
    const int64_t n = seg.rows;
    KdaScratch::Worker& ws = s->workers[worker];
    float* hq = Grow(ws.q, n * K);
    float* hk = Grow(ws.k, n * K);
    float* hv = Grow(ws.v, n * V);
    float* hg = Grow(ws.g, n * K);
    float* hb = Grow(ws.beta, n);
    float* ho = Grow(ws.o, n * V);
    const int64_t row0 = seg.row_begin;
    kernels::GatherHeadRows(q + row0 * P, P, h * K, n, K, /*l2norm=*/true, q_scale, hq);
    kernels::GatherHeadRows(k + row0 * P, P, h * K, n, K, /*l2norm=*/true, 1.0f, hk);
    kernels::GatherHeadRows(v + row0 * P, P, h * V, n, V, /*l2norm=*/false, 1.0f, hv);
    kernels::GatherHeadRows(g + row0 * P, P, h * K, n, K, /*l2norm=*/false, 1.0f, hg);
    kernels::GatherHeadRows(beta + row0 * H, H, h, n, 1, /*l2norm=*/false, 1.0f, hb);
    float* S = seg.state->kda(kda_index).recurrent.data() + h * K * V;  // [K, V]
    if (n == 1 || s->prefill_form == kernels::KdaPrefillForm::kRecurrent) {
      kernels::KdaRecurrent(hq, hk, hv, hg, hb, n, K, V, S, ho);
    } else {
      kernels::KdaChunked(hq, hk, hv, hg, hb, n, K, V, S, ho, &ws.chunk);
    }
    // o is cast to bf16 (value dtype) before the gated norm.
    kernels::RoundToBf16(ho, n * V);
    kernels::ScatterHeadRows(ho, n, V, P, h * V, o + row0 * P);
  });

  // 7. Per-head gated RMSNorm (fp32 weight, bf16 out), then o_proj.
  ParallelRows(pool, T * H, V, [&](int64_t r0, int64_t r1) {  // rows of V values (P = H * V)
    kernels::GatedRmsNormRows(o + r0 * V, out_gate + r0 * V, w.o_norm.data(), static_cast<size_t>(r1 - r0), V,
                              cfg.rms_norm_eps, o + r0 * V);
  });
  RowParallelLinear(o, T, w.o_proj, out, pool, collectives);
}

}  // namespace k3::model
