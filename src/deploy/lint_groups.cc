// Lint rules the second deploy dry run found missing (issue 41): ranks of one group that cannot agree,
// secrets in plain env values, environment names the engine's loaders never read, gateway objects that
// match nothing in the same folder, and unfilled <PLACEHOLDER>s in files to apply.
#include <regex>
#include <set>

#include "src/deploy/lint_internal.h"

namespace k3::deploy::lint {
namespace {

bool IsK3(const ContainerView& c) { return c.command_line.rfind("k3 ", 0) == 0; }
bool IsVllmServe(const ContainerView& c) { return c.command_line.find("vllm serve") != std::string::npos; }

bool StartsWith(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

// The environment names `k3` (serve, weights sync, the storage clients) reads in the families it owns;
// a name of those families outside this list is read by nothing (src/storage, src/dist, apps/k3).
const std::set<std::string>& K3ReadsEnv() {
  static const std::set<std::string> kNames = {"K3_API_KEY",
                                               "K3_AZURE_MANAGED_IDENTITY",
                                               "K3_DIST_CASE",
                                               "K3_DIST_FINGERPRINT",
                                               "K3_DIST_PORT",
                                               "K3_DIST_RANK",
                                               "K3_DIST_SHM",
                                               "K3_DIST_TIMEOUT_MS",
                                               "K3_DIST_WORLD",
                                               "K3_GCS_ENDPOINT",
                                               "K3_GCS_PATH_STYLE",
                                               "K3_LOCAL_RANK",
                                               "K3_NUM_THREADS",
                                               "K3_OSS_PATH_STYLE",
                                               "K3_S3_PATH_STYLE",
                                               "AWS_ACCESS_KEY_ID",
                                               "AWS_SECRET_ACCESS_KEY",
                                               "AWS_SESSION_TOKEN",
                                               "AWS_REGION",
                                               "AWS_DEFAULT_REGION",
                                               "AWS_PROFILE",
                                               "AWS_SHARED_CREDENTIALS_FILE",
                                               "AWS_ROLE_ARN",
                                               "AWS_ROLE_SESSION_NAME",
                                               "AWS_WEB_IDENTITY_TOKEN_FILE",
                                               "AWS_CONTAINER_AUTHORIZATION_TOKEN",
                                               "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE",
                                               "AWS_CONTAINER_CREDENTIALS_FULL_URI",
                                               "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
                                               "AWS_EC2_METADATA_DISABLED",
                                               "AWS_EC2_METADATA_SERVICE_ENDPOINT",
                                               "AWS_ENDPOINT_URL",
                                               "AWS_ENDPOINT_URL_S3",
                                               "AWS_ENDPOINT_URL_STS",
                                               "AZURE_AUTHORITY_HOST",
                                               "AZURE_CLIENT_ID",
                                               "AZURE_TENANT_ID",
                                               "AZURE_FEDERATED_TOKEN_FILE",
                                               "AZURE_POD_IDENTITY_AUTHORITY_HOST",
                                               "AZURE_STORAGE_CONNECTION_STRING",
                                               "AZURE_STORAGE_ENDPOINT",
                                               "AZURE_STORAGE_KEY",
                                               "AZURE_STORAGE_SAS_TOKEN",
                                               "GOOGLE_APPLICATION_CREDENTIALS",
                                               "GCE_METADATA_HOST",
                                               "GCS_HMAC_ACCESS_KEY_ID",
                                               "GCS_HMAC_SECRET",
                                               "HF_ENDPOINT",
                                               "HF_TOKEN",
                                               "HUGGING_FACE_HUB_TOKEN",
                                               "OSS_ACCESS_KEY_ID",
                                               "OSS_ACCESS_KEY_SECRET",
                                               "OSS_SESSION_TOKEN",
                                               "OSS_ENDPOINT",
                                               "OSS_REGION",
                                               "ALIBABA_CLOUD_ACCESS_KEY_ID",
                                               "ALIBABA_CLOUD_ACCESS_KEY_SECRET",
                                               "ALIBABA_CLOUD_SECURITY_TOKEN",
                                               "ALIBABA_CLOUD_REGION_ID",
                                               "VLLM_API_KEY"};
  return kNames;
}

bool K3Family(const std::string& name) {
  for (const char* p : {"K3_", "AWS_", "AZURE_", "GOOGLE_", "GCS_", "GCE_", "HF_", "HUGGING_FACE_", "OSS_",
                        "ALIBABA_CLOUD_", "VLLM_"}) {
    if (StartsWith(name, p)) return true;
  }
  return false;
}

bool SecretName(const std::string& name) {
  static const std::regex kSecret(
      "(SECRET|PASSWORD|PASSWD|TOKEN|ACCESS_KEY|API_KEY|ACCOUNT_KEY|STORAGE_KEY|SAS|CONNECTION_STRING|"
      "PRIVATE_KEY|CREDENTIALS)");
  static const std::regex kPathLike("_(FILE|PATH|DIR|URI|URL|ENDPOINT)$");
  return std::regex_search(name, kSecret) && !std::regex_search(name, kPathLike) &&
         name != "GOOGLE_APPLICATION_CREDENTIALS";
}

bool SecretValue(const std::string& value) {
  static const std::regex kKnown("^(AKIA|ASIA)[0-9A-Z]{16}$|^hf_[A-Za-z0-9]{30,}$|^LTAI[0-9A-Za-z]{12,}$");
  return std::regex_search(value, kKnown);
}

void CheckEnv(const WorkloadView& w, const ContainerView& c, Sink& sink) {
  for (const auto& [name, value] : c.env) {
    const bool literal = !value.empty() && !StartsWith(value, "$(") && !StartsWith(value, "${");
    if (literal && (SecretName(name) || SecretValue(value))) {
      sink.Add(
          w.doc->file, c.line, "K3-SECRET-001",
          "container " + c.name + " carries " + name +
              " as a plain env value (readable by anyone who "
              "can read the object, and kept in its history)",
          "put it in a Secret and use valueFrom.secretKeyRef / envFrom.secretRef, or a workload identity");
    }
    if (IsK3(c) && K3Family(name) && K3ReadsEnv().count(name) == 0) {
      sink.Add(w.doc->file, c.line, "K3-ENV-001",
               "container " + c.name + " sets " + name + ", which k3 never reads",
               "drop it, or use the name k3 reads (docs/weights.md lists the credential variables)");
    }
    if (IsVllmServe(c) && StartsWith(name, "K3_")) {
      sink.Add(w.doc->file, c.line, "K3-ENV-001",
               "container " + c.name + " runs vLLM but sets " + name + ", which only k3 reads",
               "drop it; vLLM takes its credentials from the pod's identity or the provider's variables");
    }
  }
}

// PAI-EAS distributed unit: one script for every instance, so its --nnodes must be the unit's size (else
// the instances wait for ranks that never start, or EAS starts instances no rank expects).
void CheckEasUnit(const WorkloadView& w, Sink& sink) {
  if (w.kind != "EasService") return;
  for (const ContainerView& c : w.containers) {
    const std::string nnodes = FlagValue(c.command_line, "--nnodes");
    const int n = nnodes.empty() ? 1 : std::atoi(nnodes.c_str());
    if (n != w.pods_per_group) {
      sink.Add(w.doc->file, c.line, "K3-GROUP-001",
               fmt::format("the script starts a group of --nnodes {} but the service's unit.size is {}", n,
                           w.pods_per_group),
               "make unit.size the --nnodes of the script (one instance per node)");
    }
  }
}

// LWS leader and worker: the flags every rank of one group must agree on.
void CheckGroup(const WorkloadView& w, Sink& sink) {
  CheckEasUnit(w, sink);
  if (w.kind != "LeaderWorkerSet" || w.containers.empty() || w.worker_containers.empty()) return;
  const ContainerView& leader = w.containers.front();
  const ContainerView& worker = w.worker_containers.front();
  if (!IsK3(leader) || !IsK3(worker)) return;
  // Flags with a value compare their values; --enable-expert-parallel compares presence.
  for (const char* flag : {"--tensor-parallel-size", "--master-port", "--model", "--max-model-len",
                           "--enable-expert-parallel"}) {
    const bool valued = std::string(flag) != "--enable-expert-parallel";
    const auto shown = [&](const ContainerView& c) {
      if (!HasFlag(c.command_line, flag)) return std::string("(absent)");
      return valued ? FlagValue(c.command_line, flag) : std::string("(set)");
    };
    const std::string a = shown(leader), b = shown(worker);
    if (a != b) {
      sink.Add(
          w.doc->file, worker.line, "K3-GROUP-001",
          fmt::format("the ranks of one group disagree on {}: leader {}, worker {}; they never meet at the "
                      "first collective",
                      flag, a, b),
          "give leader and worker the same value");
    }
  }
  const std::string tp = FlagValue(leader.command_line, "--tensor-parallel-size");
  const int ranks = tp.empty() ? 1 : std::atoi(tp.c_str());
  if (w.pods_per_group > 1 && (ranks < w.pods_per_group || ranks % w.pods_per_group != 0)) {
    sink.Add(w.doc->file, leader.line, "K3-GROUP-001",
             fmt::format("--tensor-parallel-size {} cannot be split over the {} pods of the group (size)",
                         ranks, w.pods_per_group),
             "make the world size a multiple of leaderWorkerTemplate.size");
  }
}

using Labels = std::map<std::string, std::string>;

Labels MapOf(const YamlNode* node) {
  Labels out;
  if (node != nullptr && node->IsMap()) {
    for (const auto& [k, v] : node->map) out[k] = v.Text();
  }
  return out;
}

bool Selects(const Labels& selector, const Labels& labels) {
  if (selector.empty()) return false;
  for (const auto& [k, v] : selector) {
    auto it = labels.find(k);
    if (it == labels.end() || it->second != v) return false;
  }
  return true;
}

struct PodTemplate {
  Labels labels;
  std::set<int> ports;
};

void AddTemplate(const YamlNode* tmpl, Labels extra, std::vector<PodTemplate>& out) {
  if (tmpl == nullptr) return;
  PodTemplate t;
  t.labels = MapOf(tmpl->Path("metadata.labels"));
  t.labels.insert(extra.begin(), extra.end());
  if (const YamlNode* cs = tmpl->Path("spec.containers"); cs != nullptr && cs->IsSeq()) {
    for (const YamlNode& c : cs->seq) {
      if (const YamlNode* ps = c.Get("ports"); ps != nullptr && ps->IsSeq()) {
        for (const YamlNode& p : ps->seq) {
          if (const YamlNode* n = p.Get("containerPort")) t.ports.insert(std::atoi(n->Text().c_str()));
        }
      }
    }
  }
  out.push_back(std::move(t));
}

}  // namespace

void CheckGroupAndEnv(const WorkloadView& w, Sink& sink) {
  CheckGroup(w, sink);
  for (const auto* list : {&w.containers, &w.worker_containers}) {
    for (const ContainerView& c : *list) CheckEnv(w, c, sink);
  }
}

void CheckGatewayReferences(const std::vector<YamlDocument>& docs, Sink& sink) {
  std::vector<PodTemplate> pods;
  struct Svc {
    Labels selector;
    std::set<int> ports;
  };
  std::map<std::string, Svc> services;
  std::set<std::string> pools;
  for (const YamlDocument& d : docs) {
    const std::string kind = d.root.Get("kind") != nullptr ? d.root.Get("kind")->Text() : "";
    const YamlNode* name = d.root.Path("metadata.name");
    if (kind == "Deployment") AddTemplate(d.root.Path("spec.template"), {}, pods);
    if (kind == "LeaderWorkerSet" && name != nullptr) {
      // The LWS controller labels every pod with the set's name (and the template's own labels).
      const Labels lws = {{"leaderworkerset.sigs.k8s.io/name", name->Text()}};
      AddTemplate(d.root.Path("spec.leaderWorkerTemplate.leaderTemplate"), lws, pods);
      AddTemplate(d.root.Path("spec.leaderWorkerTemplate.workerTemplate"), lws, pods);
    }
    if (kind == "Service" && name != nullptr) {
      Svc s;
      s.selector = MapOf(d.root.Path("spec.selector"));
      if (const YamlNode* ps = d.root.Path("spec.ports"); ps != nullptr && ps->IsSeq()) {
        for (const YamlNode& p : ps->seq) {
          if (const YamlNode* n = p.Get("port")) s.ports.insert(std::atoi(n->Text().c_str()));
        }
      }
      services[name->Text()] = s;
    }
    if (kind == "InferencePool" && name != nullptr) pools.insert(name->Text());
  }
  const auto selected = [&](const Labels& selector) {
    std::vector<const PodTemplate*> out;
    for (const PodTemplate& p : pods) {
      if (Selects(selector, p.labels)) out.push_back(&p);
    }
    return out;
  };
  for (const YamlDocument& d : docs) {
    const std::string kind = d.root.Get("kind") != nullptr ? d.root.Get("kind")->Text() : "";
    const std::string& file = d.file;
    if (kind == "InferencePool") {
      const YamlNode* sel = d.root.Path("spec.selector.matchLabels");
      // Judged only with the serving workload in the same set (a lone gateway.yaml has none).
      const bool workloads_here = pods.size() > 1;
      const std::vector<const PodTemplate*> matched = selected(MapOf(sel));
      if (workloads_here && matched.empty()) {
        sink.Add(file, sel != nullptr ? sel->line : d.line, "K3-GW-002",
                 "the InferencePool's selector matches no pod template in these files: the pool has no "
                 "endpoints and every request fails",
                 "select the serving pods' labels (LWS: leaderworkerset.sigs.k8s.io/name + role: leader)");
      }
      if (const YamlNode* tps = d.root.Path("spec.targetPorts");
          tps != nullptr && tps->IsSeq() && !matched.empty()) {
        for (const YamlNode& tp : tps->seq) {
          const int port = tp.Get("number") != nullptr ? std::atoi(tp.Get("number")->Text().c_str()) : 0;
          bool open = false;
          for (const PodTemplate* p : matched) open |= p->ports.count(port) > 0;
          if (!open) {
            sink.Add(file, tp.line, "K3-GW-002",
                     fmt::format("targetPorts {} is no containerPort of the pods the pool selects", port),
                     "use the serving container's port");
          }
        }
      }
      const YamlNode* ref = d.root.Path("spec.endpointPickerRef");
      if (ref != nullptr) {
        const std::string picker = ref->Get("name") != nullptr ? ref->Get("name")->Text() : "";
        const YamlNode* port = ref->Path("port.number");
        auto it = services.find(picker);
        if (it == services.end()) {
          sink.Add(file, ref->line, "K3-GW-002",
                   "endpointPickerRef names Service " + picker + ", which these files do not define",
                   "render the endpoint picker's Service (k3 render --gateway) or fix the name");
        } else if (port != nullptr && it->second.ports.count(std::atoi(port->Text().c_str())) == 0) {
          sink.Add(file, port->line, "K3-GW-002",
                   "endpointPickerRef port " + port->Text() + " is not a port of Service " + picker,
                   "use the picker Service's gRPC port");
        } else if (selected(it->second.selector).empty()) {
          sink.Add(file, ref->line, "K3-GW-002",
                   "the endpoint picker Service " + picker + " selects no pod in these files",
                   "match the picker Deployment's pod labels");
        }
      }
    }
    if (kind == "HTTPRoute") {
      if (const YamlNode* rules = d.root.Path("spec.rules"); rules != nullptr && rules->IsSeq()) {
        for (const YamlNode& r : rules->seq) {
          const YamlNode* refs = r.Get("backendRefs");
          if (refs == nullptr || !refs->IsSeq()) continue;
          for (const YamlNode& b : refs->seq) {
            if (b.Get("kind") == nullptr || b.Get("kind")->Text() != "InferencePool") continue;
            const std::string pool = b.Get("name") != nullptr ? b.Get("name")->Text() : "";
            if (pools.count(pool) == 0) {
              sink.Add(file, b.line, "K3-GW-002",
                       "the HTTPRoute sends to InferencePool " + pool + ", which these files do not define",
                       "name the rendered InferencePool");
            }
          }
        }
      }
    }
    if (kind == "InferenceObjective") {
      const YamlNode* pool = d.root.Path("spec.poolRef.name");
      if (pool != nullptr && pools.count(pool->Text()) == 0) {
        sink.Add(file, pool->line, "K3-GW-002",
                 "the InferenceObjective refers to InferencePool " + pool->Text() +
                     ", which these files do "
                     "not define",
                 "name the rendered InferencePool");
      }
    }
  }
}

void CheckPlaceholders(const std::string& text, const std::string& file, Sink& sink) {
  static const std::regex kPlaceholder("<[A-Z][A-Z0-9_]*>");
  int line = 1;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t end = text.find('\n', start);
    const std::string l = text.substr(start, end == std::string::npos ? std::string::npos : end - start);
    std::smatch m;
    if (std::regex_search(l, m, kPlaceholder)) {
      sink.Add(file, line, "K3-PH-001",
               "unfilled placeholder " + m[0].str() + " in a file that is applied or run as it is",
               "fill it in, or render with the flag that supplies it (k3 render --region, --weights)");
    }
    if (end == std::string::npos) break;
    start = end + 1;
    ++line;
  }
}

}  // namespace k3::deploy::lint
