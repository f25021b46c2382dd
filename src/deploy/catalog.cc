// Parses data/catalog/*.json into a Catalog and checks its cross-references (sources, GPUs, instances).
#include "src/deploy/catalog.h"

#include <nlohmann/json.hpp>

#include "src/deploy/catalog_data.h"

namespace k3::deploy {
namespace {

using Json = nlohmann::json;

// Reads typed fields of one JSON object, remembering the first error with its file and path.
class FieldReader {
 public:
  FieldReader(const Json& object, std::string where) : object_(object), where_(std::move(where)) {}

  std::string String(const char* key, bool required = true) {
    const Json* v = Find(key, required);
    if (v == nullptr) return "";
    if (!v->is_string()) return Fail(key, "a string"), "";
    return v->get<std::string>();
  }
  int64_t Int(const char* key, bool required = true) {
    const Json* v = Find(key, required);
    if (v == nullptr) return 0;
    if (!v->is_number_integer()) return Fail(key, "an integer"), 0;
    return v->get<int64_t>();
  }
  double Number(const char* key, bool required = true) {
    const Json* v = Find(key, required);
    if (v == nullptr) return 0;
    if (!v->is_number()) return Fail(key, "a number"), 0;
    return v->get<double>();
  }
  bool Bool(const char* key, bool fallback) {
    const Json* v = Find(key, false);
    if (v == nullptr) return fallback;
    if (!v->is_boolean()) return Fail(key, "true or false"), fallback;
    return v->get<bool>();
  }
  std::vector<std::string> Strings(const char* key, bool required = true) {
    std::vector<std::string> out;
    const Json* v = Find(key, required);
    if (v == nullptr) return out;
    if (!v->is_array()) return Fail(key, "a list of strings"), out;
    for (const Json& item : *v) {
      if (!item.is_string()) return Fail(key, "a list of strings"), out;
      out.push_back(item.get<std::string>());
    }
    return out;
  }
  const Json* Array(const char* key) {
    const Json* v = Find(key, true);
    if (v != nullptr && !v->is_array()) return Fail(key, "a list"), nullptr;
    return v;
  }
  const Json* Object(const char* key, bool required) {
    const Json* v = Find(key, required);
    if (v != nullptr && !v->is_object()) return Fail(key, "an object"), nullptr;
    return v;
  }
  const Status& status() const { return status_; }
  const std::string& where() const { return where_; }

