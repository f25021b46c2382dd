// Environment lookups behind a function, so credential and endpoint resolution can be tested with a
// made-up environment instead of the process's.
#pragma once

#include <functional>
#include <optional>
#include <string>

namespace k3::storage {

// Returns the variable's value, or nullopt when unset. An empty value counts as unset.
using EnvLookup = std::function<std::optional<std::string>(const std::string& name)>;

// The process environment (getenv).
EnvLookup ProcessEnvironment();

}  // namespace k3::storage
