// k3 lint rules across files and over scripts (see lint_internal.h): what the deploy dry run taught.
//   K3-VOL-001  the weights writer (a pre-sync Job) and the engine use different paths on one volume
//   K3-VOL-002  a ReadWriteOnce volume mounted by more than one pod
//   K3-GW-001   a GKE gateway class on a cluster that is not GKE
//   K3-DL-001   `huggingface-cli download` (gone in huggingface_hub 1.x; `hf download`)
//   K3-IMG-001  a Vertex AI model whose serving image is not in Artifact Registry
//   K3-PAR-003  TP x PP above the GPUs of the one instance a script / Dockerfile / KServe pod gets
//   K3-SCRIPT-001 / -002  cleanup that stops at the first failure, or leaves reservations to a comment
#include <cstdlib>
#include <regex>
#include <set>

#include <fmt/format.h>

#include "src/deploy/lint_internal.h"

namespace k3::deploy::lint {
namespace {

std::string Basename(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// One logical shell line: continuation lines joined, with the line it starts on.
struct ShellLine {
  int line = 0;
  std::string text;
  bool comment = false;
};

std::vector<ShellLine> ShellLines(const std::string& text) {
  std::vector<ShellLine> out;
  ShellLine current;
  int number = 0;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(pos, end - pos);
    ++number;
    if (current.text.empty()) current.line = number;
    const bool continued = !line.empty() && line.back() == '\\';
    if (continued) line.pop_back();
    current.text += line + (continued ? " " : "");
    if (!continued) {
      const size_t first = current.text.find_first_not_of(" \t");
      current.comment = first != std::string::npos && current.text[first] == '#';
      if (first != std::string::npos) out.push_back(current);
      current = ShellLine();
    }
    pos = end + 1;
  }
  return out;
}

// Expands $NAME and ${NAME...} from simple assignments seen earlier in the script ($NAME when unknown).
std::string Expand(const std::string& value, const std::map<std::string, std::string>& vars) {
  static const std::regex kRef(R"(\$\{([A-Za-z_][A-Za-z0-9_]*)[^}]*\}|\$([A-Za-z_][A-Za-z0-9_]*))");
  std::string out;
  auto begin = std::sregex_iterator(value.begin(), value.end(), kRef);
  size_t last = 0;
  for (auto it = begin; it != std::sregex_iterator(); ++it) {
    out += value.substr(last, it->position() - last);
    const std::string name = (*it)[1].matched ? (*it)[1].str() : (*it)[2].str();
    auto v = vars.find(name);
    out += v != vars.end() ? v->second : "$" + name;  // unknown: kept as written
    last = it->position() + it->length();
  }
  out += value.substr(last);
  std::string unquoted;
  for (char c : out) {
    if (c != '"' && c != '\'') unquoted += c;
  }
  return unquoted;
}

int ParsePositive(const std::string& s) {
  if (s.empty() || s.size() > 6 || s.find_first_not_of("0123456789") != std::string::npos) return 0;
  return std::stoi(s);
}

// TP x PP of an engine command anywhere in `text` ("--tensor-parallel-size 8", "=8" or ",8" in a
// comma-separated container-args list); 0 when there is no TP.
int ParallelRanks(const std::string& text) {
  static const std::regex kTp(R"(--tensor-parallel-size[ =,"']+([0-9]+))");
  static const std::regex kPp(R"(--pipeline-parallel-size[ =,"']+([0-9]+))");
  std::smatch tp, pp;
  if (!std::regex_search(text, tp, kTp)) return 0;
  const int pipeline = std::regex_search(text, pp, kPp) ? ParsePositive(pp[1]) : 1;
  return ParsePositive(tp[1]) * std::max(pipeline, 1);
}

void CheckDownloadCommand(const std::string& text, const std::string& file, Sink& sink) {
  int line = 1;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t next = text.find('\n', pos);
    if (next == std::string::npos) next = text.size();
    if (std::string_view(text).substr(pos, next - pos).find("huggingface-cli download") !=
        std::string::npos) {
      sink.Add(file, line, "K3-DL-001",
               "`huggingface-cli download` is gone from huggingface_hub 1.x (an unpinned install gets 1.x)",
               "pin huggingface_hub (e.g. ==1.x.y) and use `hf download REPO --local-dir DIR`");
    }
    pos = next + 1;
    ++line;
  }
}

bool IsArtifactRegistry(const std::string& image) {
  return image.find("-docker.pkg.dev/") != std::string::npos || image.find("gcr.io/") != std::string::npos;
}

}  // namespace

void CheckTextFile(const std::string& text, const std::string& file, Sink& sink) {
  CheckDownloadCommand(text, file, sink);
  CheckPlaceholders(text, file, sink);
}

void CheckShellScript(const std::string& text, const std::string& file, Sink& sink) {
  const std::vector<ShellLine> lines = ShellLines(text);
  const bool cleanup = Basename(file).rfind("cleanup", 0) == 0;
  std::map<std::string, std::string> vars;
  static const std::regex kAssign(R"(^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)=(\S*))");
  static const std::regex kErrexit(R"(^\s*set\s+(-[a-zA-Z]*e[a-zA-Z]*\b|.*-o\s+errexit))");
  static const std::regex kGpus(R"((?:--gpus[= ]|,count=)([0-9]+))");
  static const std::regex kImage(R"(--container-image-uri[= ](\S+))");
  int reservation_comment = 0;
  bool reservation_deleted = false;
  int gpus = 0, gpus_line = 0, ranks = 0, ranks_line = 0;
  for (const ShellLine& l : lines) {
    const std::string lower = [&] {
      std::string s = l.text;
      for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      return s;
    }();
    if (l.comment) {
      if (cleanup && reservation_comment == 0 && lower.find("reservation") != std::string::npos)
        reservation_comment = l.line;
      continue;
    }
    std::smatch m;
    if (std::regex_search(l.text, m, kAssign)) vars[m[1]] = Expand(m[2], vars);
    if (cleanup && std::regex_search(l.text, kErrexit)) {
      sink.Add(file, l.line, "K3-SCRIPT-001",
               "cleanup stops at the first failing command, so what bills (reservations, node pools, "
               "clusters) may never be deleted",
               "drop `set -e`; run every delete, record failures and print what is left at the end");
    }
    if (lower.find("reservation") != std::string::npos && lower.find("delete") != std::string::npos)
      reservation_deleted = true;
    if (std::regex_search(l.text, m, kGpus) && (gpus == 0 || ParsePositive(m[1]) < gpus)) {
      gpus = ParsePositive(m[1]);
      gpus_line = l.line;
    }
    if (const int r = ParallelRanks(l.text); r > ranks) {
      ranks = r;
      ranks_line = l.line;
    }
    if (l.text.find("gcloud ai models upload") != std::string::npos && std::regex_search(l.text, m, kImage)) {
      const std::string image = Expand(m[1], vars);
      if (!image.empty() && !IsArtifactRegistry(image)) {
        sink.Add(file, l.line, "K3-IMG-001",
                 "Vertex AI serves images from Artifact Registry only: " + image + " will not be pulled",
                 "copy the image to REGION-docker.pkg.dev/PROJECT/REPOSITORY (docker buildx imagetools "
                 "create --tag IMAGE SOURCE: every platform) and "
                 "pass that to --container-image-uri");
      }
    }
  }
  if (cleanup && reservation_comment > 0 && !reservation_deleted) {
    sink.Add(
        file, reservation_comment, "K3-SCRIPT-002",
        "the reservation is only mentioned in a comment: it keeps billing after cleanup",
        "delete the capacity reservation (group / blocks) in the script, after the clusters that use it");
  }
  if (gpus > 0 && ranks > gpus) {
    sink.Add(file, ranks_line, "K3-PAR-003",
             fmt::format("TP x PP = {} ranks but the instance has {} GPUs (line {})", ranks, gpus, gpus_line),
             "use an instance with TP x PP GPUs, or a target that spans nodes");
  }
}

void CheckDockerfiles(const std::vector<YamlDocument>& docs,
                      const std::vector<std::pair<std::string, std::string>>& dockerfiles,
                      const LintOptions& options, Sink& sink) {
  // Azure ML: the deployment's instance_type fixes the GPUs the Dockerfile's engine command gets.
  int gpus = 0;
  std::string instance;
  for (const YamlDocument& d : docs) {
    const YamlNode* t = d.root.Get("instance_type");
    if (t == nullptr || options.catalog == nullptr) continue;
    if (const Instance* i = options.catalog->FindInstance(t->Text())) {
      gpus = i->gpu_count;
      instance = t->Text();
    }
    // Kubernetes compute: instance_type names an InstanceType custom resource of the same files.
    for (const YamlDocument& it : docs) {
      const YamlNode* kind = it.root.Get("kind");
      const YamlNode* name = it.root.Path("metadata.name");
      const YamlNode* limit = it.root.Path("spec.resources.limits");
      if (kind == nullptr || kind->Text() != "InstanceType" || name == nullptr || name->Text() != t->Text() ||
          limit == nullptr) {
        continue;
      }
      if (const YamlNode* g = limit->Get("nvidia.com/gpu")) {
        gpus = std::atoi(g->Text().c_str());
        instance = "InstanceType " + t->Text();
      }
    }
  }
  for (const auto& [file, text] : dockerfiles) {
    CheckTextFile(text, file, sink);
    if (gpus == 0) continue;
    for (const ShellLine& l : ShellLines(text)) {
      if (l.comment) continue;
      if (const int ranks = ParallelRanks(l.text); ranks > gpus) {
        sink.Add(file, l.line, "K3-PAR-003",
                 fmt::format("TP x PP = {} ranks but {} (the deployment's instance_type) has {} GPUs", ranks,
                             instance, gpus),
                 "lower --tensor-parallel-size to the instance's GPUs, or use a target that spans nodes");
      }
    }
  }
}

void CheckVolumes(const std::vector<YamlDocument>& docs, Sink& sink) {
  struct Claim {
    bool rwo_only = false;
    int line = 0;
    std::string file;
  };
  std::map<std::string, Claim> claims;
  for (const YamlDocument& d : docs) {
    const YamlNode* kind = d.root.Get("kind");
    if (kind == nullptr || kind->Text() != "PersistentVolumeClaim") continue;
    const YamlNode* name = d.root.Path("metadata.name");
    const YamlNode* modes = d.root.Path("spec.accessModes");
    if (name == nullptr || modes == nullptr || !modes->IsSeq()) continue;
    Claim c{true, modes->line, d.file};
    for (const YamlNode& m : modes->seq) c.rwo_only &= m.Text() == "ReadWriteOnce";
    claims[name->Text()] = c;
  }
  // Per pod template: claim mounted -> (mountPath); pods that run it.
  struct Mount {
    std::string claim, path;
  };
  auto mounts_of = [](const YamlNode* pod, const YamlNode& container) {
    std::map<std::string, std::string> volume_claim;
    std::vector<Mount> out;
    if (const YamlNode* vols = pod->Get("volumes"); vols != nullptr && vols->IsSeq()) {
      for (const YamlNode& v : vols->seq) {
        const YamlNode* n = v.Get("name");
        const YamlNode* c = v.Path("persistentVolumeClaim.claimName");
        if (n != nullptr && c != nullptr) volume_claim[n->Text()] = c->Text();
      }
    }
    if (const YamlNode* ms = container.Get("volumeMounts"); ms != nullptr && ms->IsSeq()) {
      for (const YamlNode& m : ms->seq) {
        const YamlNode* n = m.Get("name");
        const YamlNode* p = m.Get("mountPath");
        if (n == nullptr || p == nullptr || !volume_claim.count(n->Text())) continue;
        out.push_back({volume_claim[n->Text()], p->Text()});
      }
    }
    return out;
  };
  // A path on a claim: (claim, path inside the volume) for an absolute path under one of `mounts`.
  auto on_claim = [](const std::vector<Mount>& mounts,
                     const std::string& path) -> std::pair<std::string, std::string> {
    for (const Mount& m : mounts) {
      std::string root = m.path;
      while (root.size() > 1 && root.back() == '/') root.pop_back();
      if (path == root || path.rfind(root + "/", 0) == 0) return {m.claim, path.substr(root.size())};
    }
    return {"", ""};
  };
  struct Written {
    std::string claim, inside, file;
    int line = 0;
  };
  std::vector<Written> written;
  struct Read {
    std::string claim, inside, path, file;
    int line = 0;
  };
  std::vector<Read> read;
  static const std::regex kDest(
      R"((?:--local-dir[ =]|aws s3 sync \S+ |k3 weights sync \S+ |rsync (?:--recursive |-r )*\S+ |&& mv \S+ )(/[^\s;&|'"]*))");
  for (const YamlDocument& d : docs) {
    for (const WorkloadView& w : ExtractWorkloads(d)) {
      if (w.pod_spec == nullptr) continue;
      const int pods = w.replicas * w.pods_per_group;
      std::set<std::string> flagged;
      for (const auto* list : {&w.containers, &w.worker_containers}) {
        for (const ContainerView& c : *list) {
          if (c.node == nullptr) continue;
          const YamlNode* pod = list == &w.containers ? w.pod_spec : w.worker_pod_spec;
          const std::vector<Mount> mounts = mounts_of(pod, *c.node);
          for (const Mount& m : mounts) {
            auto it = claims.find(m.claim);
            if (pods > 1 && it != claims.end() && it->second.rwo_only && flagged.insert(m.claim).second) {
              sink.Add(
                  it->second.file, it->second.line, "K3-VOL-002",
                  fmt::format("PersistentVolumeClaim {} is ReadWriteOnce but {} {} runs {} pods that mount "
                              "it: all but the first node's pods stay Pending",
                              m.claim, w.kind, w.name, pods),
                  "use ReadWriteMany (a shared-file StorageClass: EFS, Azure Files, Filestore) or one pod");
            }
          }
          if (w.kind == "Job") {
            const std::string& cmd = c.command_line;
            std::string last;
            for (auto it = std::sregex_iterator(cmd.begin(), cmd.end(), kDest); it != std::sregex_iterator();
                 ++it)
              last = (*it)[1];
            if (!last.empty()) {
              auto [claim, inside] = on_claim(mounts, last);
              if (!claim.empty()) written.push_back({claim, inside, d.file, c.line});
            }
          } else {
            const std::string model = FlagValue(c.command_line, "--model");
            std::string path = model;
            if (path.empty()) {
              static const std::regex kServe(R"(vllm serve (/\S+))");
              std::smatch m;
              if (std::regex_search(c.command_line, m, kServe)) path = m[1];
            }
            if (path.empty() || path[0] != '/') continue;
            auto [claim, inside] = on_claim(mounts, path);
            if (!claim.empty()) read.push_back({claim, inside, path, d.file, c.line});
          }
        }
      }
    }
  }
  for (const Read& r : read) {
    for (const Written& wr : written) {
      if (wr.claim != r.claim || wr.inside == r.inside) continue;
      sink.Add(
          r.file, r.line, "K3-VOL-001",
          fmt::format("the engine reads {} (volume {}:{}) but the Job in {} writes {}:{}: the engine finds "
                      "no weights and downloads them again, or fails",
                      r.path, r.claim, r.inside.empty() ? "/" : r.inside, wr.file, wr.claim,
                      wr.inside.empty() ? "/" : wr.inside),
          "serve the directory the Job writes (the same path inside the volume)");
    }
  }
}

