// KDA attention layer over a batch (spec §2.3).
#include "src/model/kda.h"

#include <algorithm>
#include <cmath>
#include <iterator>

#include "src/base/check.h"
#include "src/kernels/ops.h"

namespace k3::model {
namespace {

float Softplus(float x) { return x > 20.0f ? x : std::log1p(std::exp(x)); }

// Causal depthwise conv + SiLU of one stream for one sequence, channels [c0, c1):
//   c[i, ch] = sum_j taps[ch, j] * raw[i - (W-1) + j, ch]  (raw before the segment comes from the tail),
//   out = bf16(silu(c)); then tail <- the last W-1 raw rows. raw/out: [T, P]; tail: [W-1, P].
void ConvSiluChannels(const float* raw, const float* taps, int64_t W, int64_t P, const SequenceSegment& seg,
                      int64_t c0, int64_t c1, float* tail, float* new_tail, float* out) {
  const int64_t taps_before = W - 1;
  auto source = [&](int64_t i, int64_t ch) {  // raw row i of the segment (i < 0: from the tail)
    return i >= 0 ? raw[(seg.row_begin + i) * P + ch] : tail[(taps_before + i) * P + ch];
  };
  for (int64_t ch = c0; ch < c1; ++ch) {
    const float* tap = taps + ch * W;
    for (int64_t i = 0; i < seg.rows; ++i) {
      float c = 0.0f;
      for (int64_t j = 0; j < W; ++j) c += tap[j] * source(i - taps_before + j, ch);
      out[(seg.row_begin + i) * P + ch] = RoundBf16(c * Sigmoid(c));
    }
    for (int64_t r = 0; r < taps_before; ++r) new_tail[r] = source(seg.rows - taps_before + r, ch);
    for (int64_t r = 0; r < taps_before; ++r) tail[r * P + ch] = new_tail[r];
  }
}

// Copies one head's rows into contiguous [n, width] and optionally l2-normalises each row
// (x / sqrt(sum x^2 + 1e-6)) times `scale`.
void GatherHead(const float* src, int64_t stride, int64_t offset, int64_t n, int64_t width, bool l2norm,
                float scale, float* dst) {
  for (int64_t i = 0; i < n; ++i) {
    const float* row = src + i * stride + offset;
    float* d = dst + i * width;
    float inv = 1.0f;
    if (l2norm) {
      float ss = 0.0f;
      for (int64_t c = 0; c < width; ++c) ss += row[c] * row[c];
      inv = scale / std::sqrt(ss + 1e-6f);
    }
    for (int64_t c = 0; c < width; ++c) d[c] = row[c] * inv;
  }
}

}  // namespace

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
      float* new_tail = Grow(s->workers[worker].tail, static_cast<size_t>(W));
      ConvSiluChannels(raw, taps, W, P, seg, c0, c1, tails + stream * (W - 1) * P, new_tail, dst);
    });
  }

  // 3. Decay gate g (fp32) from f = f_b(f_a(x)).
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t h = 0; h < H; ++h) {
      for (int64_t d = 0; d < K; ++d) {
        float& gv = g[t * P + h * K + d];
        const float u = gv + w.dt_bias[h * K + d];
        gv = cfg.kda_has_gate_lower_bound ? cfg.kda_gate_lower_bound * Sigmoid(w.a_exp[h] * u)
                                          : -w.a_exp[h] * Softplus(u);
      }
    }
  }
  // 4. beta = sigmoid(b_proj x) (fp32). (5. The output gate was projected in step 1.)
  for (int64_t i = 0; i < T * H; ++i) beta[i] = Sigmoid(beta[i]);

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
    GatherHead(q + row0 * P, P, h * K, n, K, /*l2norm=*/true, q_scale, hq);
    GatherHead(k + row0 * P, P, h * K, n, K, /*l2norm=*/true, 1.0f, hk);
    GatherHead(v + row0 * P, P, h * V, n, V, /*l2norm=*/false, 1.0f, hv);
    GatherHead(g + row0 * P, P, h * K, n, K, /*l2norm=*/false, 1.0f, hg);
    for (int64_t i = 0; i < n; ++i) hb[i] = beta[(row0 + i) * H + h];
    float* S = seg.state->kda(kda_index).recurrent.data() + h * K * V;  // [K, V]
    if (n == 1 || s->prefill_form == KdaPrefillForm::kRecurrent) {
      KdaRecurrent(hq, hk, hv, hg, hb, n, K, V, S, ho);
    } else {
      KdaChunked(hq, hk, hv, hg, hb, n, K, V, S, ho, &ws.chunk);
    }
    // o is cast to bf16 (value dtype) before the gated norm.
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t c = 0; c < V; ++c) o[(row0 + i) * P + h * V + c] = RoundBf16(ho[i * V + c]);
    }
  });

  // 7. Per-head gated RMSNorm (fp32 weight, bf16 out), then o_proj.
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t h = 0; h < H; ++h) {
      float* oh = o + t * P + h * V;
      kernels::GatedRmsNorm(oh, out_gate + t * P + h * V, w.o_norm.data(), V, cfg.rms_norm_eps, oh);
    }
  }
  RowParallelLinear(o, T, w.o_proj, out, pool, collectives);
}

}  // namespace k3::model
