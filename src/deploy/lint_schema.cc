// --schema-dir: validates custom resources against CustomResourceDefinition files the user provides
// (every served version's openAPIV3Schema), with valijson. Errors point at the offending field's line.
#include <algorithm>
#include <filesystem>
#include <map>

#include <valijson/adapters/nlohmann_json_adapter.hpp>
#include <valijson/schema.hpp>
#include <valijson/schema_parser.hpp>
#include <valijson/validation_results.hpp>
#include <valijson/validator.hpp>

#include "src/base/file.h"
#include "src/deploy/lint_internal.h"

namespace k3::deploy::lint {
namespace {

struct LoadedSchema {
  std::string file;
  std::unique_ptr<nlohmann::json> json;  // valijson keeps pointers into it
  std::unique_ptr<valijson::Schema> schema;
};

// Follows valijson's context ("<root>", "[spec]", "[0]") to the YAML node's line.
int LineOf(const YamlNode& root, const std::vector<std::string>& context) {
  const YamlNode* node = &root;
  int line = root.line;
  for (const std::string& part : context) {
    if (part.size() < 2 || part.front() != '[' || part.back() != ']') continue;
    std::string key = part.substr(1, part.size() - 2);
    if (!key.empty() && key.front() == '"' && key.back() == '"' && key.size() >= 2)
      key = key.substr(1, key.size() - 2);
    const YamlNode* next = nullptr;
    if (node->IsMap()) {
      next = node->Get(key);
    } else if (node->IsSeq() && !key.empty() && key.size() < 9 &&
               key.find_first_not_of("0123456789") == std::string::npos) {
      const size_t i = std::stoul(key);
      if (i < node->seq.size()) next = &node->seq[i];
    }
    if (next == nullptr) break;
    node = next;
    if (node->line > 0) line = node->line;
  }
  return line;
}

}  // namespace

void MakeStrict(nlohmann::json& schema) {
  if (!schema.is_object()) return;
  const bool preserve = schema.value("x-kubernetes-preserve-unknown-fields", false);
  if (schema.contains("properties") && schema["properties"].is_object()) {
    if (!preserve && !schema.contains("additionalProperties")) schema["additionalProperties"] = false;
    for (auto& [name, property] : schema["properties"].items()) MakeStrict(property);
  }
  for (const char* key : {"items", "additionalProperties"}) {
    if (schema.contains(key)) MakeStrict(schema[key]);
  }
  for (const char* key : {"allOf", "anyOf", "oneOf"}) {
    if (schema.contains(key) && schema[key].is_array()) {
      for (nlohmann::json& s : schema[key]) MakeStrict(s);
    }
  }
}

void CheckAgainstCrds(const std::vector<YamlDocument>& docs, const std::string& schema_dir, Sink& sink) {
  namespace fs = std::filesystem;
  std::map<std::string, LoadedSchema> schemas;  // "group/version/Kind"
  std::error_code ec;
  std::vector<fs::path> files;
  for (const auto& entry : fs::recursive_directory_iterator(schema_dir, ec)) {
    const std::string ext = entry.path().extension().string();
    if (entry.is_regular_file(ec) && (ext == ".yaml" || ext == ".yml" || ext == ".json"))
      files.push_back(entry.path());
  }
  if (ec) {
    sink.Add(schema_dir, 0, "K3-CRD-001", "cannot read --schema-dir: " + ec.message(),
             "pass a directory of CRD files");
    return;
  }
  std::sort(files.begin(), files.end());
  for (const fs::path& path : files) {
    auto text = ReadFileToString(path.string());
    if (!text.ok()) continue;
    auto crd_docs = ParseYamlDocuments(*text, path.string());
    if (!crd_docs.ok()) {
      sink.Add(path.string(), 0, "K3-CRD-001", crd_docs.status().message(), "fix or remove the CRD file");
      continue;
    }
    for (const YamlDocument& d : *crd_docs) {
      if (d.root.Get("kind") == nullptr || d.root.Get("kind")->Text() != "CustomResourceDefinition") continue;
      const nlohmann::json crd = YamlToJson(d.root);
      const nlohmann::json& spec = crd.value("spec", nlohmann::json::object());
      if (!spec.is_object() || !spec.contains("versions") || !spec["versions"].is_array()) continue;
      const std::string group = spec.value("group", "");
      const std::string kind =
          spec.contains("names") && spec["names"].is_object() ? spec["names"].value("kind", "") : "";
      for (const nlohmann::json& v : spec["versions"]) {
        if (!v.is_object() || !v.contains("schema") || !v["schema"].is_object() ||
            !v["schema"].contains("openAPIV3Schema")) {
          continue;
        }
        LoadedSchema loaded;
        loaded.file = path.string();
        loaded.json = std::make_unique<nlohmann::json>(v["schema"]["openAPIV3Schema"]);
        MakeStrict(*loaded.json);
        loaded.schema = std::make_unique<valijson::Schema>();
        try {
          valijson::SchemaParser parser;
          valijson::adapters::NlohmannJsonAdapter adapter(*loaded.json);
          parser.populateSchema(adapter, *loaded.schema);
        } catch (const std::exception& e) {
          sink.Add(path.string(), d.line, "K3-CRD-001", std::string("unusable schema: ") + e.what(),
                   "fix the CRD's openAPIV3Schema");
          continue;
        }
        schemas[group + "/" + v.value("name", "") + "/" + kind] = std::move(loaded);
      }
    }
  }
  for (const YamlDocument& doc : docs) {
    const YamlNode* api = doc.root.Get("apiVersion");
    const YamlNode* kind = doc.root.Get("kind");
    if (api == nullptr || kind == nullptr) continue;
    auto it = schemas.find(api->Text() + "/" + kind->Text());
    if (it == schemas.end()) continue;
    const nlohmann::json object = YamlToJson(doc.root);
    valijson::Validator validator;
    valijson::ValidationResults results;
    valijson::adapters::NlohmannJsonAdapter target(object);
    if (validator.validate(*it->second.schema, target, &results)) continue;
    // valijson reports every enclosing property too; keep the innermost errors only.
    std::vector<valijson::ValidationResults::Error> errors;
    valijson::ValidationResults::Error error;
    while (results.popError(error)) errors.push_back(error);
    auto is_prefix = [](const std::vector<std::string>& a, const std::vector<std::string>& b) {
      return a.size() < b.size() && std::equal(a.begin(), a.end(), b.begin());
    };
    int reported = 0;
    for (const auto& e : errors) {
      const bool enclosing = std::any_of(errors.begin(), errors.end(), [&](const auto& other) {
        return is_prefix(e.context, other.context);
      });
      if (enclosing || reported >= 20) continue;
      std::string where;
      for (const std::string& c : e.context) where += c;
      sink.Add(doc.file, LineOf(doc.root, e.context), "K3-CRD-001",
               where + ": " + e.description + " (" + fs::path(it->second.file).filename().string() + ")",
               "make the field match the CRD schema");
      ++reported;
    }
  }
}

}  // namespace k3::deploy::lint
