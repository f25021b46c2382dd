// ModelWeights: every tensor of ListTensors(config), bound to its bytes with dtype and shape checked.
//
// Large matrices are used in place (pointers into the mmap'd checkpoint): bf16 [rows, cols] for the
// "x @ W^T" layers, MXFP4 packed + scales for routed experts. Small vectors (norm weights, conv taps,
// A_log, dt_bias, router bias, AttnRes pseudo-queries) are converted once at load. Binding never
// crashes on a bad checkpoint: a missing tensor, a dtype or a shape that does not match is a Status
// naming the tensor, what was expected and what was found.
//
// Dimension letters (used in every file of src/model):
//   D hidden width, H heads, K = V KDA head dim, P = H*K KDA projection width, W conv taps,
//   R kv_lora rank, Rp rope-slot width, Q = nope + Rp MLA query head width, Vh MLA value head width,
//   E experts, Ek experts per token, I MLP / expert hidden width, Lw expert input/output width
//   (latent width for K3, D for Kimi Linear), N vocabulary, T tokens in a batch.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "src/base/bf16.h"
#include "src/base/status.h"
#include "src/io/model_config.h"
#include "src/io/safetensors.h"

namespace k3::model {

// Which part of the checkpoint's tensor a view holds (shard.h): part `index` of `count` near-equal parts
// along `axis` (0: rows, 1: columns). count 1: the whole tensor (one process, or replicated).
struct TensorShard {
  int axis = 0;
  int index = 0;
  int count = 1;
  bool whole() const { return count == 1; }
  bool operator==(const TensorShard&) const = default;
};

// A bf16 matrix [rows, cols] as stored for "x @ W^T" (rows = outputs, cols = inputs); `shard` says which
// part of the checkpoint's matrix the rows and columns are.
struct Bf16Matrix {
  const bf16* data = nullptr;
  int64_t rows = 0;
  int64_t cols = 0;
  TensorShard shard;
};

// One routed-expert matrix [rows, cols]: MXFP4 (packed [rows, cols/2] + scales [rows, cols/32]) or bf16.
struct ExpertMatrix {
  const bf16* bf16_data = nullptr;  // set for bf16 experts
  const uint8_t* packed = nullptr;  // set for MXFP4 experts
  const uint8_t* scales = nullptr;
  int64_t rows = 0;
  int64_t cols = 0;
  TensorShard shard;
};

struct ExpertWeights {
  ExpertMatrix gate;  // w1 [I, Lw]
  ExpertMatrix up;    // w3 [I, Lw]
  ExpertMatrix down;  // w2 [Lw, I]
};

// GLU MLP: down(act(gate x) * up x). Dense layers and shared experts.
struct MlpWeights {
  Bf16Matrix gate;  // [I, D]
  Bf16Matrix up;    // [I, D]
  Bf16Matrix down;  // [D, I]
};

struct KdaWeights {
  Bf16Matrix q_proj, k_proj, v_proj;          // [P, D] each
  std::vector<float> q_conv, k_conv, v_conv;  // [P, W] depthwise causal taps (tap W-1 = current token)
  Bf16Matrix f_a_proj;                        // [K, D]
  Bf16Matrix f_b_proj;                        // [P, K]
  std::vector<float> a_exp;                   // [H] exp(A_log[h])
  std::vector<float> dt_bias;                 // [P]
  Bf16Matrix b_proj;                          // [H, D]
  Bf16Matrix g_proj;                          // [P, D] full-rank output gate (or null)
  Bf16Matrix g_a_proj;                        // [K, D] low-rank output gate (or null)
  Bf16Matrix g_b_proj;                        // [P, K]
  std::vector<float> o_norm;                  // [K]
  Bf16Matrix o_proj;                          // [D, P]
};

struct MlaWeights {
  Bf16Matrix q_a_proj;                  // [q_lora, D] (or null without q_lora)
  std::vector<bf16> q_a_norm;           // [q_lora]
  Bf16Matrix q_b_proj;                  // [H*Q, q_lora]
  Bf16Matrix q_proj;                    // [H*Q, D] (only without q_lora)
  Bf16Matrix kv_a_proj;                 // [R + Rp, D]
  std::vector<bf16> kv_a_norm;          // [R]
  Bf16Matrix kv_b_proj;                 // [H*(nope+Vh), R]: per head nope rows of Wuk then Vh rows of Wuv
  std::vector<bf16> key_up_transposed;  // [H, R, nope]: Wuk_h^T, for the absorbed query Wuk_h^T q_nope
  Bf16Matrix g_proj;                    // [H*Vh, D] sigmoid output gate (or null)
  Bf16Matrix o_proj;                    // [D, H*Vh]
};

struct MoeWeights {
  Bf16Matrix router;                   // [E, D]
  std::vector<float> correction_bias;  // [E] (selection only)
  Bf16Matrix latent_down;              // [Lw, D] (K3 latent MoE; null for Kimi Linear)
  std::vector<bf16> latent_norm;       // [Lw] (empty without latent_moe_use_norm)
  Bf16Matrix latent_up;                // [D, Lw]
  bool has_shared = false;
  MlpWeights shared;                   // I = num_shared_experts * moe_intermediate_size
  std::vector<ExpertWeights> experts;  // [E]
};

// AttnRes mixer: the folded pseudo-query wn[d] * wp[d] (fp32 product of the bf16 weights, spec §2.6).
struct AttnResMixer {
  std::vector<float> query;  // [D]
};

struct LayerWeights {
  io::AttentionKind attention = io::AttentionKind::kKda;
  io::FfnKind ffn = io::FfnKind::kDense;
  int64_t kda_index = -1;                 // index among KDA layers (state slot), or -1
  int64_t mla_index = -1;                 // index among MLA layers (cache slot), or -1
  std::vector<bf16> input_norm;           // [D]
  std::vector<bf16> post_attention_norm;  // [D]
  AttnResMixer attention_mixer;           // self_attention_res_{norm,proj} (AttnRes only)
  AttnResMixer ffn_mixer;                 // mlp_res_{norm,proj}
  KdaWeights kda;
  MlaWeights mla;
  MlpWeights mlp;  // dense layers
  MoeWeights moe;
};

struct ModelWeights {
  Bf16Matrix embed;              // [N, D]
  Bf16Matrix lm_head;            // [N, D] (the embedding when tied)
  std::vector<bf16> final_norm;  // [D]
  AttnResMixer output_mixer;     // output_attn_res_{norm,proj} (AttnRes only)
  std::vector<LayerWeights> layers;
  // Copies of tensors whose bytes were not aligned for their type inside the file.
  std::vector<std::vector<uint8_t>> owned;
};

// Finds a tensor by its full name, or nullptr (a Checkpoint, or tensors built in memory by tests).
using TensorLookup = std::function<const io::TensorView*(const std::string& name)>;

struct TensorSpec;
// Checks one tensor against its spec (tensors.h): present (NotFound naming it otherwise), an accepted
// dtype, exactly the expected shape, and a byte size that matches.
Result<const io::TensorView*> CheckTensor(const TensorSpec& spec, const TensorLookup& lookup);

// Binds every tensor of ListTensors(cfg). The views must outlive the result.
Result<std::unique_ptr<ModelWeights>> BindWeights(const io::ModelConfig& cfg, const TensorLookup& lookup);

// The bytes of the checkpoint's storage that `w` views (every matrix, as sliced for this rank; copies in
// `owned` and converted vectors are not views). Empty views are left out; the spans may touch.
std::vector<std::span<const uint8_t>> ViewedBytes(const ModelWeights& w);

}  // namespace k3::model
