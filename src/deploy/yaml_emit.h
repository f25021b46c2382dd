// YAML emitter for rendered manifests: an ordered JSON tree in, block-style YAML text out. Keys keep
// their insertion order, so output is deterministic; strings that YAML would read as another type (or
// that need escaping) are double-quoted; multi-line strings become literal blocks ("|").
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace k3::deploy {

using Doc = nlohmann::ordered_json;

// Emits one YAML document (no leading "---").
std::string EmitYaml(const Doc& doc);

// True when `text` can be written as a plain (unquoted) YAML scalar and read back as the same string.
bool IsPlainYamlString(const std::string& text);

}  // namespace k3::deploy
