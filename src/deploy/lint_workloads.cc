// Workload extraction for k3 lint: turns each supported kind into WorkloadView / ContainerView so the rules
// are written once (see lint_internal.h).
#include <algorithm>
#include <cctype>

#include "src/deploy/lint_internal.h"

namespace k3::deploy::lint {
namespace {

std::string Join(const YamlNode* seq) {
  std::string out;
  if (seq == nullptr) return out;
  if (seq->IsScalar()) return seq->scalar;
  for (const YamlNode& item : seq->seq) {
    if (!item.IsScalar()) continue;
    out += (out.empty() ? "" : " ") + item.scalar;
  }
  return out;
}

int ParseCount(const std::string& s) {
  if (s.empty() || s.size() > 6) return 0;
  for (char c : s) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return 0;
  }
  return std::stoi(s);
}

void ReadGpus(const YamlNode* resources, ContainerView& c) {
  if (resources == nullptr) return;
  if (const YamlNode* r = resources->Path("requests"); r != nullptr) {
    if (const YamlNode* g = r->Get("nvidia.com/gpu"); g != nullptr && g->IsScalar()) {
      c.gpu_requests_set = true;
      c.gpu_requests = g->scalar;
    }
  }
  if (const YamlNode* l = resources->Path("limits"); l != nullptr) {
    if (const YamlNode* g = l->Get("nvidia.com/gpu"); g != nullptr && g->IsScalar()) {
      c.gpu_limits_set = true;
      c.gpu_limits = g->scalar;
    }
  }
  c.gpus = ParseCount(c.gpu_limits_set ? c.gpu_limits : c.gpu_requests);
}

void ReadEnv(const YamlNode* env, ContainerView& c) {
  if (env == nullptr || !env->IsSeq()) return;
  for (const YamlNode& e : env->seq) {
    const YamlNode* name = e.Get("name");
    const YamlNode* value = e.Get("value");
    if (name != nullptr && name->IsScalar()) c.env[name->scalar] = value != nullptr ? value->Text() : "";
  }
}

ContainerView ReadContainer(const YamlNode& node) {
  ContainerView c;
  c.node = &node;
  c.line = node.line;
  if (const YamlNode* n = node.Get("name")) c.name = n->Text();
  if (const YamlNode* n = node.Get("image")) c.image = n->Text();
  c.command_line = Join(node.Get("command"));
  const std::string args = Join(node.Get("args"));
  if (!args.empty()) c.command_line += (c.command_line.empty() ? "" : " ") + args;
  ReadEnv(node.Get("env"), c);
  if (const YamlNode* mounts = node.Get("volumeMounts"); mounts != nullptr && mounts->IsSeq()) {
    for (const YamlNode& m : mounts->seq) {
      const YamlNode* path = m.Get("mountPath");
      const YamlNode* name = m.Get("name");
      if (path != nullptr && name != nullptr) c.mounts[path->Text()] = name->Text();
    }
  }
  ReadGpus(node.Get("resources"), c);
  c.startup_probe = node.Get("startupProbe");
  c.readiness_probe = node.Get("readinessProbe");
  c.liveness_probe = node.Get("livenessProbe");
  return c;
}

std::vector<ContainerView> ReadContainers(const YamlNode* pod_spec) {
  std::vector<ContainerView> out;
  if (pod_spec == nullptr) return out;
  const YamlNode* containers = pod_spec->Get("containers");
  if (containers == nullptr || !containers->IsSeq()) return out;
  for (const YamlNode& c : containers->seq) {
    if (c.IsMap()) out.push_back(ReadContainer(c));
  }
  return out;
}

void ReadPodSpec(const YamlNode* spec, WorkloadView& w, std::map<std::string, std::string>& shm) {
  if (spec == nullptr) return;
  if (const YamlNode* sel = spec->Get("nodeSelector"); sel != nullptr && sel->IsMap()) {
    for (const auto& [k, v] : sel->map) w.node_selector[k] = v.Text();
  }
  if (const YamlNode* ipc = spec->Get("hostIPC")) w.host_ipc = ipc->Text() == "true";
  if (const YamlNode* volumes = spec->Get("volumes"); volumes != nullptr && volumes->IsSeq()) {
    for (const YamlNode& v : volumes->seq) {
      const YamlNode* empty = v.Get("emptyDir");
      const YamlNode* name = v.Get("name");
      if (empty == nullptr || name == nullptr) continue;
      const YamlNode* medium = empty->Get("medium");
      if (medium == nullptr || medium->Text() != "Memory") continue;
      const YamlNode* size = empty->Get("sizeLimit");
      shm[name->Text()] = size != nullptr ? size->Text() : "";
    }
  }
  if (auto it = w.node_selector.find("node.kubernetes.io/instance-type"); it != w.node_selector.end()) {
    w.instance_type = it->second;
  }
}

int IntOr(const YamlNode* node, int fallback) {
  if (node == nullptr || !node->IsInteger() || node->scalar.size() > 7) return fallback;
  return std::stoi(node->scalar);
}

bool CommandIsMultiNode(const std::string& cmd) {
  return cmd.find("multi-node-serving.sh") != std::string::npos ||
         cmd.find("--nnodes") != std::string::npos || cmd.find("ray start") != std::string::npos;
}

}  // namespace

