// Built-in knowledge of the kinds k3 renders (K3-SCHEMA-001): required fields, scalar types and enums,
// written from the Kubernetes, LeaderWorkerSet, HyperPod, Gateway API Inference Extension and KServe API
// documentation. Paths use "[]" for "every item of a list".
#include <set>

#include "src/deploy/lint_internal.h"

namespace k3::deploy::lint {
namespace {

enum class Type { kString, kInt, kBool, kMap, kList, kIntOrString };

struct FieldRule {
  const char* path;
  Type type;
  bool required;
  std::vector<const char*> allowed;  // enum ("" = any)
};

const char* TypeName(Type t) {
  switch (t) {
    case Type::kString:
      return "a string";
    case Type::kInt:
      return "an integer";
    case Type::kBool:
      return "true or false";
    case Type::kMap:
      return "a mapping";
    case Type::kList:
      return "a list";
    default:
      return "an integer or a string";
  }
}

const std::vector<FieldRule> kContainer = {{"name", Type::kString, true, {}},
                                           {"image", Type::kString, true, {}},
                                           {"command", Type::kList, false, {}},
                                           {"args", Type::kList, false, {}},
                                           {"env", Type::kList, false, {}},
                                           {"env[].name", Type::kString, true, {}},
                                           {"env[].value", Type::kString, false, {}},
                                           {"ports[].containerPort", Type::kInt, true, {}},
                                           {"volumeMounts[].name", Type::kString, true, {}},
                                           {"volumeMounts[].mountPath", Type::kString, true, {}}};

const std::map<std::string, std::vector<FieldRule>>& KindRules() {
  static const std::map<std::string, std::vector<FieldRule>> kRules = {
      {"LeaderWorkerSet",
       {{"spec", Type::kMap, true, {}},
        {"spec.replicas", Type::kInt, false, {}},
        {"spec.leaderWorkerTemplate", Type::kMap, true, {}},
        {"spec.leaderWorkerTemplate.size", Type::kInt, false, {}},
        {"spec.leaderWorkerTemplate.restartPolicy",
         Type::kString,
         false,
         {"Default", "RecreateGroupOnPodRestart", "RecreateGroupAfterStart", "None"}},
        {"spec.leaderWorkerTemplate.workerTemplate", Type::kMap, true, {}},
        {"spec.leaderWorkerTemplate.workerTemplate.spec.containers", Type::kList, true, {}},
        {"spec.startupPolicy", Type::kString, false, {"LeaderCreated", "LeaderReady"}}}},
      {"InferenceEndpointConfig",
       {{"spec", Type::kMap, true, {}},
        {"spec.modelName", Type::kString, true, {}},
        {"spec.instanceType", Type::kString, false, {}},
        {"spec.replicas", Type::kInt, false, {}},
        {"spec.modelSourceConfig", Type::kMap, true, {}},
        {"spec.modelSourceConfig.modelSourceType",
         Type::kString,
         true,
         {"fsx", "s3", "huggingface", "kubernetesVolume"}},
        {"spec.worker", Type::kMap, true, {}},
        {"spec.worker.image", Type::kString, true, {}},
        {"spec.worker.modelInvocationPort", Type::kMap, true, {}},
        {"spec.worker.modelInvocationPort.containerPort", Type::kInt, true, {}},
        {"spec.worker.modelVolumeMount", Type::kMap, true, {}},
        {"spec.worker.modelVolumeMount.name", Type::kString, true, {}},
        {"spec.worker.resources", Type::kMap, true, {}},
        {"spec.worker.args", Type::kList, false, {}},
        {"spec.worker.environmentVariables[].name", Type::kString, true, {}}}},
      {"Deployment",
       {{"spec", Type::kMap, true, {}},
        {"spec.replicas", Type::kInt, false, {}},
        {"spec.selector", Type::kMap, true, {}},
        {"spec.template", Type::kMap, true, {}},
        {"spec.template.spec.containers", Type::kList, true, {}},
        {"spec.strategy.type", Type::kString, false, {"Recreate", "RollingUpdate"}}}},
      {"Service",
       {{"spec", Type::kMap, true, {}},
        {"spec.type", Type::kString, false, {"ClusterIP", "NodePort", "LoadBalancer", "ExternalName"}},
        {"spec.selector", Type::kMap, false, {}},
        {"spec.ports", Type::kList, false, {}},
        {"spec.ports[].port", Type::kInt, true, {}},
        {"spec.ports[].targetPort", Type::kIntOrString, false, {}}}},
      {"PersistentVolumeClaim",
       {{"spec", Type::kMap, true, {}},
        {"spec.accessModes", Type::kList, false, {}},
        {"spec.resources.requests.storage", Type::kString, false, {}}}},
      {"Job", {{"spec", Type::kMap, true, {}}, {"spec.template.spec.containers", Type::kList, true, {}}}},
      {"InferencePool",
       {{"spec", Type::kMap, true, {}},
        {"spec.selector", Type::kMap, true, {}},
        {"spec.selector.matchLabels", Type::kMap, true, {}},
        {"spec.targetPorts", Type::kList, true, {}},
        {"spec.targetPorts[].number", Type::kInt, true, {}},
        {"spec.endpointPickerRef.name", Type::kString, false, {}}}},
      {"InferenceService",
       {{"spec", Type::kMap, true, {}},
        {"spec.predictor", Type::kMap, true, {}},
        {"spec.predictor.workerSpec.tensorParallelSize", Type::kInt, false, {}},
        {"spec.predictor.workerSpec.pipelineParallelSize", Type::kInt, false, {}}}},
  };
  return kRules;
}

bool HasType(const YamlNode& node, Type type) {
  switch (type) {
    case Type::kString:
      return node.IsScalar() && (node.quoted || (!node.IsInteger() && !node.IsBool()));
    case Type::kInt:
      return node.IsInteger();
    case Type::kBool:
      return node.IsBool();
    case Type::kMap:
      return node.IsMap();
    case Type::kList:
      return node.IsSeq();
    default:
      return node.IsScalar();
  }
}

// Applies one rule below `node`, following "a.b[].c" through maps and every list item.
void Apply(const YamlNode& node, const std::string& path, const std::string& shown, const FieldRule& rule,
           const YamlDocument& doc, Sink& sink) {
  const size_t dot = path.find('.');
  const std::string head = path.substr(0, dot);
  const bool each = head.size() > 2 && head.compare(head.size() - 2, 2, "[]") == 0;
  const std::string key = each ? head.substr(0, head.size() - 2) : head;
  const YamlNode* child = node.Get(key);
  const std::string here = shown.empty() ? key : shown + "." + key;
  if (child == nullptr || child->kind == YamlNode::Kind::kNull) {
    if (rule.required && dot == std::string::npos && !each) {
      sink.Add(doc.file, node.line, "K3-SCHEMA-001", here + " is required", "add " + here);
    }
    return;
  }
  if (each) {
    if (!child->IsSeq()) return;
    for (size_t i = 0; i < child->seq.size(); ++i) {
      const std::string item = here + "[" + std::to_string(i) + "]";
      if (dot == std::string::npos) continue;
      Apply(child->seq[i], path.substr(dot + 1), item, rule, doc, sink);
    }
    return;
  }
  if (dot != std::string::npos) {
    if (child->IsMap()) Apply(*child, path.substr(dot + 1), here, rule, doc, sink);
    return;
  }
  if (!HasType(*child, rule.type)) {
    sink.Add(doc.file, child->line, "K3-SCHEMA-001", here + " must be " + TypeName(rule.type),
             std::string("write ") + here + " as " + TypeName(rule.type));
    return;
  }
  if (!rule.allowed.empty()) {
    std::string list;
    for (const char* a : rule.allowed) {
      if (child->Text() == a) return;
      list += (list.empty() ? "" : ", ") + std::string(a);
    }
    sink.Add(doc.file, child->line, "K3-SCHEMA-001", here + " '" + child->Text() + "' is not one of " + list,
             "use one of " + list);
  }
}

void ApplyAll(const YamlNode& node, const std::vector<FieldRule>& rules, const YamlDocument& doc,
              Sink& sink) {
  for (const FieldRule& r : rules) Apply(node, r.path, "", r, doc, sink);
}

void CheckContainers(const YamlNode* containers, const YamlDocument& doc, Sink& sink) {
  if (containers == nullptr || !containers->IsSeq()) return;
  for (const YamlNode& c : containers->seq) {
    if (!c.IsMap()) {
      sink.Add(doc.file, c.line, "K3-SCHEMA-001", "a container must be a mapping",
               "write name/image/... keys");
      continue;
    }
    ApplyAll(c, kContainer, doc, sink);
  }
}

}  // namespace

void CheckKnownKind(const YamlDocument& doc, Sink& sink) {
  const YamlNode& root = doc.root;
  if (!root.IsMap()) {
    sink.Add(doc.file, root.line, "K3-SCHEMA-001", "a manifest document must be a mapping",
             "write apiVersion/kind/...");
    return;
  }
  if (root.Get("apiVersion") == nullptr) return;  // not a Kubernetes object (PAI-EAS JSON, Azure ML YAML)
  ApplyAll(root,
           {{"apiVersion", Type::kString, true, {}},
            {"kind", Type::kString, true, {}},
            {"metadata", Type::kMap, true, {}},
            {"metadata.name", Type::kString, true, {}}},
           doc, sink);
  const YamlNode* kind = root.Get("kind");
  if (kind == nullptr) return;
  auto it = KindRules().find(kind->Text());
  if (it == KindRules().end()) return;
  ApplyAll(root, it->second, doc, sink);
  for (const char* path :
       {"spec.template.spec.containers", "spec.leaderWorkerTemplate.leaderTemplate.spec.containers",
        "spec.leaderWorkerTemplate.workerTemplate.spec.containers", "spec.predictor.containers"}) {
    CheckContainers(root.Path(path), doc, sink);
  }
}

}  // namespace k3::deploy::lint
