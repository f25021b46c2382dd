// Scalar reference implementations of ops.h: plain loops, written to mirror the spec's formulas.
// They are the oracle for the SIMD kernels and must stay simple; speed does not matter here.
#include <cmath>

#include "src/kernels/ops.h"

namespace k3::kernels {

float E2M1ToFloat(uint8_t code) {
  static constexpr float kMagnitude[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
  float m = kMagnitude[code & 7];
  return (code & 8) ? -m : m;
}

float E8M0ToFloat(uint8_t scale) { return std::ldexp(1.0f, static_cast<int>(scale) - 127); }

void DequantMxfp4Row(const uint8_t* packed, const uint8_t* scales, size_t K, float* out) {
  for (size_t c = 0; c < K; ++c) {
    uint8_t byte = packed[c / 2];
    uint8_t code = (c % 2 == 0) ? (byte & 0x0f) : (byte >> 4);
    out[c] = E2M1ToFloat(code) * E8M0ToFloat(scales[c / 32]);
  }
}

namespace scalar {

void MatMulBf16(const float* x, size_t M, size_t K, const bf16* W, size_t N, float* y) {
  for (size_t m = 0; m < M; ++m) {
    for (size_t n = 0; n < N; ++n) {
      float acc = 0.0f;
      for (size_t k = 0; k < K; ++k) acc += x[m * K + k] * Bf16ToFloat(W[n * K + k]);
      y[m * N + n] = acc;
    }
  }
}

void MatMulF32(const float* x, size_t M, size_t K, const float* W, size_t N, float* y) {
  for (size_t m = 0; m < M; ++m) {
    for (size_t n = 0; n < N; ++n) {
      float acc = 0.0f;
      for (size_t k = 0; k < K; ++k) acc += x[m * K + k] * W[n * K + k];
      y[m * N + n] = acc;
    }
  }
}

void MatMulMxfp4(const float* x, size_t M, size_t K, const uint8_t* packed, const uint8_t* scales, size_t N,
                 float* y) {
  for (size_t m = 0; m < M; ++m) {
    for (size_t n = 0; n < N; ++n) {
      float acc = 0.0f;
      for (size_t k = 0; k < K; ++k) {
        uint8_t byte = packed[n * (K / 2) + k / 2];
        uint8_t code = (k % 2 == 0) ? (byte & 0x0f) : (byte >> 4);
        acc += x[m * K + k] * (E2M1ToFloat(code) * E8M0ToFloat(scales[n * (K / 32) + k / 32]));
      }
      y[m * N + n] = acc;
    }
  }
}

void RoundToBf16(float* x, size_t n) {
  for (size_t i = 0; i < n; ++i) x[i] = RoundBf16(x[i]);
}

void Bf16ToF32(const bf16* x, size_t n, float* y) {
  for (size_t i = 0; i < n; ++i) y[i] = Bf16ToFloat(x[i]);
}

void RmsNorm(const float* x, const bf16* w, size_t n, float eps, float* y) {
  float ss = 0.0f;
  for (size_t i = 0; i < n; ++i) ss += x[i] * x[i];
  float inv = 1.0f / std::sqrt(ss / static_cast<float>(n) + eps);
  for (size_t i = 0; i < n; ++i) y[i] = RoundBf16(Bf16ToFloat(w[i]) * RoundBf16(x[i] * inv));
}

void RmsNormNoWeight(const float* x, size_t n, float eps, float* y) {
  float ss = 0.0f;
  for (size_t i = 0; i < n; ++i) ss += x[i] * x[i];
  float inv = 1.0f / std::sqrt(ss / static_cast<float>(n) + eps);
  for (size_t i = 0; i < n; ++i) y[i] = x[i] * inv;
}

static float Sigmoid(float v) { return 1.0f / (1.0f + std::exp(-v)); }

void GatedRmsNorm(const float* o, const float* gate, const float* w, size_t n, float eps, float* y) {
  float ss = 0.0f;
  for (size_t i = 0; i < n; ++i) ss += o[i] * o[i];
  float inv = 1.0f / std::sqrt(ss / static_cast<float>(n) + eps);
  for (size_t i = 0; i < n; ++i) y[i] = RoundBf16(o[i] * inv * w[i] * Sigmoid(gate[i]));
}

void SituGlu(const float* a, const float* b, size_t n, float beta, float linear_beta, float* out) {
  for (size_t i = 0; i < n; ++i) {
    float act = beta * std::tanh(a[i] / beta) * Sigmoid(a[i]);
    float lin = linear_beta * std::tanh(b[i] / linear_beta);
    out[i] = RoundBf16(act * lin);
  }
}

void SiluGlu(const float* a, const float* b, size_t n, float* out) {
  for (size_t i = 0; i < n; ++i) out[i] = RoundBf16(a[i] * Sigmoid(a[i]) * b[i]);
}

float Dot(const float* a, const float* b, size_t n) {
  float acc = 0.0f;
  for (size_t i = 0; i < n; ++i) acc += a[i] * b[i];
  return acc;
}

void Axpy(float alpha, const float* x, float* y, size_t n) {
  for (size_t i = 0; i < n; ++i) y[i] += alpha * x[i];
}

void Softmax(float* x, size_t n) {
  if (n == 0) return;
  float mx = x[0];
  for (size_t i = 1; i < n; ++i) mx = std::max(mx, x[i]);
  float sum = 0.0f;
  for (size_t i = 0; i < n; ++i) {
    x[i] = std::exp(x[i] - mx);
    sum += x[i];
  }
  for (size_t i = 0; i < n; ++i) x[i] /= sum;
}

void F32ToBf16(const float* x, size_t n, bf16* y) {
  for (size_t i = 0; i < n; ++i) y[i] = FloatToBf16(x[i]);
}

float DotBf16(const float* a, const bf16* b, size_t n) {
  float acc = 0.0f;
  for (size_t i = 0; i < n; ++i) acc += a[i] * Bf16ToFloat(b[i]);
  return acc;
}

void AxpyBf16(float alpha, const bf16* x, float* y, size_t n) {
  for (size_t i = 0; i < n; ++i) y[i] += alpha * Bf16ToFloat(x[i]);
}

}  // namespace scalar
}  // namespace k3::kernels