std::string FlagValue(const std::string& cmd, const std::string& flag) {
  size_t pos = 0;
  while ((pos = cmd.find(flag, pos)) != std::string::npos) {
    const size_t end = pos + flag.size();
    const bool starts =
        pos == 0 || std::isspace(static_cast<unsigned char>(cmd[pos - 1])) || cmd[pos - 1] == '"';
    if (starts && end < cmd.size() && (cmd[end] == '=' || cmd[end] == ' ' || cmd[end] == '\t')) {
      size_t v = end + 1;
      while (v < cmd.size() && (cmd[v] == ' ' || cmd[v] == '\t' || cmd[v] == '\\' || cmd[v] == '\n')) ++v;
      size_t e = v;
      while (e < cmd.size() && !std::isspace(static_cast<unsigned char>(cmd[e])) && cmd[e] != '\\' &&
             cmd[e] != ';' && cmd[e] != '"') {
        ++e;
      }
      return cmd.substr(v, e - v);
    }
    pos = end;
  }
  return "";
}

bool HasFlag(const std::string& cmd, const std::string& flag) {
  size_t pos = 0;
  while ((pos = cmd.find(flag, pos)) != std::string::npos) {
    const size_t end = pos + flag.size();
    const bool starts =
        pos == 0 || std::isspace(static_cast<unsigned char>(cmd[pos - 1])) || cmd[pos - 1] == '"';
    const bool ends = end == cmd.size() || std::isspace(static_cast<unsigned char>(cmd[end])) ||
                      cmd[end] == '=' || cmd[end] == '\\' || cmd[end] == '"';
    if (starts && ends) return true;
    pos = end;
  }
  return false;
}

