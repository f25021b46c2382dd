// Deterministic random weights for generated checkpoints: a self-contained PRNG, the value each InitKind
// (tensors.h) draws, and the encodings the checkpoint stores (bf16, MXFP4 of spec §3.3).
//
// Determinism. Every tensor draws from its own seed, TensorSeed(seed, name), and every logical row of it
// from its own stream, so a tensor's values depend only on (seed, name, row) — not on the order tensors
// are written in, nor on how rows are spread over threads. The PRNG is splitmix64; "normal" values are
// the Irwin-Hall sum of four 16-bit uniforms scaled to unit variance (bounded at +-3.46, plenty for random
// weights and exactly reproducible with integer arithmetic and one rounding).
//
// Logical rows. A tensor is viewed as rows of its last logical dimension (for MXFP4 pairs: the unpacked
// input width, fan_in), so a [out, in] matrix has `out` rows and a 1-D tensor has one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "src/io/model_config.h"
#include "src/model/tensors.h"

namespace k3::model {

// splitmix64: 64-bit state, one multiply-xorshift finaliser per draw.
class RandomStream {
 public:
  explicit RandomStream(uint64_t seed) : state_(seed) {}
  uint64_t Next();
  // Uniform in (0, 1), never 0 or 1.
  double Uniform();
  // Approximately standard normal: mean 0, variance 1, |value| <= 2 * sqrt(3).
  float Normal();

 private:
  uint64_t state_;
};

// The seed of one tensor's values.
uint64_t TensorSeed(uint64_t seed, std::string_view tensor_name);
// The stream of one logical row of a tensor.
RandomStream RowStream(uint64_t tensor_seed, int64_t row);

// Logical row length and row count of a tensor (see the file comment).
int64_t LogicalRowLength(const TensorSpec& spec);
int64_t LogicalRowCount(const TensorSpec& spec);

// Standard deviation of the output head relative to 1/sqrt(hidden_size): the final norm leaves rows of
// RMS ~1, so the logits get a standard deviation of about this much, which keeps greedy top-2 margins
// well clear of rounding noise.
inline constexpr float kOutputHeadGain = 3.0f;

// Why the next four exist: random weights at the plain 1/sqrt(fan_in) scale make a chaotic model. One
// bf16 value rounded the other way (an fp32 summation-order effect that any two correct engines show)
// grew to ~3-30 % relative L2 of the later logits of tiny-k3 and flipped MoE routing decisions, so no
// engine could match a reference within 1e-2 or for 32 greedy tokens. Measured with the reference
// (tools/reference/chaos.py; docs/architecture.md has the figures before and after). The residual
// branches stay fully exercised, they only add smaller vectors.
//
// Residual-branch outputs (attention o_proj, dense / shared-expert down_proj, the latent MoE's
// routed_expert_up_proj, routed experts' w2) get this times 1/sqrt(fan_in): each branch adds a tenth of
// the usual vector, so the bf16 rounding noise of a branch enters the stream (and the next layers'
// inputs) scaled down, and the stream stays dominated by the embedding.
inline constexpr float kResidualBranchGain = 0.1f;
// AttnRes mixer queries (*_res_proj, [1, D]) get this times 1/sqrt(D): the mixer normalises every
// source before scoring, so a small block sum's relative noise enters the scores in full; smaller
// scores (std ~0.25) keep the softmax weights from swinging with it.
inline constexpr float kAttnResQueryGain = 0.25f;
// The MoE router (block_sparse_moe.gate.weight) gets this times 1/sqrt(D), and e_score_correction_bias
// a standard deviation of kRouterBiasStd: most sigmoid scores saturate near 0 or 1 and the bias spreads
// the selection scores over ~[-2, 3], so the k-th and (k+1)-th are rarely within rounding noise of each
// other (a near tie flips the expert choice, a ~10 % change of the layer's output). Which experts win
// still depends on the token: over 40 random tokens every tiny-k3 MoE layer picks 2-13 distinct sets.
inline constexpr float kRouterGain = 4.0f;
inline constexpr float kRouterBiasStd = 1.0f;

// The vision tower (vision.md §3) follows the same rule: its residual-branch outputs (blocks' wo and
// mlp.fc1) get kResidualBranchGain. Its learned position grid (patch_embed.pos_emb, a kEmbedding) gets
// this standard deviation instead of 1, a little below the patch embedding's output (normalised pixels
// in [-1, 1] through a 1/sqrt(588) matrix: RMS ~0.5), so the image content is not drowned by position.
// The projector ends in an RMSNorm with weights ~1, so its rows have RMS ~1, like the text embedding rows
// (std 1) they replace.
inline constexpr float kVisionPositionStd = 0.5f;

// The gain InitRow applies to a kLinear / kMxfp4Packed tensor's 1/sqrt(fan_in) (1 for most).
float LinearInitGain(const io::ModelConfig& cfg, const TensorSpec& spec);

// Fills `out` (LogicalRowLength(spec) values) with row `row` of `spec`'s logical values:
//   kLinear      normal, std LinearInitGain / sqrt(fan_in)
//   kEmbedding   normal, std 1 (the vision position grid: kVisionPositionStd)
//   kNormWeight  1 + 0.02 * normal
//   kConv        normal, std 1/sqrt(kernel)
//   kALog        log(uniform[1, 16]); entries past kda_num_heads (K3's padding to 128) are 0
//   kDtBias      0.1 * normal
//   kRouterBias  kRouterBiasStd * normal
//   kMxfp4Packed the logical (unquantised) kLinear matrix; kMxfp4Scale has no values of its own
void InitRow(const io::ModelConfig& cfg, const TensorSpec& spec, uint64_t tensor_seed, int64_t row,
             float* out);

// ---- MXFP4 (spec §3.3) ----------------------------------------------------------------------------------
// E8M0 byte of a 32-group: the smallest power of two 2^e with max|x| / 2^e <= 6 (E2M1's largest
// magnitude), so no value clips; e is clamped to the E8M0 range [-127, 127]. An all-zero group gets 2^0.
uint8_t Mxfp4GroupScale(const float* group, size_t n);
// E2M1 code (sign bit 3) of the representable value nearest to x (already divided by the group scale);
// ties go to the even code, magnitudes past 6 saturate to 6.
uint8_t NearestE2M1Code(float x);
// Quantises one row of n values (n % 32 == 0): packed[n/2] (low nibble = even column), scales[n/32].
void QuantizeMxfp4Row(const float* row, size_t n, uint8_t* packed, uint8_t* scales);

}  // namespace k3::model
