// The rules of k3 lint over workload views (see lint.h for the list and lint_internal.h for the views).
#include <algorithm>
#include <cctype>
#include <set>

#include "src/deploy/lint_internal.h"

namespace k3::deploy {

const std::vector<RuleInfo>& LintRules() {
  static const std::vector<RuleInfo> kRules = {
      {"K3-YAML-001", Severity::kError, "malformed YAML / JSON"},
      {"K3-SCHEMA-001", Severity::kError,
       "a field of a known kind is missing, mistyped or not an allowed value"},
      {"K3-CRD-001", Severity::kError, "a custom resource does not validate against its CRD (--schema-dir)"},
      {"K3-LOAD-001", Severity::kError, "--load-format names a weight format (MXFP4...) instead of a loader"},
      {"K3-ARCH-001", Severity::kError, "arm64 (Grace) nodes with an image that has no arm64 variant"},
      {"K3-ARCH-002", Severity::kWarning,
       "arm64 (Grace) nodes with an image whose architectures are unknown"},
      {"K3-PAR-001", Severity::kError, "TP x PP differs from the GPUs of the serving group"},
      {"K3-PAR-002", Severity::kError, "TP above the GPUs of one node without a multi-node construct"},
      {"K3-GPU-001", Severity::kError, "nvidia.com/gpu requests differ from limits"},
      {"K3-MODEL-001", Severity::kError,
       "Kimi K3 served without the kimi_k3 tool-call and reasoning parsers"},
      {"K3-MODEL-002", Severity::kError, "Kimi K3 served without VLLM_ENABLE_K3_LATENT_MOE_TAIL_FUSION=1"},
      {"K3-PROBE-001", Severity::kError, "startup / readiness budget shorter than the planned weight load"},
      {"K3-SHM-001", Severity::kError, "multi-GPU pod without a memory-backed /dev/shm"},
      {"K3-SHM-002", Severity::kWarning, "/dev/shm smaller than 1 GiB per GPU"},
      {"K3-LWS-001", Severity::kError, "LeaderWorkerSet restartPolicy other than RecreateGroupOnPodRestart"},
      {"K3-SVC-001", Severity::kError,
       "a Service in front of a LeaderWorkerSet does not select only the leader"},
      {"K3-POOL-001", Severity::kError, "more than 18 GB300 nodes (one NVL72 rack / node pool)"},
      {"K3-HP-001", Severity::kError, "HyperPod instanceType without the ml. prefix"},
      {"K3-WEIGHTS-001", Severity::kError, "weights pulled from a hub at start-up without a cache volume"},
      {"K3-NET-001", Severity::kWarning, "multi-node serving without NCCL / Gloo interface settings"},
      {"K3-PAR-003", Severity::kError,
       "TP x PP above the GPUs of the one instance (EAS JSON, arena, KServe pod, Azure ML, Vertex)"},
      {"K3-VOL-001", Severity::kError, "the weights writer and the engine use different paths on one volume"},
      {"K3-VOL-002", Severity::kError, "a ReadWriteOnce volume mounted by more than one pod"},
      {"K3-GW-001", Severity::kError, "a gateway class that does not exist on the cluster's platform"},
      {"K3-DL-001", Severity::kError, "a hub download command that huggingface_hub 1.x no longer has"},
      {"K3-IMG-001", Severity::kError, "a Vertex AI serving image outside Artifact Registry"},
      {"K3-SCRIPT-001", Severity::kError, "a cleanup script that stops at the first failing command"},
      {"K3-SCRIPT-002", Severity::kError, "a cleanup script that leaves a reservation to a comment"},
      {"K3-GROUP-001", Severity::kError,
       "ranks of one group disagree (TP, master port, model between leader and worker; TP vs group size; "
       "a PAI-EAS script's --nnodes vs unit.size)"},
      {"K3-SECRET-001", Severity::kError, "a secret (key, token, password) as a plain env value"},
      {"K3-ENV-001", Severity::kError, "an environment variable the engine's loaders never read"},
      {"K3-GW-002", Severity::kError,
       "a gateway object that matches nothing in the same files (pool selector / target port, picker "
       "Service, route or objective pool)"},
      {"K3-PH-001", Severity::kError, "an unfilled <PLACEHOLDER> in a file that is applied or run"},
  };
  return kRules;
}

namespace lint {
namespace {

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool IsVllm(const ContainerView& c) {
  return c.command_line.find("vllm serve") != std::string::npos ||
         (c.image.find("vllm") != std::string::npos && HasFlag(c.command_line, "--model"));
}

std::string ModelRef(const ContainerView& c) {
  std::string m = FlagValue(c.command_line, "--model");
  if (!m.empty()) return m;
  const size_t pos = c.command_line.find("vllm serve ");
  if (pos == std::string::npos) return "";
  size_t v = pos + 11;
  while (v < c.command_line.size() && c.command_line[v] == ' ') ++v;
  size_t e = v;
  while (e < c.command_line.size() && !std::isspace(static_cast<unsigned char>(c.command_line[e])) &&
         c.command_line[e] != '\\') {
    ++e;
  }
  return c.command_line.substr(v, e - v);
}

bool IsKimiK3(const std::string& text) {
  const std::string l = Lower(text);
  return l.find("kimi-k3") != std::string::npos || l.find("kimi_k3") != std::string::npos;
}

int ParseInt(const std::string& s, int fallback) {
  if (s.empty() || s.size() > 6 || !std::all_of(s.begin(), s.end(), [](char c) { return std::isdigit(c); })) {
    return fallback;
  }
  return std::stoi(s);
}

int ProbeField(const YamlNode* probe, const char* camel, const char* snake, int fallback) {
  const YamlNode* v = probe->Get(camel);
  if (v == nullptr) v = probe->Get(snake);
  return v != nullptr ? ParseInt(v->Text(), fallback) : fallback;
}

// Seconds a probe tolerates before it fails for good: initialDelay + period x failureThreshold.
int ProbeBudget(const YamlNode* probe) {
  return ProbeField(probe, "initialDelaySeconds", "initial_delay_seconds", 0) +
         ProbeField(probe, "periodSeconds", "period_seconds", 10) *
             ProbeField(probe, "failureThreshold", "failure_threshold", 3);
}

// Bytes in a Kubernetes quantity ("64Gi", "1G", "512Mi"); -1 when unreadable.
double QuantityBytes(const std::string& q) {
  static const std::pair<const char*, double> kUnits[] = {
      {"Ki", 1024.0}, {"Mi", 1048576.0}, {"Gi", 1073741824.0}, {"Ti", 1099511627776.0},
      {"k", 1e3},     {"M", 1e6},        {"G", 1e9},           {"T", 1e12}};
  size_t digits = 0;
  while (digits < q.size() && (std::isdigit(static_cast<unsigned char>(q[digits])) || q[digits] == '.'))
    ++digits;
  if (digits == 0 || digits > 12) return -1;
  const double value = std::strtod(q.substr(0, digits).c_str(), nullptr);
  const std::string unit = q.substr(digits);
  if (unit.empty()) return value;
  for (const auto& [name, scale] : kUnits) {
    if (unit == name) return value * scale;
  }
  return -1;
}

bool ArmNodes(const WorkloadView& w, const LintOptions& options, std::string& why) {
  for (const auto& [k, v] : w.node_selector) {
    const std::string lv = Lower(v);
    if ((k == "kubernetes.io/arch" && v == "arm64") || lv.find("gb300") != std::string::npos ||
        lv.find("gb200") != std::string::npos) {
      why = k + ": " + v;
      return true;
    }
  }
  if (options.catalog != nullptr && !w.instance_type.empty()) {
    const Instance* in = options.catalog->FindInstance(w.instance_type);
    if (in != nullptr && in->cpu_arch == "arm64") {
      why = "instance type " + w.instance_type;
      return true;
    }
  }
  const std::string lt = Lower(w.instance_type);
  if (lt.find("gb300") != std::string::npos || lt.find("gb200") != std::string::npos ||
      lt.rfind("a4x", 0) == 0) {
    why = "instance type " + w.instance_type;
    return true;
  }
  return false;
}

// Architectures of an image from the known-image table: "multi", "amd64", "arm64" or "" (unknown).
std::string ImageArch(const std::string& image, const LintOptions& options) {
  if (!options.image_arch.empty()) return options.image_arch;
  if (image.size() > 8 && image.compare(image.size() - 8, 8, "-aarch64") == 0) return "arm64";
  if (image.size() > 7 && image.compare(image.size() - 7, 7, "-x86_64") == 0) return "amd64";
  if (image == "vllm/vllm-openai:latest" || image == "vllm/vllm-openai")
    return "multi";  // publishes both (V1)
  return "";
}

void CheckArch(const WorkloadView& w, const LintOptions& o, Sink& sink) {
  std::string why;
  if (!ArmNodes(w, o, why)) return;
  std::set<std::string> seen;
  auto check = [&](const ContainerView& c) {
    if (c.image.empty() || !seen.insert(c.image).second) return;
    const std::string arch = ImageArch(c.image, o);
    if (arch == "arm64" || arch == "multi") return;
    if (arch == "amd64") {
      sink.Add(w.doc->file, c.line, "K3-ARCH-001",
               "image " + c.image + " is amd64-only but the pods run on arm64 (" + why + ")",
               "use an arm64 or multi-arch image (vllm/vllm-openai publishes -aarch64 tags)");
    } else {
      sink.Add(
          w.doc->file, c.line, "K3-ARCH-002",
          "pods run on arm64 (" + why + ") and image " + c.image + " is not known to have an arm64 variant",
          "check `docker manifest inspect " + c.image + "` lists linux/arm64, then pass --image-arch multi");
    }
  };
  for (const ContainerView& c : w.containers) check(c);
  for (const ContainerView& c : w.worker_containers) check(c);
}

void CheckEngine(const WorkloadView& w, const ContainerView& c, const LintOptions& o, Sink& sink) {
  const std::string& file = w.doc->file;
  const std::string load = FlagValue(c.command_line, "--load-format");
  static const std::set<std::string> kLoaders = {
      "auto",           "pt",   "safetensors",  "npcache", "dummy",          "tensorizer",
      "sharded_state",  "gguf", "bitsandbytes", "mistral", "runai_streamer", "runai_streamer_sharded",
      "fastsafetensors"};
  if (!load.empty() && kLoaders.count(load) == 0) {
    sink.Add(file, c.line, "K3-LOAD-001",
             "--load-format " + load +
                 " is not a vLLM loader; MXFP4 / FP8 / BF16 are weight formats the checkpoint "
                 "declares itself",
             "use --load-format fastsafetensors (local files) or runai_streamer (object storage)");
  }
  const std::string model = ModelRef(c);
  const std::string served = FlagValue(c.command_line, "--served-model-name");
  const bool k3 = IsKimiK3(model) || IsKimiK3(served);
  if (k3 && IsVllm(c)) {
    if (FlagValue(c.command_line, "--tool-call-parser") != "kimi_k3" ||
        FlagValue(c.command_line, "--reasoning-parser") != "kimi_k3") {
      sink.Add(file, c.line, "K3-MODEL-001",
               "Kimi K3 without --tool-call-parser kimi_k3 --reasoning-parser kimi_k3",
               "add --enable-auto-tool-choice --tool-call-parser kimi_k3 --reasoning-parser kimi_k3");
    }
    auto env = c.env.find("VLLM_ENABLE_K3_LATENT_MOE_TAIL_FUSION");
    if (env == c.env.end() || env->second != "1") {
      sink.Add(file, c.line, "K3-MODEL-002", "Kimi K3 without VLLM_ENABLE_K3_LATENT_MOE_TAIL_FUSION=1",
               "set env VLLM_ENABLE_K3_LATENT_MOE_TAIL_FUSION=\"1\"");
    }
  }
  // Parallelism against the GPUs of the group.
  const int tp = ParseInt(FlagValue(c.command_line, "--tensor-parallel-size"), 1);
  const int pp = ParseInt(FlagValue(c.command_line, "--pipeline-parallel-size"), 1);
  const int group_gpus = c.gpus * w.pods_per_group;
  // vLLM runs one rank per GPU; `k3 serve`'s ranks are CPU processes (one per node), so these are vLLM's.
  const bool vllm = IsVllm(c);
  if (vllm && c.gpus > 0 && HasFlag(c.command_line, "--tensor-parallel-size") && tp * pp != group_gpus &&
      w.kind != "InferenceService" && (w.kind != "EasService" || w.multi_node)) {
    sink.Add(file, c.line, "K3-PAR-001",
             fmt::format("TP {} x PP {} = {} GPUs, but the group has {} ({} per pod x {} pods)", tp, pp,
                         tp * pp, group_gpus, c.gpus, w.pods_per_group),
             "make --tensor-parallel-size x --pipeline-parallel-size equal the GPUs of the group");
  }
  // One pod (KServe without workerSpec) or one instance (PAI-EAS): the ranks must fit its GPUs.
  if (c.gpus > 0 && tp * pp > c.gpus && !w.multi_node &&
      (w.kind == "InferenceService" || w.kind == "EasService")) {
    sink.Add(file, c.line, "K3-PAR-003",
             fmt::format("TP {} x PP {} = {} ranks but the {} has {} GPUs", tp, pp, tp * pp,
                         w.kind == "EasService" ? "PAI-EAS instance" : "predictor pod", c.gpus),
             "use an instance with TP x PP GPUs, or a target that spans nodes (LeaderWorkerSet)");
  }
  if (vllm && c.gpus > 0 && tp > c.gpus && !w.multi_node) {
    sink.Add(file, c.line, "K3-PAR-002",
             fmt::format("--tensor-parallel-size {} exceeds the {} GPUs of one pod and nothing spans nodes",
                         tp, c.gpus),
             "use a LeaderWorkerSet (vLLM multi-node / Ray) or lower TP");
  }
  // Probe budget against the planned load time.
  if (k3 && o.catalog != nullptr) {
    if (const ModelSpec* spec = o.catalog->FindModel("kimi-k3")) {
      const double load = static_cast<double>(spec->weight_bytes) * 8 / o.weights_bandwidth_bps;
      const YamlNode* probe = c.startup_probe != nullptr    ? c.startup_probe
                              : c.liveness_probe != nullptr ? c.liveness_probe
                                                            : c.readiness_probe;
      if (probe != nullptr && ProbeBudget(probe) < load) {
        sink.Add(
            file, probe->line, "K3-PROBE-001",
            fmt::format(
                "probe budget {} s is shorter than the planned weight load {:.0f} s ({:.0f} GB at {:.0f} "
                "Gbps)",
                ProbeBudget(probe), load, spec->weight_bytes / 1e9, o.weights_bandwidth_bps / 1e9),
            "add a startupProbe with periodSeconds x failureThreshold >= 2 x the load time (k3 plan prints "
            "it)");
      }
    }
  }
  // Hub pulls at start-up need a cache volume.
  const bool hub_ref = !model.empty() && model.front() != '/' && model.find("://") == std::string::npos &&
                       model.find('/') != std::string::npos;
  if (hub_ref && !w.managed_model_source && w.kind != "EasService") {
    const auto hf_home = c.env.find("HF_HOME");
    const std::string cache = hf_home != c.env.end() ? hf_home->second : "/root/.cache/huggingface";
    bool mounted = false;
    for (const auto& [path, volume] : c.mounts) {
      if (!path.empty() && cache.rfind(path, 0) == 0 && path != "/dev/shm") mounted = true;
    }
    if (!mounted) {
      sink.Add(file, c.line, "K3-WEIGHTS-001",
               "model " + model + " is downloaded from the hub at every start and " + cache +
                   " is not on a volume",
               "mount a PersistentVolumeClaim at " + cache +
                   " (or set HF_HOME to a mounted path), or pre-sync the "
                   "weights and serve a local path");
    }
  }
}

void CheckContainerResources(const WorkloadView& w, const ContainerView& c,
                             const std::map<std::string, std::string>& volumes_shm, Sink& sink) {
  if (c.gpu_requests_set && c.gpu_limits_set && c.gpu_requests != c.gpu_limits) {
    sink.Add(w.doc->file, c.line, "K3-GPU-001",
             "nvidia.com/gpu requests " + c.gpu_requests + " != limits " + c.gpu_limits,
             "extended resources must have requests equal to limits");
  }
  if (c.gpus > 1 && w.pod_spec != nullptr && w.kind != "EasService") {
    auto shm = c.mounts.find("/dev/shm");
    if (shm == c.mounts.end() || volumes_shm.count(shm->second) == 0) {
      if (!w.host_ipc) {
        sink.Add(w.doc->file, c.line, "K3-SHM-001",
                 fmt::format(
                     "{} GPUs and no memory-backed /dev/shm: NCCL and the engine workers fail or crawl with "
                     "the 64 MB default",
                     c.gpus),
                 "mount an emptyDir {medium: Memory, sizeLimit: 64Gi} at /dev/shm");
      }
    } else {
      const std::string& size = volumes_shm.at(shm->second);
      const double bytes = size.empty() ? 1e18 : QuantityBytes(size);
      if (bytes >= 0 && bytes < 1073741824.0 * c.gpus) {
        sink.Add(w.doc->file, c.line, "K3-SHM-002",
                 fmt::format("/dev/shm sizeLimit {} is below 1 GiB per GPU ({} GPUs)", size, c.gpus),
                 "raise sizeLimit (the guide uses 64Gi for 4 GPUs)");
      }
    }
  }
}

}  // namespace

void CheckWorkload(const WorkloadView& w, const LintOptions& options, Sink& sink) {
  const std::string& file = w.doc->file;
  for (const ContainerView& c : w.containers) {
    CheckEngine(w, c, options, sink);
    CheckContainerResources(w, c, w.volumes_shm, sink);
  }
  for (const ContainerView& c : w.worker_containers)
    CheckContainerResources(w, c, w.worker_volumes_shm, sink);
  CheckArch(w, options, sink);
  CheckGroupAndEnv(w, sink);
  if (w.kind == "LeaderWorkerSet") {
    const YamlNode* policy = w.doc->root.Path("spec.leaderWorkerTemplate.restartPolicy");
    if (policy != nullptr && policy->Text() != "RecreateGroupOnPodRestart") {
      sink.Add(
          file, policy->line, "K3-LWS-001",
          "restartPolicy " + policy->Text() + ": one failed pod leaves the other ranks of the group hanging",
          "set restartPolicy: RecreateGroupOnPodRestart");
    }
  }
  if (w.multi_node) {
    bool has_net = false;
    for (const auto* list : {&w.containers, &w.worker_containers}) {
      for (const ContainerView& c : *list) {
        has_net |= c.env.count("NCCL_SOCKET_IFNAME") > 0 || c.env.count("GLOO_SOCKET_IFNAME") > 0;
      }
    }
    if (!has_net) {
      sink.Add(file, w.line, "K3-NET-001",
               "multi-node serving without NCCL_SOCKET_IFNAME / GLOO_SOCKET_IFNAME",
               "set NCCL_SOCKET_IFNAME and GLOO_SOCKET_IFNAME to the pod interface (eth0) on every pod");
    }
  }
  std::string why;
  if (ArmNodes(w, options, why)) {  // Grace GB200/GB300 hosts come in NVL72 racks of 18 nodes
    const int nodes = w.pods_per_group * w.replicas;
    if (nodes > 18) {
      sink.Add(file, w.line, "K3-POOL-001",
               fmt::format("{} GB300 nodes ({} replicas x {} pods) exceed the 18-node NVL72 node-pool limit",
                           nodes, w.replicas, w.pods_per_group),
               "split across node pools / racks, or lower replicas");
    }
  }
  if (w.kind == "InferenceEndpointConfig" && !w.instance_type.empty() &&
      w.instance_type.rfind("ml.", 0) != 0) {
    const YamlNode* t = w.doc->root.Path("spec.instanceType");
    sink.Add(file, t != nullptr ? t->line : w.line, "K3-HP-001",
             "instanceType " + w.instance_type + " lacks the ml. prefix HyperPod expects",
             "use ml." + w.instance_type);
  }
}

void CheckServices(const std::vector<YamlDocument>& docs, Sink& sink) {
  struct Lws {
    std::string name;
    std::map<std::string, std::string> leader, worker;
  };
  std::vector<Lws> sets;
  for (const YamlDocument& d : docs) {
    if (d.root.Get("kind") == nullptr || d.root.Get("kind")->Text() != "LeaderWorkerSet") continue;
    Lws l;
    if (const YamlNode* n = d.root.Path("metadata.name")) l.name = n->Text();
    auto labels = [&](const char* path, std::map<std::string, std::string>& out, const char* index) {
      if (const YamlNode* m = d.root.Path(path); m != nullptr && m->IsMap()) {
        for (const auto& [k, v] : m->map) out[k] = v.Text();
      }
      out["leaderworkerset.sigs.k8s.io/name"] = l.name;
      out["leaderworkerset.sigs.k8s.io/worker-index"] = index;
    };
    labels("spec.leaderWorkerTemplate.leaderTemplate.metadata.labels", l.leader, "0");
    labels("spec.leaderWorkerTemplate.workerTemplate.metadata.labels", l.worker, "1");
    sets.push_back(l);
  }
  for (const YamlDocument& d : docs) {
    if (d.root.Get("kind") == nullptr || d.root.Get("kind")->Text() != "Service") continue;
    const YamlNode* selector = d.root.Path("spec.selector");
    if (selector == nullptr || !selector->IsMap() || selector->map.empty()) continue;
    auto matches = [&](const std::map<std::string, std::string>& labels) {
      for (const auto& [k, v] : selector->map) {
        auto it = labels.find(k);
        if (it == labels.end() || it->second != v.Text()) return false;
      }
      return true;
    };
    for (const Lws& l : sets) {
      const bool names_lws = selector->Get("leaderworkerset.sigs.k8s.io/name") != nullptr &&
                             selector->Get("leaderworkerset.sigs.k8s.io/name")->Text() == l.name;
      if (matches(l.worker)) {
        sink.Add(d.file, selector->line, "K3-SVC-001",
                 "the Service selector also matches the worker pods of LeaderWorkerSet " + l.name +
                     " (they serve no HTTP)",
                 "select the leader only: add role: leader (a leaderTemplate label) or "
                 "leaderworkerset.sigs.k8s.io/worker-index: \"0\"");
      } else if (names_lws && !matches(l.leader)) {
        sink.Add(d.file, selector->line, "K3-SVC-001",
                 "the Service selector names LeaderWorkerSet " + l.name + " but matches no leader pod",
                 "use the leaderTemplate's labels (e.g. role: leader)");
      }
    }
  }
}

}  // namespace lint
}  // namespace k3::deploy