std::vector<WorkloadView> ExtractWorkloads(const YamlDocument& doc) {
  std::vector<WorkloadView> out;
  const YamlNode& root = doc.root;
  if (!root.IsMap()) return out;
  WorkloadView w;
  w.doc = &doc;
  w.line = root.line;
  if (const YamlNode* k = root.Get("kind")) w.kind = k->Text();
  if (const YamlNode* n = root.Path("metadata.name")) w.name = n->Text();
  const YamlNode* spec = root.Get("spec");
  if (w.kind == "Deployment" || w.kind == "StatefulSet" || w.kind == "Job" || w.kind == "DaemonSet") {
    w.pod_spec = spec != nullptr ? spec->Path("template.spec") : nullptr;
    w.replicas = IntOr(spec != nullptr ? spec->Get("replicas") : nullptr, 1);
  } else if (w.kind == "Pod") {
    w.pod_spec = spec;
  } else if (w.kind == "LeaderWorkerSet" && spec != nullptr) {
    w.pod_spec = spec->Path("leaderWorkerTemplate.leaderTemplate.spec");
    w.worker_pod_spec = spec->Path("leaderWorkerTemplate.workerTemplate.spec");
    if (w.pod_spec == nullptr) w.pod_spec = w.worker_pod_spec;  // no leaderTemplate: every pod is a worker
    w.pods_per_group = IntOr(spec->Path("leaderWorkerTemplate.size"), 1);
    w.replicas = IntOr(spec->Get("replicas"), 1);
    w.multi_node = w.pods_per_group > 1;
    w.worker_containers = ReadContainers(w.worker_pod_spec);
    ReadPodSpec(w.worker_pod_spec, w, w.worker_volumes_shm);
  } else if (w.kind == "InferenceEndpointConfig" && spec != nullptr) {
    if (const YamlNode* worker = spec->Get("worker"); worker != nullptr && worker->IsMap()) {
      ContainerView c = ReadContainer(*worker);
      ReadEnv(worker->Get("environmentVariables"), c);
      if (const YamlNode* probes = worker->Get("probes")) {
        c.startup_probe = probes->Get("startupProbe");
        c.readiness_probe = probes->Get("readinessProbe");
        c.liveness_probe = probes->Get("livenessProbe");
      }
      if (c.image.find("vllm") != std::string::npos &&
          c.command_line.find("vllm serve") == std::string::npos) {
        c.command_line = "vllm serve " + c.command_line;  // the vLLM image's entrypoint is `vllm serve`
      }
      w.containers.push_back(c);
    }
    if (const YamlNode* t = spec->Get("instanceType")) w.instance_type = t->Text();
    w.replicas = IntOr(spec->Get("replicas"), 1);
    w.managed_model_source = spec->Get("modelSourceConfig") != nullptr;
    out.push_back(w);
    return out;
  } else if (w.kind == "InferenceService" && spec != nullptr) {
    w.pod_spec = spec->Get("predictor");
    if (w.pod_spec != nullptr && w.pod_spec->Get("workerSpec") != nullptr) w.multi_node = true;
  } else if (root.Get("containers") != nullptr && root.Get("metadata") != nullptr &&
             root.Get("apiVersion") == nullptr) {
    // PAI-EAS service JSON: containers[].script / command carry the engine command.
    w.kind = "EasService";
    if (const YamlNode* n = root.Path("metadata.name")) w.name = n->Text();
    if (const YamlNode* t = root.Path("cloud.computing.instance_type")) w.instance_type = t->Text();
    if (const YamlNode* containers = root.Get("containers"); containers != nullptr && containers->IsSeq()) {
      for (const YamlNode& node : containers->seq) {
        ContainerView c = ReadContainer(node);
        if (const YamlNode* s = node.Get("script")) c.command_line = s->Text();
        if (const YamlNode* g = root.Path("metadata.gpu")) c.gpus = ParseCount(g->Text());
        c.startup_probe = node.Get("startup_check");
        c.readiness_probe = node.Get("health_check");
        // A distributed unit's script exports the interface EAS names for rank traffic (COMM_IFNAME).
        for (const char* name : {"NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME"}) {
          if (c.command_line.find(std::string(name) + "=") != std::string::npos) c.env[name] = "(script)";
        }
        w.containers.push_back(c);
      }
    }
    // EAS distributed inference: unit.size instances serve one replica (RANK_ID 0..size-1).
    if (const YamlNode* size = root.Path("unit.size"))
      w.pods_per_group = std::max(1, ParseCount(size->Text()));
    w.multi_node = w.pods_per_group > 1;
    w.replicas = IntOr(root.Path("metadata.instance"), 1);
    w.managed_model_source = root.Get("storage") != nullptr;
    out.push_back(w);
    return out;
  } else {
    return out;
  }
  ReadPodSpec(w.pod_spec, w, w.volumes_shm);
  w.containers = ReadContainers(w.pod_spec);
  for (const ContainerView& c : w.containers) w.multi_node |= CommandIsMultiNode(c.command_line);
  out.push_back(w);
  return out;
}

void Sink::Add(const std::string& file, int line, const char* rule, const std::string& message,
               const std::string& fix) {
  Severity severity = Severity::kError;
  for (const RuleInfo& r : LintRules()) {
    if (std::string(r.id) == rule) severity = r.severity;
  }
  out_.push_back({file, line, rule, severity, message, fix});
}

}  // namespace k3::deploy::lint
