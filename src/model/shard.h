// ShardSpec and ShardWeights: which part of every layer one rank holds (spec/distributed.md, layout
// table), and the binding of a full checkpoint's views down to that part.
//
// Tensor parallel (TP) on t ranks, rank r:
//   KDA  q/k/v/f_b/g(_b) proj rows, conv taps, dt_bias, A_log, b_proj rows: heads [r*H/t, (r+1)*H/t)
//        o_proj: the matching columns (row-parallel; its partial sums are all-reduced)
//   MLA  q_b / kv_b / g_proj rows and o_proj columns of the rank's heads; q_a / kv_a replicated
//   MLP  gate/up rows and down columns of a slice of I (dense layer, shared experts)
//   MoE  TP: every expert's w1/w3 rows and w2 columns of a slice of I, cut on 32-element MXFP4 group
//        boundaries (a rank may hold an empty slice); EP (expert_parallel): experts [r*E/t, (r+1)*E/t)
//        whole. Router, latent down/up/norm replicated.
//   lm_head rows [r*N/t, (r+1)*N/t); embedding, norms and AttnRes replicated.
// Row slices point into the mapped checkpoint (only their bytes are ever touched); column slices are
// copied once into ModelWeights::owned. Every sliced view records its part (TensorShard: axis, rank's
// index, world), so a backend that uploads or re-lays weights knows what each view is. The rank's config
// (LocalConfig) has H/t KDA and MLA heads, so the layers and the per-sequence state need no other change: a
// KDA state holds only the rank's heads.
#pragma once

#include <cstdint>
#include <string>

#include "src/base/status.h"
#include "src/io/model_config.h"
#include "src/model/weights.h"

namespace k3::model {

struct ShardSpec {
  int rank = 0;
  int world = 1;
  bool expert_parallel = false;

  bool sharded() const { return world > 1; }
};

// [begin, end) of n items split into `world` near-equal parts in units of `granule` (n % granule == 0).
struct Range {
  int64_t begin = 0;
  int64_t end = 0;
  int64_t size() const { return end - begin; }
};
Range SplitRange(int64_t n, int64_t granule, int rank, int world);

// InvalidArgument naming the flag and the value when `cfg` cannot be split over `spec.world` ranks
// (heads, experts in EP mode, vocabulary not divisible by the world size).
Status CheckShardable(const io::ModelConfig& cfg, const ShardSpec& spec);

// The rank's view of the config: H/t KDA and MLA heads; everything else as in `cfg`.
io::ModelConfig LocalConfig(const io::ModelConfig& cfg, const ShardSpec& spec);

// Cuts `w` (bound against the full cfg) down to the rank's part. Experts a rank does not own in EP
// mode keep rows == 0 (ExpertsForward skips them).
void ShardWeights(const io::ModelConfig& cfg, const ShardSpec& spec, ModelWeights* w);

}  // namespace k3::model
