// k3 gen-model: writes a deterministic random-weight checkpoint of a preset (weights, config.json and
// tokenizer files) into a directory. Flags -> app::GenerateFullCheckpoint; prints what it wrote.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <system_error>

#include <fmt/format.h>

#include "apps/k3/commands.h"
#include "apps/k3/embedded_model.h"
#include "src/model/generator.h"
#include "src/model/tensors.h"

namespace k3::app {
namespace {

namespace fs = std::filesystem;

std::string HumanCount(double value, const char* const* units, double step) {
  int unit = 0;
  while (value >= step && units[unit + 1] != nullptr) {
    value /= step;
    ++unit;
  }
  return fmt::format("{:.2f} {}", value, units[unit]);
}

std::string HumanBytes(uint64_t bytes) {
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", nullptr};
  return HumanCount(static_cast<double>(bytes), kUnits, 1024.0);
}

std::string HumanParameters(int64_t count) {
  static const char* const kUnits[] = {"", "K", "M", "B", "T", nullptr};
  return HumanCount(static_cast<double>(count), kUnits, 1000.0);
}

}  // namespace

void RegisterGenModelCommand(CLI::App& app) {
  struct Flags {
    std::string preset;
    uint64_t seed = 0;
    std::string out;
    bool force = false;
  };
  auto flags = std::make_shared<Flags>();
  std::string presets;
  for (const std::string& name : model::GeneratorPresetNames())
    presets += (presets.empty() ? "" : " | ") + name;
  CLI::App* cmd = app.add_subcommand(
      "gen-model", "Write a deterministic random-weight checkpoint (weights, config, tokenizer) of a preset");
  cmd->add_option("--preset", flags->preset, presets)->required();
  cmd->add_option("--seed", flags->seed, "random seed (same preset and seed: identical files)")
      ->capture_default_str();
  cmd->add_option("--out", flags->out, "output directory (created if missing)")->required();
  cmd->add_flag("--force", flags->force, "replace the checkpoint in a non-empty output directory");
  cmd->callback([flags] {
    auto config = model::GeneratorPresetConfig(flags->preset);
    if (!config.ok()) return FailCommand("gen-model", config.status().message(), 2);
    std::error_code ec;
    if (fs::exists(flags->out, ec)) {
      if (!fs::is_directory(flags->out, ec)) {
        return FailCommand("gen-model", fmt::format("{} exists and is not a directory", flags->out), 2);
      }
      if (!fs::is_empty(flags->out, ec) && !flags->force) {
        return FailCommand(
            "gen-model",
            fmt::format("{} is not empty; pass --force to replace the checkpoint in it", flags->out), 2);
      }
    }
    const auto start = std::chrono::steady_clock::now();
    Status status = GenerateFullCheckpoint(flags->preset, flags->seed, flags->out);
    if (!status.ok()) return FailCommand("gen-model", status.ToString());
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

    uint64_t bytes = 0;
    int files = 0;
    for (const fs::directory_entry& entry : fs::directory_iterator(flags->out, ec)) {
      if (!entry.is_regular_file(ec)) continue;
      bytes += entry.file_size(ec);
      ++files;
    }
    const model::ParameterCount params = model::CountParameters(*config);
    std::printf("preset      %s (seed %llu)\n", flags->preset.c_str(),
                static_cast<unsigned long long>(flags->seed));
    std::printf("parameters  %s total, %s routed experts, %s active per token\n",
                HumanParameters(params.total).c_str(), HumanParameters(params.routed_experts).c_str(),
                HumanParameters(params.active_per_token).c_str());
    std::printf("written     %s (%llu bytes) in %d files to %s\n", HumanBytes(bytes).c_str(),
                static_cast<unsigned long long>(bytes), files, flags->out.c_str());
    std::printf("time        %.2f s\n", seconds);
  });
}

}  // namespace k3::app
