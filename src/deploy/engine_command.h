// The serving command for each engine. `--engine vllm` renders exactly the guide's canonical argument set
// (seed.md §3.1: kimi_k3 parsers, fastsafetensors, prefix caching, TP, flashinfer autotune off) plus the
// K3 environment variable; `--engine k3` renders `k3 serve` with the same port and served name.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "src/base/status.h"
#include "src/deploy/catalog.h"
#include "src/deploy/memory_plan.h"

namespace k3::deploy {

enum class Engine { kVllm, kK3, kSentinel };

// "vllm" | "k3"; the error names --engine and the choices.
Result<Engine> ParseEngine(const std::string& name);

struct ServeSpec {
  Engine engine = Engine::kVllm;
  std::string model_ref;  // what the engine loads: "moonshotai/Kimi-K3" or "/mnt/models/Kimi-K3"
  std::string served_name;
  std::string parsers;  // kimi_k3 | "" (no tool / reasoning parser)
  Layout layout;
  int port = 8000;
  int64_t max_model_len = 0;  // 0: not passed (engine default = model context)
  int k3_world = 0;           // `k3 serve --tensor-parallel-size` (ranks of the group; <= 1: not passed)
  // vLLM: model_ref is an object-store URI read by RunAI Model Streamer (--load-format runai_streamer)
  // instead of a local directory read by fastsafetensors.
  // k3: model_ref is a bucket URI `k3 serve` streams from.
  bool stream_from_bucket = false;
  // k3: --enable-expert-parallel (whole routed experts per rank instead of slices of every expert).
  bool expert_parallel = false;
};

// vLLM flags after the model (the guide's order): "--trust-remote-code", "--load-format", ...
std::vector<std::string> VllmFlags(const ServeSpec& spec);

// HyperPod style argv: "--model", MODEL, then VllmFlags.
std::vector<std::string> VllmArgv(const ServeSpec& spec);

// Shell form used inside `bash -c` blocks: "vllm serve MODEL \\\n  --flag value \\\n ... --port 8000".
std::string VllmServeShell(const ServeSpec& spec);

// Which process of a serving group a `k3 serve` command line starts.
enum class K3Role {
  kServer,  // node 0: HTTP, scheduling, sampling (the only role of a one-node group)
  kWorker,  // nodes 1..N-1 of a LeaderWorkerSet group: ranks only (--headless)
};

// `k3 serve` argv and its shell form. --tensor-parallel-size is spec.k3_world: on GPU instances one rank
// per node of a multi-node group, on CPU instances one rank per NUMA node (cpu_plan.h); node 0 starts its
// node's ranks, and node count, node rank and leader address come from LeaderWorkerSet's LWS_GROUP_SIZE /
// LWS_WORKER_INDEX / LWS_LEADER_ADDRESS.
std::vector<std::string> K3ServeArgv(const ServeSpec& spec, K3Role role = K3Role::kServer);
std::string K3ServeShell(const ServeSpec& spec);

// The model's required engine environment (VLLM_ENABLE_K3_LATENT_MOE_TAIL_FUSION=1 for K3), in name order.
std::map<std::string, std::string> EngineEnv(const ModelSpec& model, Engine engine);

const char* EngineName(Engine engine);

}  // namespace k3::deploy
