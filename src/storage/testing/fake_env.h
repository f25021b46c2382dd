// FakeEnv: a made-up environment (EnvLookup over a map) for tests of credential and endpoint resolution.
// Header-only, so tests that link only k3_storage can use it.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "src/storage/environment.h"

namespace k3::storage::testing {

inline EnvLookup FakeEnv(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

}  // namespace k3::storage::testing
