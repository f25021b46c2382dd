// CPU planner arithmetic (see cpu_plan.h for the model and its assumptions).
#include "src/deploy/cpu_plan.h"

#include <fmt/format.h>

#include "src/deploy/units.h"

namespace k3::deploy {
namespace {

constexpr double kFp32Bytes = 4;

RamPerRank EstimateRam(const ModelSpec& model, const Instance& instance, int tp, int ranks_per_node,
                       const MemoryAssumptions& a, const CpuAssumptions& c) {
  RamPerRank r;
  const double tokens = static_cast<double>(a.max_model_len) * a.concurrency;
  r.weights_gb = static_cast<double>(model.weight_bytes) / tp / kGb;
  r.mla_cache_gb = static_cast<double>(model.MlaBytesPerToken()) * tokens / kGb;
  r.kda_state_gb = static_cast<double>(model.kda_state_bytes_per_sequence) * a.concurrency / tp / kGb;
  r.vision_gb = VisionGbPerShard(a, tp);
  r.overhead_gb = a.overhead_gb_per_gpu;
  r.need_gb = r.weights_gb + r.mla_cache_gb + r.kda_state_gb + r.vision_gb + r.overhead_gb;
  r.node_need_gb = r.need_gb * ranks_per_node;
  r.node_usable_gb = instance.ram_gib * kGiB * c.allocatable_fraction / kGb;
  r.fits = r.node_need_gb <= r.node_usable_gb;
  return r;
}

// Bytes one decode token reads: the routed experts it selects plus every other weight but the
// embedding table (one row of it). Without expert geometry, weight_bytes scaled by active / total params.
void DecodeBytes(const ModelSpec& m, DecodeEstimate& d) {
  const int64_t routed_total = m.routed_experts * m.moe_layers * m.expert_bytes;
  if (m.expert_bytes > 0 && m.experts_per_token > 0 && m.moe_layers > 0 && routed_total < m.weight_bytes) {
    d.routed_bytes_per_token = m.experts_per_token * m.moe_layers * m.expert_bytes;
    d.dense_bytes_per_token = m.weight_bytes - routed_total - m.embedding_bytes;
    d.bytes_basis = fmt::format(
        "{} experts x {} MoE layers x {} B (as stored) + non-expert weights {} B - embedding {} B",
        m.experts_per_token, m.moe_layers, m.expert_bytes, m.weight_bytes - routed_total, m.embedding_bytes);
    return;
  }
  const double active_fraction =
      m.total_params > 0 ? static_cast<double>(m.active_params) / m.total_params : 1.0;
  d.dense_bytes_per_token = static_cast<int64_t>(static_cast<double>(m.weight_bytes) * active_fraction);
  d.bytes_basis = fmt::format("weight bytes x active / total params ({} / {}): no expert geometry known",
                              m.active_params, m.total_params);
}

DecodeEstimate EstimateDecode(const ModelSpec& m, const Instance& instance, int nodes, int ranks_per_node,
                              const CpuAssumptions& c) {
  DecodeEstimate d;
  const int tp = nodes * ranks_per_node;
  DecodeBytes(m, d);
  d.bytes_per_rank = static_cast<double>(d.routed_bytes_per_token + d.dense_bytes_per_token) / tp;
  // A GPU instance's host (k3 ranks on it) has no memory system in the catalog: no estimate.
  if (instance.cpu.MemoryBandwidthGbs() <= 0 || instance.cpu.network_gbps <= 0) return d;
  // Ranks of a node share its sockets' bandwidth.
  d.bandwidth_per_rank_gbs = instance.cpu.MemoryBandwidthGbs() / ranks_per_node;
  d.memory_seconds = d.bytes_per_rank / (d.bandwidth_per_rank_gbs * kGb * c.memory_efficiency);
  if (tp > 1) {
    const int64_t layers = m.mla_layers + m.kda_layers;
    d.all_reduces_per_token = 2 * layers + m.moe_layers;
    d.ring_steps = 2 * (tp - 1);
    d.step_latency_us = nodes > 1 ? c.inter_node_latency_us : c.intra_node_latency_us;
    d.payload_bytes_per_token =
        static_cast<double>(2 * layers * m.hidden_size + m.moe_layers * m.moe_latent_size) * kFp32Bytes;
    d.network_gbps = instance.cpu.network_gbps;
    d.network_seconds =
        static_cast<double>(d.all_reduces_per_token) * d.ring_steps * d.step_latency_us * 1e-6;
    if (nodes > 1) {
      d.network_seconds += d.payload_bytes_per_token * d.ring_steps / tp * 8 / (d.network_gbps * 1e9);
    }
  }
  d.tokens_per_second = 1.0 / (d.memory_seconds + d.network_seconds);
  return d;
}

}  // namespace

CpuPlan PlanCpu(const ModelSpec& model, const Instance& instance, const MemoryAssumptions& memory,
                const CpuAssumptions& assumptions, int max_nodes) {
  CpuPlan plan;
  plan.assumptions = assumptions;
  const int want_tp = assumptions.tensor_parallel_size;
  for (int nodes = 1; nodes <= max_nodes; ++nodes) {
    int ranks_per_node = std::max(1, instance.cpu.numa_nodes);
    if (want_tp > 0) {
      if (want_tp % nodes != 0) continue;
      ranks_per_node = want_tp / nodes;
    }
    const int tp = nodes * ranks_per_node;
    if (model.kda_heads > 0 && model.kda_heads % tp != 0) continue;
    plan.nodes = nodes;
    plan.ranks_per_node = ranks_per_node;
    plan.ram = EstimateRam(model, instance, tp, ranks_per_node, memory, assumptions);
    plan.decode = EstimateDecode(model, instance, nodes, ranks_per_node, assumptions);
    plan.fits = plan.ram.fits;
    if (plan.fits) break;
  }
  return plan;
}

std::string CpuPlanFormula(const ModelSpec& model, const Instance& instance, const CpuPlan& p,
                           const std::string& prefix) {
  const RamPerRank& r = p.ram;
  const DecodeEstimate& d = p.decode;
  const CpuAssumptions& c = p.assumptions;
  std::string s;
  s += prefix + fmt::format("ranks: {} node(s) x {} rank(s) per node ({}) = TP {}\n", p.nodes,
                            p.ranks_per_node,
                            c.tensor_parallel_size > 0 ? "--tensor-parallel-size"
                            : instance.cpu.numa_nodes > 0
                                ? fmt::format("one per NUMA node, {} per node", instance.cpu.numa_nodes)
                                : std::string("one per node: the host's NUMA layout is not in the catalog"),
                            p.tp());
  s += prefix +
       fmt::format(
           "RAM per rank = weights {:.1f} GB ({} B / TP {}) + MLA latent {:.1f} GB + KDA state {:.2f} GB "
           "{}+ margin {:.1f} GB = {:.1f} GB\n",
           r.weights_gb, model.weight_bytes, p.tp(), r.mla_cache_gb, r.kda_state_gb,
           r.vision_gb > 0 ? fmt::format("+ vision {:.1f} GB ", r.vision_gb) : std::string(), r.overhead_gb,
           r.need_gb);
  s += prefix +
       fmt::format("RAM per node = {} x {:.1f} GB = {:.1f} GB of {:.1f} GB usable ({} GiB x {:.2f}): {}\n",
                   p.ranks_per_node, r.need_gb, r.node_need_gb, r.node_usable_gb, instance.ram_gib,
                   c.allocatable_fraction, r.fits ? "fits" : "does not fit");
  s += prefix +
       fmt::format("decode bytes per token = {:.2f} GB routed + {:.2f} GB non-expert = {:.2f} GB ({})\n",
                   d.routed_bytes_per_token / 1e9, d.dense_bytes_per_token / 1e9,
                   (d.routed_bytes_per_token + d.dense_bytes_per_token) / 1e9, d.bytes_basis);
  if (d.tokens_per_second <= 0) {
    s += prefix + "decode: unknown (the catalog has no host memory bandwidth / network figures for " +
         instance.id + ")\n";
    return s;
  }
  s += prefix + fmt::format(
                    "t_memory = {:.2f} GB per rank / ({:.1f} GB/s per rank x {:.2f} efficiency) = {:.1f} ms "
                    "({}: {} x {:.1f} GB/s, {})\n",
                    d.bytes_per_rank / 1e9, d.bandwidth_per_rank_gbs, c.memory_efficiency,
                    d.memory_seconds * 1e3, instance.cpu.model, instance.cpu.sockets,
                    instance.cpu.memory_bandwidth_gbs_per_socket, instance.cpu.memory_bandwidth_note);
  if (p.tp() > 1) {
    s += prefix + fmt::format("t_network = {} all-reduces x {} ring steps x {:.0f} us{} = {:.1f} ms\n",
                              d.all_reduces_per_token, d.ring_steps, d.step_latency_us,
                              p.nodes > 1 ? fmt::format(" + {:.1f} MB x {}/{} at {:.0f} Gbit/s",
                                                        d.payload_bytes_per_token / 1e6, d.ring_steps, p.tp(),
                                                        d.network_gbps)
                                          : std::string(" (ranks on one node)"),
                              d.network_seconds * 1e3);
  } else {
    s += prefix + "t_network = 0 (one rank)\n";
  }
  s += prefix + fmt::format("decode = 1 / ({:.1f} ms + {:.1f} ms) = {:.2f} tokens/s per sequence (batch 1)\n",
                            d.memory_seconds * 1e3, d.network_seconds * 1e3, d.tokens_per_second);
  return s;
}

}  // namespace k3::deploy
