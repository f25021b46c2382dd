// Catalog: the data the planner and renderers work from — models, GPUs, instances with prices, and
// deployment targets — parsed from data/catalog/*.json (embedded in the binary, catalog_data.h).
//
// Every price carries its source and date; an instance with no price found has an empty `prices` and a
// `price_note`, and the planner reports the cost as unknown. This file only parses and looks up; it never
// computes a plan.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "src/base/status.h"

namespace k3::deploy {

struct Source {
  std::string key;    // "K2"
  std::string title;  // what and where
  std::string date;   // "2026-07-20", "2026-07", "2026"
};

struct ModelSpec {
  std::string id;           // "kimi-k3" (or the directory for a checkpoint)
  std::string hf_id;        // "moonshotai/Kimi-K3"
  std::string served_name;  // "Kimi-K3"
  std::string family;       // "kimi_k3" | "kimi_linear"
  int64_t total_params = 0;
  int64_t active_params = 0;
  int64_t weight_bytes = 0;
  std::string weight_bytes_note;
  std::string weight_format;
  int64_t max_context = 0;  // 0: unknown
  // Cache geometry (spec §6): MLA latent per token per MLA layer, KDA recurrent state per sequence.
  int64_t mla_layers = 0;
  int64_t mla_latent_values_per_token = 0;
  int64_t cache_dtype_bytes = 2;
  int64_t kda_layers = 0;
  int64_t kda_heads = 0;
  int64_t kda_head_dim = 0;
  int64_t kda_conv_kernel = 0;
  int64_t kda_state_bytes_per_sequence = 0;
  // vLLM specifics: reasoning / tool-call parser name ("" = none) and required environment.
  std::string vllm_parsers;
  std::map<std::string, std::string> vllm_env;
  std::vector<std::string> sources;
  // Decode traffic (optional; 0 = unknown, the CPU planner then scales weight_bytes by active / total
  // params): what one decode token reads from memory and how many all-reduces it needs under TP.
  int64_t hidden_size = 0;        // all-reduce payload of attention / dense / shared outputs
  int64_t moe_layers = 0;         // layers with routed experts
  int64_t moe_latent_size = 0;    // width of the routed combine all-reduce (latent MoE)
  int64_t routed_experts = 0;     // experts per MoE layer
  int64_t experts_per_token = 0;  // top-k
  int64_t expert_bytes = 0;       // one routed expert (w1 + w2 + w3) as stored
  int64_t embedding_bytes = 0;    // the input embedding table (a decode token reads one row of it)

  int64_t MlaBytesPerToken() const { return mla_layers * mla_latent_values_per_token * cache_dtype_bytes; }
};

struct Gpu {
  std::string id;  // "B300"
  std::string name;
  double memory_gb = 0;  // per GPU, 10^9 bytes
  std::string source;
};

struct Price {
  double usd_per_hour = 0;
  std::string what;  // "EC2 on-demand, us-east-1"
  std::string source;
  std::string date;
  bool verified = true;
};

// The memory system and network of a CPU-only instance (gpu_count 0), which the k3 engine plans on.
struct CpuHost {
  std::string model;  // "Intel Xeon Platinum 8375C (Ice Lake)"
  int sockets = 0;
  int numa_nodes = 0;  // k3 runs one rank per NUMA node unless --tensor-parallel-size says otherwise
  double memory_bandwidth_gbs_per_socket = 0;  // peak DRAM bandwidth, GB/s (10^9 B/s)
  std::string memory_bandwidth_note;           // its source, or the derivation (channels x MT/s x 8 B)
  double network_gbps = 0;                     // instance network bandwidth, Gbit/s
  double MemoryBandwidthGbs() const { return memory_bandwidth_gbs_per_socket * sockets; }
};

struct Instance {
  std::string id;
  std::string cloud;         // aws | azure | gcp | alibaba
  std::string hardware_of;   // e.g. the EC2 type behind an ml. SageMaker type ("" = itself)
  std::string gpu;           // "" on CPU-only instances
  int gpu_count = 0;         // 0: CPU-only (see cpu)
  double gpu_memory_gb = 0;  // per GPU
  std::string cpu_arch;      // amd64 | arm64
  int vcpu = 0;
  int ram_gib = 0;
  std::string interconnect;
  int rack_vms = 0;  // VMs per NVLink rack (0: not rack-bound)
  // GCP GPU instances: the accelerator type GKE's node label cloud.google.com/gke-accelerator, node pools'
  // --accelerator=type= and Vertex's deploy-model take ("nvidia-gb300", "nvidia-h200-141gb").
  std::string gcp_accelerator;
  std::vector<std::string> sources;
  std::vector<Price> prices;
  std::string price_note;
  CpuHost cpu;  // required when gpu_count is 0

  bool CpuOnly() const { return gpu_count == 0; }
};

struct Target {
  std::string id;  // "azure-aks"
  std::string cloud;
  std::string platform;
  std::string default_instance;
  std::string instance_prefix;  // HyperPod: "ml."
  bool one_instance_per_replica = false;
  int node_pool_max = 0;  // 0: no limit
  int min_replicas = 0;   // Vertex A4X: 18
  std::vector<std::string> capacity;
  std::vector<std::string> cleanup;
  std::string source;
};

struct FitConfiguration {
  std::string gpu;
  int count = 0;
};

struct Catalog {
  std::map<std::string, Source> sources;
  std::vector<ModelSpec> models;
  std::vector<Gpu> gpus;
  std::vector<Instance> instances;
  std::vector<Target> targets;
  std::vector<FitConfiguration> fit_table;  // the guide's §2.2 rows, in order
  int fit_table_gpus_per_node = 8;
  std::string fit_table_source;

  const ModelSpec* FindModel(std::string_view id) const;
  const Gpu* FindGpu(std::string_view id) const;
  const Instance* FindInstance(std::string_view id) const;
  const Target* FindTarget(std::string_view id) const;
  // "a, b, c": for error messages that list the valid choices.
  std::string TargetIds() const;
  std::string ModelIds() const;
  std::string InstanceIds() const;
  // "aws: a, b; azure: c; ...": the instances per cloud, for --help.
  std::string InstancesByCloud() const;
};

// Parses catalog files given by name -> JSON text. Errors name the file and the field.
Result<Catalog> ParseCatalog(const std::map<std::string, std::string>& files);

// The catalog embedded at build time (parsed once; the result is cached).
const Result<Catalog>& EmbeddedCatalog();

}  // namespace k3::deploy