void CheckGatewayClasses(const std::vector<YamlDocument>& docs, const LintOptions& options, Sink& sink) {
  // What says the cluster is not GKE: node selectors of AKS / EKS, or an instance type of another cloud.
  std::string other;
  for (const YamlDocument& d : docs) {
    for (const WorkloadView& w : ExtractWorkloads(d)) {
      for (const auto& [key, value] : w.node_selector) {
        if (key == "agentpool" || key.rfind("kubernetes.azure.com/", 0) == 0) other = "AKS (" + key + ")";
        if (key.rfind("eks.amazonaws.com/", 0) == 0) other = "EKS (" + key + ")";
      }
      if (!w.instance_type.empty() && options.catalog != nullptr) {
        const Instance* i = options.catalog->FindInstance(w.instance_type);
        if (i != nullptr && i->cloud != "gcp") other = i->cloud + " instance " + w.instance_type;
      }
    }
  }
  if (other.empty()) return;
  for (const YamlDocument& d : docs) {
    const YamlNode* kind = d.root.Get("kind");
    const YamlNode* cls = d.root.Path("spec.gatewayClassName");
    if (kind == nullptr || kind->Text() != "Gateway" || cls == nullptr) continue;
    if (cls->Text().rfind("gke-", 0) == 0) {
      sink.Add(d.file, cls->line, "K3-GW-001",
               "gatewayClassName " + cls->Text() + " exists only on GKE, but the workloads run on " + other,
               "install a Gateway API implementation with the inference extension (kgateway, Istio) and use "
               "its class (k3 render --gateway-impl)");
    }
  }
}

}  // namespace k3::deploy::lint
