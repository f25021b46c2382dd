// KDA's per-sequence steps over a batch, cut into pool tasks (kda_step.h).
#include "src/kernels/kda_step.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "src/kernels/layer_ops.h"
#include "src/kernels/ops.h"
#include "src/kernels/parallel.h"

namespace k3::kernels {

void KdaShortConv(StepEnv& env, const KdaConvStreams& streams, int64_t W, int64_t P,
                  std::span<const KdaSequence> sequences) {
  constexpr int64_t kChannelsPerTask = 256;
  const int64_t channel_tasks = (P + kChannelsPerTask - 1) / kChannelsPerTask;
  const int64_t taps_floats = W * kChannelsPerTask;  // per worker: the taps of a task, transposed
  ScratchArena::Frame frame(env.arena);
  float* taps_scratch = env.arena.Take<float>(env.workers() * taps_floats);
  for (const KdaSequence& seq : sequences) {
    ParallelTasks(
        env.pool, 3 * channel_tasks, seq.rows * kChannelsPerTask * W, [&](size_t task, size_t worker) {
          const int64_t stream = static_cast<int64_t>(task) / channel_tasks;
          const int64_t c0 = (static_cast<int64_t>(task) % channel_tasks) * kChannelsPerTask;
          const int64_t c1 = std::min(P, c0 + kChannelsPerTask);
          CausalConvSilu(streams.raw[stream] + seq.row_begin * P, streams.taps[stream], W, P, seq.rows, c0,
                         c1, seq.conv_tail + stream * (W - 1) * P, taps_scratch + worker * taps_floats,
                         streams.out[stream] + seq.row_begin * P);
        });
  }
}

void KdaGates(StepEnv& env, const KdaGateParams& params, int64_t T, int64_t H, int64_t K, float* g,
              float* beta) {
  const int64_t P = H * K;
  ParallelRows(env.pool, T, P, [&](int64_t t0, int64_t t1) {
    KdaDecayGate(g + t0 * P, params.dt_bias, params.a_exp, static_cast<size_t>(t1 - t0), H, K,
                 params.has_lower_bound, params.lower_bound);
    SigmoidInPlace(beta + t0 * H, static_cast<size_t>((t1 - t0) * H));
  });
}

void KdaDeltaRule(StepEnv& env, const KdaHeadInputs& in, int64_t H, int64_t K, KdaPrefillForm form,
                  std::span<const KdaSequence> sequences, float* o) {
  const int64_t V = K, P = H * K;
  const float q_scale = 1.0f / std::sqrt(static_cast<float>(K));
  const int64_t num_sequences = static_cast<int64_t>(sequences.size());
  int64_t max_rows = 0;
  for (const KdaSequence& seq : sequences) max_rows = std::max(max_rows, seq.rows);
  // Per worker: one head of one sequence, q, k, g [n, K], v, o [n, V], beta [n], each 64-byte aligned.
  auto padded = [](int64_t floats) { return (floats + 15) / 16 * 16; };
  const int64_t nK = padded(max_rows * K), nV = padded(max_rows * V);
  const int64_t worker_floats = 3 * nK + 2 * nV + padded(max_rows);
  ScratchArena::Frame frame(env.arena);
  float* scratch = env.arena.Take<float>(env.workers() * worker_floats);
  const bool chunked = form == KdaPrefillForm::kChunked && max_rows > 1;
  std::vector<KdaChunkScratch> chunk_scratch(chunked ? env.workers() : 0);
  ParallelTasks(env.pool, num_sequences * H, max_rows * K * V * 4, [&](size_t task, size_t worker) {
    const KdaSequence& seq = sequences[task / H];
    const int64_t h = static_cast<int64_t>(task) % H;
    const int64_t n = seq.rows;
    float* hq = scratch + worker * worker_floats;
    float* hk = hq + nK;
    float* hg = hk + nK;
    float* hv = hg + nK;
    float* ho = hv + nV;
    float* hb = ho + nV;
    const int64_t row0 = seq.row_begin;
    GatherHeadRows(in.q + row0 * P, P, h * K, n, K, /*l2norm=*/true, q_scale, hq);
    GatherHeadRows(in.k + row0 * P, P, h * K, n, K, /*l2norm=*/true, 1.0f, hk);
    GatherHeadRows(in.v + row0 * P, P, h * V, n, V, /*l2norm=*/false, 1.0f, hv);
    GatherHeadRows(in.g + row0 * P, P, h * K, n, K, /*l2norm=*/false, 1.0f, hg);
    GatherHeadRows(in.beta + row0 * H, H, h, n, 1, /*l2norm=*/false, 1.0f, hb);
    float* S = seq.state + h * K * V;  // [K, V]
    if (n == 1 || form == KdaPrefillForm::kRecurrent) {
      KdaRecurrent(hq, hk, hv, hg, hb, n, K, V, S, ho);
    } else {
      KdaChunked(hq, hk, hv, hg, hb, n, K, V, S, ho, &chunk_scratch[worker]);
    }
    // o is cast to bf16 (value dtype) before the gated norm.
    RoundToBf16(ho, n * V);
    ScatterHeadRows(ho, n, V, P, h * V, o + row0 * P);
  });
}

}  // namespace k3::kernels
