// Deterministic random weight values and their bf16 / MXFP4 encodings (see weight_init.h).
#include "src/model/weight_init.h"

#include <algorithm>
#include <cmath>
#include <string_view>

#include "src/base/check.h"

namespace k3::model {
namespace {

constexpr uint64_t kGolden = 0x9E3779B97F4A7C15ull;

// splitmix64's finaliser: a bijective 64-bit mix.
uint64_t Mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

uint64_t Fnv1a64(std::string_view text) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (char c : text) {
    h ^= static_cast<uint8_t>(c);
    h *= 0x100000001b3ull;
  }
  return h;
}

// Irwin-Hall(4) of 16-bit uniforms: the sum S of four values in [0, 65535] has mean 131070 and
// standard deviation 65536 / sqrt(3) (up to a 2^-32 relative error), so (S - 131070) * sqrt(3) / 65536
// is approximately standard normal.
constexpr float kIrwinHallScale = 1.7320508075688772f / 65536.0f;

}  // namespace

uint64_t RandomStream::Next() {
  state_ += kGolden;
  return Mix64(state_);
}

double RandomStream::Uniform() { return (static_cast<double>(Next() >> 11) + 0.5) * 0x1.0p-53; }

float RandomStream::Normal() {
  const uint64_t bits = Next();
  const int32_t sum = static_cast<int32_t>((bits & 0xffff) + ((bits >> 16) & 0xffff) +
                                           ((bits >> 32) & 0xffff) + (bits >> 48));
  return static_cast<float>(sum - 131070) * kIrwinHallScale;
}

uint64_t TensorSeed(uint64_t seed, std::string_view tensor_name) {
  return Mix64(Mix64(seed + kGolden) ^ Fnv1a64(tensor_name));
}

RandomStream RowStream(uint64_t tensor_seed, int64_t row) {
  return RandomStream(Mix64(tensor_seed ^ Mix64(static_cast<uint64_t>(row) * kGolden + 1)));
}

int64_t LogicalRowLength(const TensorSpec& spec) {
  if (spec.init == InitKind::kMxfp4Packed || spec.init == InitKind::kMxfp4Scale) return spec.fan_in;
  return spec.shape.empty() ? 1 : spec.shape.back();
}

int64_t LogicalRowCount(const TensorSpec& spec) {
  if (spec.init == InitKind::kMxfp4Packed || spec.init == InitKind::kMxfp4Scale) return spec.shape.at(0);
  int64_t count = 1;
  for (size_t i = 0; i + 1 < spec.shape.size(); ++i) count *= spec.shape[i];
  return count;
}

float LinearInitGain(const io::ModelConfig& cfg, const TensorSpec& spec) {
  const std::string_view name = spec.name;
  if (!cfg.tie_word_embeddings && name == GlobalTensorName(cfg, "lm_head.weight")) return kOutputHeadGain;
  // routed_expert_down_proj is the latent MoE's input projection, not a branch output.
  if (name.ends_with("routed_expert_down_proj.weight")) return 1.0f;
  if (name.starts_with("vision_tower.")) {
    return name.ends_with(".wo.weight") || name.ends_with(".mlp.fc1.weight") ? kResidualBranchGain : 1.0f;
  }
  if (name.starts_with("mm_projector.")) return 1.0f;
  for (std::string_view suffix : {"o_proj.weight", "down_proj.weight", "routed_expert_up_proj.weight",
                                  ".w2.weight", ".w2.weight_packed"}) {
    if (name.ends_with(suffix)) return kResidualBranchGain;
  }
  if (name.ends_with("_res_proj.weight")) return kAttnResQueryGain;
  if (name.ends_with("block_sparse_moe.gate.weight")) return kRouterGain;
  return 1.0f;
}

