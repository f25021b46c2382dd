// MLA's head-by-head steps over a batch (mla_step.h).
#include "src/kernels/mla_step.h"

#include <algorithm>

#include "src/kernels/layer_ops.h"
#include "src/kernels/ops.h"
#include "src/kernels/parallel.h"

namespace k3::kernels {

void StoreLatentRows(StepEnv& env, const float* latent, int64_t width,
                     std::span<const LatentSequence> sequences) {
  for (const LatentSequence& seq : sequences) {
    ScratchArena::Frame frame(env.arena);
    const float* src = latent + seq.row_begin * width;
    if (seq.cache.bf16_rows) {
      bf16** rows = env.arena.Take<bf16*>(static_cast<size_t>(seq.rows));
      for (int64_t i = 0; i < seq.rows; ++i) rows[i] = seq.cache.RowBf16(seq.start_pos + i);
      StoreRowsBf16(src, width, rows, seq.rows);
    } else {
      float** rows = env.arena.Take<float*>(static_cast<size_t>(seq.rows));
      for (int64_t i = 0; i < seq.rows; ++i) rows[i] = seq.cache.RowF32(seq.start_pos + i);
      StoreRows(src, width, rows, seq.rows);
    }
  }
}

void AbsorbQueries(StepEnv& env, const MlaHeadDims& dims, const float* q, int64_t T,
                   const bf16* key_up_transposed, float* query) {
  const int64_t H = dims.H, nope = dims.nope, Rp = dims.Rp, R = dims.R, Q = nope + Rp, row_width = R + Rp;
  ScratchArena::Frame frame(env.arena);
  float* head_in = env.arena.Take<float>(H * T * nope);  // [H, T, nope] q_nope per head
  float* head_out = env.arena.Take<float>(H * T * R);    // [H, T, R] absorbed q_nope per head
  MatMulJob* jobs = env.arena.Take<MatMulJob>(H);
  for (int64_t h = 0; h < H; ++h) {
    CopyRows(q + h * Q, H * Q, head_in + h * T * nope, nope, T, nope);  // q_nope_h [T, nope]
    jobs[h] = MatMulJob::Bf16(head_in + h * T * nope, T, nope, key_up_transposed + h * R * nope, R,
                              head_out + h * T * R);
  }
  MatMulGroup(jobs, H, env.pool);
  for (int64_t h = 0; h < H; ++h) {  // query[h, t] = [absorbed q_nope (R), q_pe (Rp)]
    CopyRows(head_out + h * T * R, R, query + h * T * row_width, row_width, T, R);
    CopyRows(q + h * Q + nope, H * Q, query + h * T * row_width + R, row_width, T, Rp);
  }
}

void ValueHeads(StepEnv& env, const MlaHeadDims& dims, const float* ctx, int64_t T, const bf16* kv_b,
                const float* gate, float* o) {
  const int64_t H = dims.H, nope = dims.nope, R = dims.R, Vh = dims.Vh;
  ScratchArena::Frame frame(env.arena);
  float* head_out = env.arena.Take<float>(H * T * Vh);  // [H, T, Vh]
  MatMulJob* jobs = env.arena.Take<MatMulJob>(H);
  for (int64_t h = 0; h < H; ++h) {  // Wuv_h: rows [h*(nope+Vh) + nope, (h+1)*(nope+Vh)) of kv_b
    const bf16* wuv = kv_b + (h * (nope + Vh) + nope) * R;
    jobs[h] = MatMulJob::Bf16(ctx + h * T * R, T, R, wuv, Vh, head_out + h * T * Vh);
  }
  MatMulGroup(jobs, H, env.pool);
  // [H, T, Vh] -> [T, H*Vh], rounded, then the optional gate (fp32 product of the bf16 values, rounded once).
  ParallelRows(env.pool, T, H * Vh, [&](int64_t t0, int64_t t1) {
    const int64_t rows = t1 - t0;
    for (int64_t h = 0; h < H; ++h) {
      CopyRows(head_out + (h * T + t0) * Vh, Vh, o + t0 * H * Vh + h * Vh, H * Vh, rows, Vh);
    }
    float* o_rows = o + t0 * H * Vh;
    RoundToBf16(o_rows, rows * H * Vh);
    if (gate != nullptr) SigmoidGateRoundBf16(o_rows, gate + t0 * H * Vh, rows * H * Vh);
  });
}

}  // namespace k3::kernels
