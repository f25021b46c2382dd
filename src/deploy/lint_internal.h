// Internals of k3 lint shared by its .cc files: the workload view that rules inspect (one entry per pod
// template or managed-endpoint worker, whatever the kind), the finding sink, and the rule entry points.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "src/deploy/lint.h"

namespace k3::deploy::lint {

// One container as the rules see it: the engine command line and its flags, env, mounts, resources, probes.
struct ContainerView {
  const YamlNode* node = nullptr;
  int line = 0;
  std::string name;
  std::string image;
  std::string command_line;  // command + args joined by spaces ("" when none)
  std::map<std::string, std::string> env;
  std::map<std::string, std::string> mounts;  // mountPath -> volume name
  bool gpu_requests_set = false;
  bool gpu_limits_set = false;
  std::string gpu_requests;
  std::string gpu_limits;
  int gpus = 0;
  const YamlNode* startup_probe = nullptr;
  const YamlNode* readiness_probe = nullptr;
  const YamlNode* liveness_probe = nullptr;
};

// A group of pods serving one model replica: a Deployment's pod, an LWS group (leader + workers), a
// HyperPod worker, a KServe predictor, a PAI-EAS service.
struct WorkloadView {
  const YamlDocument* doc = nullptr;
  std::string kind;
  std::string name;
  int line = 0;
  const YamlNode* pod_spec = nullptr;            // leader / only pod spec (nullptr for non-pod kinds)
  std::vector<ContainerView> containers;         // serving containers (leader for LWS)
  std::vector<ContainerView> worker_containers;  // LWS workers
  const YamlNode* worker_pod_spec = nullptr;
  std::map<std::string, std::string>
      volumes_shm;  // leader / only pod: volume name -> sizeLimit of Memory emptyDirs
  std::map<std::string, std::string> worker_volumes_shm;  // LWS worker pod
  std::map<std::string, std::string> node_selector;
  int pods_per_group = 1;   // LWS size
  bool multi_node = false;  // LWS size > 1, KServe workerSpec, Ray / --nnodes in the command
  int replicas = 1;
  bool host_ipc = false;
  std::string instance_type;  // HyperPod instanceType, PAI-EAS instance_type, node selector instance type
  bool managed_model_source = false;  // HyperPod modelSourceConfig: the operator fetches the weights
};

class Sink {
 public:
  explicit Sink(std::vector<Finding>& out) : out_(out) {}
  void Add(const std::string& file, int line, const char* rule, const std::string& message,
           const std::string& fix);

 private:
  std::vector<Finding>& out_;
};

// Builds the workload views of one document (none for kinds that carry no pods).
std::vector<WorkloadView> ExtractWorkloads(const YamlDocument& doc);

// Rules over one workload, and cross-document rules (Service vs LeaderWorkerSet).
void CheckWorkload(const WorkloadView& w, const LintOptions& options, Sink& sink);
void CheckServices(const std::vector<YamlDocument>& docs, Sink& sink);

// Rules across documents and over scripts (lint_files.cc): volumes shared by a writer and the engine,
// ReadWriteOnce with several pods, gateway classes of another platform, download commands, Vertex images,
// parallelism against one instance's GPUs, cleanup scripts.
void CheckVolumes(const std::vector<YamlDocument>& docs, Sink& sink);
void CheckGatewayClasses(const std::vector<YamlDocument>& docs, const LintOptions& options, Sink& sink);
void CheckTextFile(const std::string& text, const std::string& file, Sink& sink);
void CheckShellScript(const std::string& text, const std::string& file, Sink& sink);
void CheckDockerfiles(const std::vector<YamlDocument>& docs,
                      const std::vector<std::pair<std::string, std::string>>& dockerfiles,
                      const LintOptions& options, Sink& sink);

// Dry run 2 rules (lint_groups.cc): K3-GROUP-001 (ranks of one LWS group disagree), K3-SECRET-001
// (secrets in plain env values), K3-ENV-001 (env names the engine never reads); K3-GW-002 (gateway objects
// that match nothing in the same set of files); K3-PH-001 (unfilled <PLACEHOLDER>s).
void CheckGroupAndEnv(const WorkloadView& w, Sink& sink);
void CheckGatewayReferences(const std::vector<YamlDocument>& docs, Sink& sink);
void CheckPlaceholders(const std::string& text, const std::string& file, Sink& sink);

// Built-in knowledge of the kinds k3 renders: required fields, types and enums.
void CheckKnownKind(const YamlDocument& doc, Sink& sink);

// kubectl's strict field validation on a CRD's openAPIV3Schema: every object schema that lists its
// properties and neither sets additionalProperties nor x-kubernetes-preserve-unknown-fields gets
// additionalProperties: false, so an unknown field is an error (as `kubectl apply` reports it).
void MakeStrict(nlohmann::json& schema);

// --schema-dir: validation against user-provided CRD files.
void CheckAgainstCrds(const std::vector<YamlDocument>& docs, const std::string& schema_dir, Sink& sink);

// Flag value in a command line: "--flag V" or "--flag=V"; "" when absent.
std::string FlagValue(const std::string& command_line, const std::string& flag);
bool HasFlag(const std::string& command_line, const std::string& flag);

}  // namespace k3::deploy::lint
