// The embedded model and full generated checkpoints: model::GenerateCheckpoint (weights + config.json)
// plus tokenizer files trained on the compiled-in corpus, written into a staging directory and moved
// into place, so neither `k3 gen-model` nor the first `k3 run` ever leaves half a model behind.
#include "apps/k3/embedded_model.h"

#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <system_error>
#include <vector>

#include <fmt/format.h>

#include "src/base/file.h"
#include "src/io/model_config.h"
#include "src/model/generator.h"
#include "src/model/staged_directory.h"
#include "src/tokenizer/bpe_trainer.h"

namespace k3::app {
namespace {

namespace fs = std::filesystem;

constexpr char kEmbeddedPreset[] = "tiny-k3";
constexpr uint64_t kEmbeddedSeed = 0;
constexpr int64_t kNumSpecialTokens = 256;

// Weights, config and tokenizer files of `preset` into the existing, empty directory `dir`.
Status WriteFullCheckpoint(const std::string& preset, uint64_t seed, const std::string& dir) {
  K3_ASSIGN_OR_RETURN(io::ModelConfig config, model::GeneratorPresetConfig(preset));
  K3_RETURN_IF_ERROR(model::GenerateCheckpoint(preset, seed, dir));
  const size_t num_ranks = static_cast<size_t>(config.vocab_size - kNumSpecialTokens);
  const std::vector<std::string> ranks = tokenizer::TrainByteLevelBpe(tokenizer::EmbeddedCorpus(), num_ranks);
  if (ranks.size() != num_ranks) {
    return Internal("preset {}: the embedded corpus yields only {} BPE ranks, the vocabulary needs {}",
                    preset, ranks.size(), num_ranks);
  }
  return tokenizer::WriteTokenizerFiles(dir, ranks);
}

// True when `dir` holds what a finished GenerateFullCheckpoint leaves.
bool LooksComplete(const fs::path& dir) {
  std::error_code ec;
  for (const char* file :
       {"config.json", "model.safetensors.index.json", "tiktoken.model", "tokenizer_config.json"}) {
    if (!fs::is_regular_file(dir / file, ec)) return false;
  }
  return true;
}

}  // namespace

Status GenerateFullCheckpoint(const std::string& preset, uint64_t seed, const std::string& out_dir) {
  K3_ASSIGN_OR_RETURN(std::string staged, model::MakeStagingDirectory(out_dir));
  Status status = WriteFullCheckpoint(preset, seed, staged);
  if (status.ok()) status = model::PublishStagedDirectory(staged, out_dir);
  if (!status.ok()) model::RemoveStagingDirectory(staged);
  return status;
}

Result<std::string> EnsureEmbeddedModel() {
  const fs::path dir = fs::path(UserCacheDir()) /
                       fmt::format("{}-s{}-v{}", kEmbeddedPreset, kEmbeddedSeed, model::kGeneratorVersion);
  if (LooksComplete(dir)) return dir.string();
  std::error_code ec;
  if (fs::exists(dir, ec)) {
    return DataLoss(
        "the embedded model directory {} is incomplete (it was not written by k3); delete it and retry",
        dir.string());
  }
  K3_ASSIGN_OR_RETURN(std::string staged, model::MakeStagingDirectory(dir.string()));
  Status status = WriteFullCheckpoint(kEmbeddedPreset, kEmbeddedSeed, staged);
  if (!status.ok()) {
    model::RemoveStagingDirectory(staged);
    return status.WithPrefix("generating the embedded model");
  }
  // Plain rename: if another process finished first, its (identical) directory wins and ours is dropped.
  fs::rename(staged, dir, ec);
  if (ec) {
    model::RemoveStagingDirectory(staged);
    if (LooksComplete(dir)) return dir.string();
    return IoError("cannot move {} to {}: {}", staged, dir.string(), ec.message());
  }
  return dir.string();
}

}  // namespace k3::app