 private:
  const Json* Find(const char* key, bool required) {
    if (!object_.is_object()) {
      if (status_.ok()) status_ = InvalidArgument("{}: expected an object", where_);
      return nullptr;
    }
    auto it = object_.find(key);
    if (it == object_.end()) {
      if (required && status_.ok()) status_ = InvalidArgument("{}.{}: missing (add the field)", where_, key);
      return nullptr;
    }
    return &*it;
  }
  void Fail(const char* key, const char* expected) {
    if (status_.ok()) status_ = InvalidArgument("{}.{}: expected {}", where_, key, expected);
  }
  const Json& object_;
  std::string where_;
  Status status_;
};

Result<Json> ParseFile(const std::map<std::string, std::string>& files, const std::string& name) {
  auto it = files.find(name);
  if (it == files.end()) return NotFound("catalog file {}.json is missing", name);
  Json json = Json::parse(it->second, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) return InvalidArgument("{}.json: not valid JSON", name);
  return json;
}

Status ParseSources(const Json& root, Catalog& catalog) {
  FieldReader top(root, "sources.json");
  const Json* sources = top.Object("sources", true);
  if (sources == nullptr) return top.status();
  for (const auto& [key, value] : sources->items()) {
    FieldReader r(value, "sources.json: sources." + key);
    Source source{key, r.String("title"), r.String("date")};
    K3_RETURN_IF_ERROR(r.status());
    catalog.sources[key] = source;
  }
  return OkStatus();
}

Status ParseGpus(const Json& root, Catalog& catalog) {
  FieldReader top(root, "gpus.json");
  const Json* gpus = top.Array("gpus");
  const Json* fit = top.Object("fit_table", true);
  K3_RETURN_IF_ERROR(top.status());
  for (size_t i = 0; i < gpus->size(); ++i) {
    FieldReader r((*gpus)[i], fmt::format("gpus.json: gpus[{}]", i));
    Gpu gpu{r.String("id"), r.String("name"), r.Number("memory_gb"), r.String("source")};
    K3_RETURN_IF_ERROR(r.status());
    catalog.gpus.push_back(gpu);
  }
  FieldReader f(*fit, "gpus.json: fit_table");
  catalog.fit_table_source = f.String("source");
  catalog.fit_table_gpus_per_node = static_cast<int>(f.Int("gpus_per_node"));
  const Json* rows = f.Array("configurations");
  K3_RETURN_IF_ERROR(f.status());
  for (size_t i = 0; i < rows->size(); ++i) {
    FieldReader r((*rows)[i], fmt::format("gpus.json: fit_table.configurations[{}]", i));
    FitConfiguration row{r.String("gpu"), static_cast<int>(r.Int("count"))};
    K3_RETURN_IF_ERROR(r.status());
    catalog.fit_table.push_back(row);
  }
  return OkStatus();
}

// A CPU host: sockets, NUMA nodes, memory bandwidth with its source or derivation, network.
Status ParseCpuHost(const Json& object, const std::string& where, CpuHost& cpu) {
  FieldReader r(object, where);
  cpu.model = r.String("model");
  cpu.sockets = static_cast<int>(r.Int("sockets"));
  cpu.numa_nodes = static_cast<int>(r.Int("numa_nodes"));
  cpu.memory_bandwidth_gbs_per_socket = r.Number("memory_bandwidth_gbs_per_socket");
  cpu.memory_bandwidth_note = r.String("memory_bandwidth_note");
  cpu.network_gbps = r.Number("network_gbps");
  K3_RETURN_IF_ERROR(r.status());
  if (cpu.sockets < 1 || cpu.numa_nodes < 1 || cpu.memory_bandwidth_gbs_per_socket <= 0 ||
      cpu.network_gbps <= 0) {
    return InvalidArgument(
        "{}: sockets, numa_nodes, memory_bandwidth_gbs_per_socket and network_gbps must be positive", where);
  }
  return OkStatus();
}

Status ParseInstances(const Json& root, Catalog& catalog) {
  FieldReader top(root, "instances.json");
  const Json* list = top.Array("instances");
  K3_RETURN_IF_ERROR(top.status());
  for (size_t i = 0; i < list->size(); ++i) {
    FieldReader r((*list)[i], fmt::format("instances.json: instances[{}]", i));
    Instance in;
    in.id = r.String("id");
    in.cloud = r.String("cloud");
    in.hardware_of = r.String("hardware_of", false);
    in.gpu_count = static_cast<int>(r.Int("gpu_count"));
    in.gpu = r.String("gpu", in.gpu_count > 0);
    in.gpu_memory_gb = r.Number("gpu_memory_gb", in.gpu_count > 0);
    in.cpu_arch = r.String("cpu_arch");
    in.vcpu = static_cast<int>(r.Int("vcpu"));
    in.ram_gib = static_cast<int>(r.Int("ram_gib"));
    in.interconnect = r.String("interconnect");
    in.rack_vms = static_cast<int>(r.Int("rack_vms", false));
    in.gcp_accelerator = r.String("gcp_accelerator", in.cloud == "gcp" && in.gpu_count > 0);
    in.sources = r.Strings("sources");
    in.price_note = r.String("price_note", false);
    const Json* prices = r.Array("prices");
    const Json* cpu = r.Object("cpu", in.gpu_count == 0);
    K3_RETURN_IF_ERROR(r.status());
    if (cpu != nullptr) K3_RETURN_IF_ERROR(ParseCpuHost(*cpu, r.where() + ".cpu", in.cpu));
    for (size_t p = 0; p < prices->size(); ++p) {
      FieldReader pr((*prices)[p], fmt::format("{}.prices[{}]", r.where(), p));
      Price price{pr.Number("usd_per_hour"), pr.String("what"), pr.String("source"), pr.String("date"),
                  pr.Bool("verified", true)};
      K3_RETURN_IF_ERROR(pr.status());
      in.prices.push_back(price);
    }
    if (in.cpu_arch != "amd64" && in.cpu_arch != "arm64") {
      return InvalidArgument("{}.cpu_arch: '{}' is not amd64 or arm64", r.where(), in.cpu_arch);
    }
    if (in.prices.empty() && in.price_note.empty()) {
      return InvalidArgument("{}: no prices and no price_note (say why the price is unknown)", r.where());
    }
    catalog.instances.push_back(in);
  }
  return OkStatus();
}

Status ParseModels(const Json& root, Catalog& catalog) {
  FieldReader top(root, "models.json");
  const Json* list = top.Array("models");
  K3_RETURN_IF_ERROR(top.status());
  for (size_t i = 0; i < list->size(); ++i) {
    FieldReader r((*list)[i], fmt::format("models.json: models[{}]", i));
    ModelSpec m;
    m.id = r.String("id");
    m.hf_id = r.String("hf_id");
    m.served_name = r.String("served_name");
    m.family = r.String("family");
    m.total_params = r.Int("total_params");
    m.active_params = r.Int("active_params");
    m.weight_bytes = r.Int("weight_bytes");
    m.weight_bytes_note = r.String("weight_bytes_note");
    m.weight_format = r.String("weight_format");
    m.max_context = r.Int("max_context", false);
    m.mla_layers = r.Int("mla_layers");
    m.mla_latent_values_per_token = r.Int("mla_latent_values_per_token");
    m.cache_dtype_bytes = r.Int("cache_dtype_bytes");
    m.kda_layers = r.Int("kda_layers");
    m.kda_heads = r.Int("kda_heads");
    m.kda_head_dim = r.Int("kda_head_dim");
    m.kda_conv_kernel = r.Int("kda_conv_kernel");
    m.kda_state_bytes_per_sequence = r.Int("kda_state_bytes_per_sequence");
    m.sources = r.Strings("sources");
    m.hidden_size = r.Int("hidden_size", false);
    m.moe_layers = r.Int("moe_layers", false);
    m.moe_latent_size = r.Int("moe_latent_size", false);
    m.routed_experts = r.Int("routed_experts", false);
    m.experts_per_token = r.Int("experts_per_token", false);
    m.expert_bytes = r.Int("expert_bytes", false);
    m.embedding_bytes = r.Int("embedding_bytes", false);
    const Json* vllm = r.Object("vllm", true);
    K3_RETURN_IF_ERROR(r.status());
    FieldReader v(*vllm, r.where() + ".vllm");
    m.vllm_parsers = v.String("parsers");
    const Json* env = v.Object("env", true);
    K3_RETURN_IF_ERROR(v.status());
    for (const auto& [name, value] : env->items()) {
      if (!value.is_string()) return InvalidArgument("{}.vllm.env.{}: expected a string", r.where(), name);
      m.vllm_env[name] = value.get<std::string>();
    }
    catalog.models.push_back(m);
  }
  return OkStatus();
}

Status ParseTargets(const Json& root, Catalog& catalog) {
  FieldReader top(root, "targets.json");
  const Json* list = top.Array("targets");
  K3_RETURN_IF_ERROR(top.status());
  for (size_t i = 0; i < list->size(); ++i) {
    FieldReader r((*list)[i], fmt::format("targets.json: targets[{}]", i));
    Target t;
    t.id = r.String("id");
    t.cloud = r.String("cloud");
    t.platform = r.String("platform");
    t.default_instance = r.String("default_instance");
    t.instance_prefix = r.String("instance_prefix", false);
    t.one_instance_per_replica = r.Bool("one_instance_per_replica", false);
    t.node_pool_max = static_cast<int>(r.Int("node_pool_max", false));
    t.min_replicas = static_cast<int>(r.Int("min_replicas", false));
    t.capacity = r.Strings("capacity");
    t.cleanup = r.Strings("cleanup");
    t.source = r.String("source");
    K3_RETURN_IF_ERROR(r.status());
    catalog.targets.push_back(t);
  }
  return OkStatus();
}

// Every source key cited exists; every GPU and default instance named exists.
Status CheckReferences(const Catalog& c) {
  auto source_ok = [&](const std::string& key, const std::string& where) -> Status {
    if (c.sources.count(key) == 0)
      return InvalidArgument("{}: source '{}' is not in sources.json", where, key);
    return OkStatus();
  };
  for (const Gpu& g : c.gpus) K3_RETURN_IF_ERROR(source_ok(g.source, "gpus.json: " + g.id));
  for (const Instance& in : c.instances) {
    if (in.gpu_count > 0 && c.FindGpu(in.gpu) == nullptr)
      return InvalidArgument("instances.json: {}: unknown gpu '{}'", in.id, in.gpu);
    for (const auto& s : in.sources) K3_RETURN_IF_ERROR(source_ok(s, "instances.json: " + in.id));
    for (const Price& p : in.prices)
      K3_RETURN_IF_ERROR(source_ok(p.source, "instances.json: " + in.id + " price"));
  }
  for (const ModelSpec& m : c.models) {
    for (const auto& s : m.sources) K3_RETURN_IF_ERROR(source_ok(s, "models.json: " + m.id));
  }
  for (const Target& t : c.targets) {
    if (c.FindInstance(t.default_instance) == nullptr) {
      return InvalidArgument("targets.json: {}: default_instance '{}' is not in instances.json", t.id,
                             t.default_instance);
    }
    K3_RETURN_IF_ERROR(source_ok(t.source, "targets.json: " + t.id));
  }
  for (const FitConfiguration& row : c.fit_table) {
    if (c.FindGpu(row.gpu) == nullptr)
      return InvalidArgument("gpus.json: fit_table: unknown gpu '{}'", row.gpu);
  }
  return source_ok(c.fit_table_source, "gpus.json: fit_table");
}

template <typename T>
const T* FindById(const std::vector<T>& items, std::string_view id) {
  for (const T& item : items) {
    if (item.id == id) return &item;
  }
  return nullptr;
}

template <typename T>
std::string JoinIds(const std::vector<T>& items) {
  std::string out;
  for (const T& item : items) out += (out.empty() ? "" : ", ") + item.id;
  return out;
}

}  // namespace

const ModelSpec* Catalog::FindModel(std::string_view id) const { return FindById(models, id); }
const Gpu* Catalog::FindGpu(std::string_view id) const { return FindById(gpus, id); }
const Instance* Catalog::FindInstance(std::string_view id) const { return FindById(instances, id); }
const Target* Catalog::FindTarget(std::string_view id) const { return FindById(targets, id); }
std::string Catalog::TargetIds() const { return JoinIds(targets); }
std::string Catalog::ModelIds() const { return JoinIds(models); }
std::string Catalog::InstanceIds() const { return JoinIds(instances); }

std::string Catalog::InstancesByCloud() const {
  std::map<std::string, std::string> by_cloud;
  for (const Instance& in : instances) {
    std::string& list = by_cloud[in.cloud];
    list += (list.empty() ? "" : ", ") + in.id + (in.CpuOnly() ? " (CPU)" : "");
  }
  std::string out;
  for (const auto& [cloud, list] : by_cloud) out += (out.empty() ? "" : "; ") + cloud + ": " + list;
  return out;
}

Result<Catalog> ParseCatalog(const std::map<std::string, std::string>& files) {
  Catalog catalog;
  K3_ASSIGN_OR_RETURN(Json sources, ParseFile(files, "sources"));
  K3_RETURN_IF_ERROR(ParseSources(sources, catalog));
  K3_ASSIGN_OR_RETURN(Json gpus, ParseFile(files, "gpus"));
  K3_RETURN_IF_ERROR(ParseGpus(gpus, catalog));
  K3_ASSIGN_OR_RETURN(Json instances, ParseFile(files, "instances"));
  K3_RETURN_IF_ERROR(ParseInstances(instances, catalog));
  K3_ASSIGN_OR_RETURN(Json models, ParseFile(files, "models"));
  K3_RETURN_IF_ERROR(ParseModels(models, catalog));
  K3_ASSIGN_OR_RETURN(Json targets, ParseFile(files, "targets"));
  K3_RETURN_IF_ERROR(ParseTargets(targets, catalog));
  K3_RETURN_IF_ERROR(CheckReferences(catalog));
  return catalog;
}

const Result<Catalog>& EmbeddedCatalog() {
  static const Result<Catalog> catalog = [] {
    std::map<std::string, std::string> files;
    for (const char* name : {"sources", "gpus", "instances", "models", "targets"}) {
      files[name] = std::string(EmbeddedCatalogFile(name));
    }
    Result<Catalog> parsed = ParseCatalog(files);
    if (!parsed.ok()) return Result<Catalog>(parsed.status().WithPrefix("embedded catalog (data/catalog)"));
    return parsed;
  }();
  return catalog;
}

}  // namespace k3::deploy
