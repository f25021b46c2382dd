// Memory planner: bytes per GPU for a model under a TP x PP layout (spec k3-model.md §6).
//
//   weights  = weight_bytes / (TP * PP)                      every GPU holds 1/(TP*PP) of the checkpoint
//   MLA      = latent bytes/token * tokens / PP               the latent has no head axis, so every TP rank
//                                                             keeps the full latent of its PP stage's layers
//   KDA      = state bytes/sequence * sequences / (TP * PP)   the recurrent state splits by heads and layers
//   vision   = tower bytes - (its TP x PP share when weight_bytes already count it) + one largest image's
//              activations                                 every GPU keeps a whole tower (plan_vision.h)
//   overhead = a per-GPU allowance (CUDA context, NCCL buffers, activations, graphs): an explicit assumption
//   usable   = GPU memory * gpu_memory_utilization            (vLLM's default fraction, 0.9)
// tokens = max_model_len * concurrency: every sequence may reach the full context.
#pragma once

#include <cstdint>
#include <string>

#include "src/deploy/catalog.h"

namespace k3::deploy {

struct MemoryAssumptions {
  int64_t max_model_len = 0;
  int concurrency = 1;
  double overhead_gb_per_gpu = 8.0;
  double gpu_memory_utilization = 0.9;
  // The vision tower (plan_vision.h; all 0 for a text-only model or --no-vision): its weights, whether
  // the model's weight_bytes already count them, and one largest image's activations.
  int64_t vision_weight_bytes = 0;
  bool vision_in_weight_bytes = false;
  int64_t vision_activation_bytes = 0;
};

// Per GPU (or CPU rank) of `shards` weight shards: a whole tower plus one image's activations, less the
// share of the tower the sharded weights already hold.
double VisionGbPerShard(const MemoryAssumptions& assumptions, double shards);

// Parallel layout of one serving group (one replica).
struct Layout {
  int nodes = 1;
  int gpus_per_node = 8;
  int tp = 8;
  int pp = 1;
  int ep = 1;  // 1: experts sharded with TP (the guide's argument set has no --enable-expert-parallel)
  int gpus() const { return nodes * gpus_per_node; }
};

struct MemoryPerGpu {
  double weights_gb = 0;
  double mla_cache_gb = 0;
  double kda_state_gb = 0;
  double vision_gb = 0;
  double overhead_gb = 0;
  double need_gb = 0;    // sum of the above
  double usable_gb = 0;  // gpu memory * utilization
  bool fits = false;
};

// How a group of `gpus` GPUs (gpus_per_node each node) is split: TP over up to 8 GPUs (one NVLink
// domain; GB300 MNNVL spans the two 4-GPU VMs), PP over the rest. prefer_pp: TP = GPUs per node.
Layout ChooseLayout(int nodes, int gpus_per_node, bool prefer_pp);

MemoryPerGpu EstimatePerGpu(const ModelSpec& model, const Layout& layout, double gpu_memory_gb,
                            const MemoryAssumptions& assumptions);

// Totals for the whole group, for the plan header.
struct MemoryTotals {
  double weights_gb = 0;
  double mla_cache_gb_per_copy = 0;  // one copy of the latent cache (all layers)
  double kda_state_gb = 0;
};
MemoryTotals EstimateTotals(const ModelSpec& model, const MemoryAssumptions& assumptions);

}  // namespace k3::deploy
