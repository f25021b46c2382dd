// Engine command lines (see engine_command.h). The vLLM flag order is the guide's.
#include "src/deploy/engine_command.h"

namespace k3::deploy {
namespace {

// Pairs "--flag value" or single "--flag" become one shell line each.
std::string ShellLines(const std::string& head, const std::vector<std::string>& argv) {
  std::string out = head;
  for (size_t i = 0; i < argv.size(); ++i) {
    out += " \\\n  " + argv[i];
    if (i + 1 < argv.size() && argv[i + 1].rfind("--", 0) != 0) out += " " + argv[++i];
  }
  return out;
}

}  // namespace

const char* EngineName(Engine engine) { return engine == Engine::kK3 ? "k3" : "vllm"; }

Result<Engine> ParseEngine(const std::string& name) {
  if (name == "vllm") return Engine::kVllm;
  if (name == "k3") return Engine::kK3;
  return InvalidArgument("--engine '{}': one of vllm, k3", name);
}

std::vector<std::string> VllmFlags(const ServeSpec& spec) {
  std::vector<std::string> f = {"--trust-remote-code", "--load-format",
                                spec.stream_from_bucket ? "runai_streamer" : "fastsafetensors",
                                "--enable-prefix-caching"};
  if (!spec.parsers.empty()) {
    f.insert(f.end(), {"--enable-auto-tool-choice", "--tool-call-parser", spec.parsers, "--reasoning-parser",
                       spec.parsers});
  }
  f.insert(f.end(), {"--served-model-name", spec.served_name, "--moe-backend", "auto",
                     "--tensor-parallel-size", std::to_string(spec.layout.tp)});
  if (spec.layout.pp > 1) f.insert(f.end(), {"--pipeline-parallel-size", std::to_string(spec.layout.pp)});
  if (spec.max_model_len > 0) f.insert(f.end(), {"--max-model-len", std::to_string(spec.max_model_len)});
  f.push_back("--no-enable-flashinfer-autotune");
  return f;
}

std::vector<std::string> VllmArgv(const ServeSpec& spec) {
  std::vector<std::string> argv = {"--model", spec.model_ref};
  for (std::string& f : VllmFlags(spec)) argv.push_back(std::move(f));
  return argv;
}

std::string VllmServeShell(const ServeSpec& spec) {
  std::vector<std::string> flags = VllmFlags(spec);
  flags.insert(flags.end(), {"--port", std::to_string(spec.port)});
  return ShellLines("vllm serve " + spec.model_ref, flags);
}

std::vector<std::string> K3ServeArgv(const ServeSpec& spec, K3Role role) {
  std::vector<std::string> argv = {
      "serve",  "--model", spec.model_ref, "--served-model-name",    spec.served_name,
      "--host", "0.0.0.0", "--port",       std::to_string(spec.port)};
  if (spec.max_model_len > 0)
    argv.insert(argv.end(), {"--max-model-len", std::to_string(spec.max_model_len)});
  if (spec.k3_world > 1) argv.insert(argv.end(), {"--tensor-parallel-size", std::to_string(spec.k3_world)});
  if (spec.k3_world > 1 && spec.expert_parallel) argv.push_back("--enable-expert-parallel");
  if (role == K3Role::kWorker) argv.push_back("--headless");
  return argv;
}

std::string K3ServeShell(const ServeSpec& spec) {
  std::vector<std::string> argv = K3ServeArgv(spec);
  argv.erase(argv.begin());
  return ShellLines("k3 serve", argv);
}

std::map<std::string, std::string> EngineEnv(const ModelSpec& model, Engine engine) {
  if (engine == Engine::kVllm) return model.vllm_env;
  return {};
}

}  // namespace k3::deploy