void InitRow(const io::ModelConfig& cfg, const TensorSpec& spec, uint64_t tensor_seed, int64_t row,
             float* out) {
  const int64_t n = LogicalRowLength(spec);
  RandomStream rng = RowStream(tensor_seed, row);
  auto fill_normal = [&](float std_dev, float mean) {
    for (int64_t i = 0; i < n; ++i) out[i] = mean + std_dev * rng.Normal();
  };
  switch (spec.init) {
    case InitKind::kLinear:
    case InitKind::kMxfp4Packed: {
      K3_CHECK(spec.fan_in > 0);
      fill_normal(LinearInitGain(cfg, spec) / std::sqrt(static_cast<float>(spec.fan_in)), 0.0f);
      return;
    }
    case InitKind::kEmbedding:
      fill_normal(spec.name.starts_with("vision_tower.") ? kVisionPositionStd : 1.0f, 0.0f);
      return;
    case InitKind::kNormWeight:
      fill_normal(0.02f, 1.0f);
      return;
    case InitKind::kConv:
      K3_CHECK(spec.fan_in > 0);
      fill_normal(1.0f / std::sqrt(static_cast<float>(spec.fan_in)), 0.0f);
      return;
    case InitKind::kALog:
      for (int64_t i = 0; i < n; ++i) {
        const double a = 1.0 + 15.0 * rng.Uniform();
        out[i] = row * n + i < cfg.kda_num_heads ? static_cast<float>(std::log(a)) : 0.0f;
      }
      return;
    case InitKind::kDtBias:
      fill_normal(0.1f, 0.0f);
      return;
    case InitKind::kRouterBias:
      fill_normal(kRouterBiasStd, 0.0f);
      return;
    case InitKind::kMxfp4Scale:
    case InitKind::kSentinel:
      break;
  }
  K3_CHECK(false && "InitRow: this InitKind has no values of its own");
}

uint8_t Mxfp4GroupScale(const float* group, size_t n) {
  float max_abs = 0.0f;
  for (size_t i = 0; i < n; ++i) max_abs = std::max(max_abs, std::fabs(group[i]));
  if (!(max_abs > 0.0f) || !std::isfinite(max_abs)) return 127;
  // max_abs = m * 2^k with m in [0.5, 1): max_abs / 2^(k-2) = 4m <= 6 always, and max_abs / 2^(k-3) = 8m
  // <= 6 exactly when m <= 0.75.
  int k = 0;
  const float m = std::frexp(max_abs, &k);
  int e = m <= 0.75f ? k - 3 : k - 2;
  e = e < -127 ? -127 : (e > 127 ? 127 : e);
  return static_cast<uint8_t>(e + 127);
}

uint8_t NearestE2M1Code(float x) {
  // Magnitudes {0, .5, 1, 1.5, 2, 3, 4, 6} are codes 0..7: the code is the number of midpoints below
  // |x|, where a midpoint counts when |x| equals it only if the code above it is even (ties to even).
  // Branch-free: random weights would mispredict every branch of a comparison chain. NaN gives 0.
  const float a = std::fabs(x);
  const int code = int{a > 0.25f} + int{a >= 0.75f} + int{a > 1.25f} + int{a >= 1.75f} + int{a > 2.5f} +
                   int{a >= 3.5f} + int{a > 5.0f};
  return static_cast<uint8_t>(code | (std::signbit(x) ? 8 : 0));
}

void QuantizeMxfp4Row(const float* row, size_t n, uint8_t* packed, uint8_t* scales) {
  K3_CHECK(n % 32 == 0);
  for (size_t g = 0; g < n / 32; ++g) {
    const float* group = row + 32 * g;
    scales[g] = Mxfp4GroupScale(group, 32);
    // 2^-(s-127): exact, as s - 127 lies in [-127, 127] and the inverse in [2^-127, 2^127].
    const float inverse_scale = std::ldexp(1.0f, 127 - static_cast<int>(scales[g]));
    for (size_t i = 0; i < 32; i += 2) {
      const uint8_t low = NearestE2M1Code(group[i] * inverse_scale);
      const uint8_t high = NearestE2M1Code(group[i + 1] * inverse_scale);
      packed[16 * g + i / 2] = static_cast<uint8_t>(low | (high << 4));
    }
  }
}

}  // namespace k3::model
