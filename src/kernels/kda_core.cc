// KDA core: the scalar reference of the recurrent rule and the chunked prefill form for one head (spec
// §2.3). The SIMD recurrence is in kda_ops-inl.h, dispatched by ops.cc.
#include "src/kernels/kda_core.h"

#include <algorithm>
#include <cmath>

#include <vector>

namespace k3::kernels {
namespace {

// buffer.data() with at least n elements (grows, never shrinks).
float* Grow(std::vector<float>& buffer, size_t n) {
  if (buffer.size() < n) buffer.resize(n);
  return buffer.data();
}

}  // namespace

void scalar::KdaRecurrent(const float* q, const float* k, const float* v, const float* g, const float* beta,
                          int64_t n, int64_t K, int64_t V, float* S, float* o) {
  thread_local std::vector<float> delta_buffer;
  float* delta = Grow(delta_buffer, static_cast<size_t>(V));  // [V] beta * (v - S^T k)
  for (int64_t t = 0; t < n; ++t) {
    const float* q_t = q + t * K;
    const float* k_t = k + t * K;
    const float* v_t = v + t * V;
    const float* g_t = g + t * K;
    // 1. Decay rows; 2. prediction p = S^T k.
    std::fill(delta, delta + V, 0.0f);
    for (int64_t d = 0; d < K; ++d) {
      const float decay = std::exp(g_t[d]);
      float* row = S + d * V;
      for (int64_t c = 0; c < V; ++c) {
        row[c] *= decay;
        delta[c] += row[c] * k_t[d];
      }
    }
    // 3. Delta write S += beta k (v - p)^T.
    for (int64_t c = 0; c < V; ++c) delta[c] = beta[t] * (v_t[c] - delta[c]);
    for (int64_t d = 0; d < K; ++d) {
      float* row = S + d * V;
      for (int64_t c = 0; c < V; ++c) row[c] += k_t[d] * delta[c];
    }
    // 4. Read o = S^T q with the updated state.
    float* o_t = o + t * V;
    std::fill(o_t, o_t + V, 0.0f);
    for (int64_t d = 0; d < K; ++d) {
      const float* row = S + d * V;
      for (int64_t c = 0; c < V; ++c) o_t[c] += row[c] * q_t[d];
    }
  }
}

void KdaChunked(const float* q, const float* k, const float* v, const float* g, const float* beta, int64_t n,
                int64_t K, int64_t V, float* S, float* o, KdaChunkScratch* scratch) {
  constexpr int64_t C = kKdaChunk;
  float* G = Grow(scratch->G, C * K);
  float* A = Grow(scratch->A, C * C);
  float* L = Grow(scratch->L, C * C);
  float* Wm = Grow(scratch->Wm, C * K);
  float* Vn = Grow(scratch->Vn, C * V);
  float* Aqk = Grow(scratch->Aqk, C * C);
  float* decayed = Grow(scratch->decayed, C * K);

  for (int64_t c0 = 0; c0 < n; c0 += C) {
    const int64_t m = std::min(C, n - c0);  // tokens in this chunk
    const float* qc = q + c0 * K;
    const float* kc = k + c0 * K;
    const float* vc = v + c0 * V;
    const float* bc = beta + c0;
    float* oc = o + c0 * V;

    // G_i = sum_{s <= i} g_s.
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t d = 0; d < K; ++d)
        G[i * K + d] = (i > 0 ? G[(i - 1) * K + d] : 0.0f) + g[(c0 + i) * K + d];
    }
    // L[i, j] = beta_i k̂_i·(exp(G_i - G_j) ⊙ k̂_j) (j < i); Aqk[i, j] = q̂_i·(exp(G_i - G_j) ⊙ k̂_j) (j <= i).
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j <= i; ++j) {
        float lk = 0.0f, lq = 0.0f;
        for (int64_t d = 0; d < K; ++d) {
          const float kj = kc[j * K + d] * std::exp(G[i * K + d] - G[j * K + d]);  // exponent <= 0
          lk += kc[i * K + d] * kj;
          lq += qc[i * K + d] * kj;
        }
        L[i * C + j] = j < i ? bc[i] * lk : 0.0f;
        Aqk[i * C + j] = lq;
      }
    }
    // A = (I + L)^-1 by forward substitution (unit lower triangular), then T = A diag(beta).
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < i; ++j) {
        float acc = 0.0f;
        for (int64_t s = j; s < i; ++s) acc += L[i * C + s] * A[s * C + j];
        A[i * C + j] = -acc;
      }
      A[i * C + i] = 1.0f;
    }
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j <= i; ++j) A[i * C + j] *= bc[j];
    }
    // W = T (exp(G) ⊙ k̂); Vn = T v - W S.
    for (int64_t j = 0; j < m; ++j) {
      for (int64_t d = 0; d < K; ++d) decayed[j * K + d] = std::exp(G[j * K + d]) * kc[j * K + d];
    }
    for (int64_t i = 0; i < m; ++i) {
      float* w_i = Wm + i * K;
      float* u_i = Vn + i * V;
      std::fill(w_i, w_i + K, 0.0f);
      std::fill(u_i, u_i + V, 0.0f);
      for (int64_t j = 0; j <= i; ++j) {
        const float t = A[i * C + j];
        for (int64_t d = 0; d < K; ++d) w_i[d] += t * decayed[j * K + d];
        for (int64_t c = 0; c < V; ++c) u_i[c] += t * vc[j * V + c];
      }
      for (int64_t d = 0; d < K; ++d) {
        const float* s_row = S + d * V;
        for (int64_t c = 0; c < V; ++c) u_i[c] -= w_i[d] * s_row[c];
      }
    }
    // o_i = (q̂_i ⊙ exp(G_i)) S + sum_{j <= i} Aqk[i, j] Vn_j (with the incoming state).
    for (int64_t i = 0; i < m; ++i) {
      float* o_i = oc + i * V;
      std::fill(o_i, o_i + V, 0.0f);
      for (int64_t d = 0; d < K; ++d) {
        const float qd = qc[i * K + d] * std::exp(G[i * K + d]);
        const float* s_row = S + d * V;
        for (int64_t c = 0; c < V; ++c) o_i[c] += qd * s_row[c];
      }
      for (int64_t j = 0; j <= i; ++j) {
        const float a = Aqk[i * C + j];
        for (int64_t c = 0; c < V; ++c) o_i[c] += a * Vn[j * V + c];
      }
    }
    // S <- diag(exp(G_last)) S + sum_j (exp(G_last - G_j) ⊙ k̂_j) Vn_j^T.
    const float* G_last = G + (m - 1) * K;
    for (int64_t d = 0; d < K; ++d) {
      float* s_row = S + d * V;
      const float decay = std::exp(G_last[d]);
      for (int64_t c = 0; c < V; ++c) s_row[c] *= decay;
      for (int64_t j = 0; j < m; ++j) {
        const float kd = std::exp(G_last[d] - G[j * K + d]) * kc[j * K + d];
        for (int64_t c = 0; c < V; ++c) s_row[c] += kd * Vn[j * V + c];
      }
    }
  }
}

}  // namespace k3::kernels
