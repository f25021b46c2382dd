// Memory planner arithmetic (see memory_plan.h for the model).
#include "src/deploy/memory_plan.h"

#include <algorithm>

#include "src/deploy/units.h"

namespace k3::deploy {
namespace {
constexpr int kMaxTensorParallel = 8;
}  // namespace

Layout ChooseLayout(int nodes, int gpus_per_node, bool prefer_pp) {
  Layout layout;
  layout.nodes = nodes;
  layout.gpus_per_node = gpus_per_node;
  const int gpus = nodes * gpus_per_node;
  int tp = prefer_pp ? gpus_per_node : std::min(gpus, std::max(gpus_per_node, kMaxTensorParallel));
  if (gpus % tp != 0) tp = gpus_per_node;
  layout.tp = tp;
  layout.pp = gpus / tp;
  return layout;
}

double VisionGbPerShard(const MemoryAssumptions& a, double shards) {
  const double tower = static_cast<double>(a.vision_weight_bytes);
  const double held = a.vision_in_weight_bytes && shards > 0 ? tower / shards : 0;
  return (tower - held + static_cast<double>(a.vision_activation_bytes)) / kGb;
}

MemoryPerGpu EstimatePerGpu(const ModelSpec& model, const Layout& layout, double gpu_memory_gb,
                            const MemoryAssumptions& a) {
  MemoryPerGpu m;
  const double shards = static_cast<double>(layout.tp) * layout.pp;
  const double tokens = static_cast<double>(a.max_model_len) * a.concurrency;
  m.weights_gb = static_cast<double>(model.weight_bytes) / shards / kGb;
  m.mla_cache_gb = static_cast<double>(model.MlaBytesPerToken()) * tokens / layout.pp / kGb;
  m.kda_state_gb = static_cast<double>(model.kda_state_bytes_per_sequence) * a.concurrency / shards / kGb;
  m.vision_gb = VisionGbPerShard(a, shards);
  m.overhead_gb = a.overhead_gb_per_gpu;
  m.need_gb = m.weights_gb + m.mla_cache_gb + m.kda_state_gb + m.vision_gb + m.overhead_gb;
  m.usable_gb = gpu_memory_gb * a.gpu_memory_utilization;
  m.fits = m.need_gb <= m.usable_gb;
  return m;
}

MemoryTotals EstimateTotals(const ModelSpec& model, const MemoryAssumptions& a) {
  MemoryTotals t;
  t.weights_gb = static_cast<double>(model.weight_bytes) / kGb;
  t.mla_cache_gb_per_copy = static_cast<double>(model.MlaBytesPerToken()) *
                            static_cast<double>(a.max_model_len) * a.concurrency / kGb;
  t.kda_state_gb = static_cast<double>(model.kda_state_bytes_per_sequence) * a.concurrency / kGb;
  return t;
}

}  // namespace k3::deploy
