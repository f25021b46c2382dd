// CPU planner for the k3 engine on CPU-only instances: RAM per rank, ranks per node, nodes needed and a
// decode tokens/s estimate from memory bandwidth and network latency (spec distributed.md).
//
//   RAM per rank = weight_bytes / TP                 each rank maps its 1/TP shard of every layer
//                + MLA latent x tokens               the latent has no head axis: every rank keeps all of it
//                + KDA state x sequences / TP        the recurrent state splits by heads
//                + vision tower + one image          a whole tower per rank (plan_vision.h)
//                + working margin (--overhead-gb)    activations, scratch, Gloo buffers
//   fits when ranks_per_node x RAM per rank <= node RAM x 0.9 (kubelet / system reservations)
//
//   decode seconds per token (batch 1) = t_memory + t_network
//   t_memory  = (bytes read per token / TP) / (DRAM bandwidth per rank x efficiency)
//               bytes read per token = top-k x MoE layers x expert bytes (MXFP4 as stored)
//                                    + every non-expert byte except the embedding table (BF16)
//   t_network = all-reduces per token x 2 (TP - 1) ring steps x latency per step
//               + payload per token x 2 (TP - 1) / TP / network bandwidth       (only between nodes)
//               all-reduces per token = 2 x layers + MoE layers (attention, dense / shared, routed combine)
// The estimate is an upper bound for one sequence; batching amortises the weight reads.
#pragma once

#include <cstdint>
#include <string>

#include "src/deploy/catalog.h"
#include "src/deploy/memory_plan.h"

namespace k3::deploy {

// Assumptions of the CPU estimate; each is printed with the plan.
struct CpuAssumptions {
  int tensor_parallel_size = 0;       // 0: one rank per NUMA node of every node
  double allocatable_fraction = 0.9;  // node RAM a pod may request (kubelet, system, eviction reserve)
  double memory_efficiency = 0.7;     // sustained fraction of peak DRAM bandwidth (STREAM-like reads)
  double intra_node_latency_us = 10;  // one ring step between ranks of one node (loopback TCP)
  double inter_node_latency_us = 50;  // one ring step between nodes (VPC TCP)
};

struct RamPerRank {
  double weights_gb = 0;
  double mla_cache_gb = 0;
  double kda_state_gb = 0;
  double vision_gb = 0;
  double overhead_gb = 0;
  double need_gb = 0;       // sum of the above, per rank
  double node_need_gb = 0;  // ranks_per_node x need_gb
  double node_usable_gb = 0;
  bool fits = false;
};

struct DecodeEstimate {
  int64_t routed_bytes_per_token = 0;  // experts read per token, as stored (MXFP4)
  int64_t dense_bytes_per_token = 0;   // attention / dense / shared / router / head (BF16)
  std::string bytes_basis;             // how the two were obtained
  double bytes_per_rank = 0;
  double bandwidth_per_rank_gbs = 0;  // peak
  double memory_seconds = 0;
  int64_t all_reduces_per_token = 0;
  int ring_steps = 0;  // 2 (TP - 1)
  double step_latency_us = 0;
  double payload_bytes_per_token = 0;
  double network_gbps = 0;
  double network_seconds = 0;
  double tokens_per_second = 0;
};

struct CpuPlan {
  int nodes = 1;
  int ranks_per_node = 1;
  int tp() const { return nodes * ranks_per_node; }
  RamPerRank ram;
  DecodeEstimate decode;
  CpuAssumptions assumptions;
  bool fits = false;
};

// Searches 1..max_nodes nodes for the smallest group that holds the model: ranks_per_node is the NUMA
// node count (or tensor_parallel_size / nodes), TP must divide the model's heads. Returns the last layout
// tried (fits = false) when none fits.
CpuPlan PlanCpu(const ModelSpec& model, const Instance& instance, const MemoryAssumptions& memory,
                const CpuAssumptions& assumptions, int max_nodes);

// The RAM and decode formulas with the numbers that went into them, one line each ("" prefix per line).
std::string CpuPlanFormula(const ModelSpec& model, const Instance& instance, const CpuPlan& plan,
                           const std::string& prefix);

}  // namespace k3::deploy
