// k3 run: one prompt (token ids) through the engine from the command line, for debugging and goldens.
//   k3 run [--model DIR | s3://bucket/prefix | az://account/container/prefix] --prompt-ids 1,2,3 [--max-new
//   N] [--threads N]
//          [--dump-logits FILE.npy] [--dump-hidden DIR]
//          [--tensor-parallel-size T [--enable-expert-parallel] ...]
// Prints, for every prompt position and every generated step, the token fed and the top-5 next tokens
// with their logits, then the greedy continuation. Without --model, the embedded tiny-k3 is used.
// --dump-logits writes every row (prompt positions, then generated steps) as a float32 .npy [rows, vocab].
// --dump-hidden DIR writes the hidden states of the same rows for layer-by-layer comparison (model.h's
// ForwardOutput says what each is): DIR/layer_00.npy (embeddings) .. layer_LL.npy (after layer LL) and
// DIR/final_norm.npy (after the final norm, what lm_head multiplies), each float32 [rows, hidden_size].
// With the parallelism flags of `k3 serve` the model is split over ranks exactly as the server splits it
// (the node's other ranks are started as child processes), so logits can be compared from the command
// line.
#include <charconv>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "apps/k3/commands.h"
#include "apps/k3/embedded_model.h"
#include "apps/k3/s3_flags.h"
#include "apps/k3/version.h"
#include "src/base/thread_pool.h"
#include "src/io/npy.h"
#include "src/model/greedy.h"
#include "src/model/load_for_rank.h"
#include "src/model/model.h"
#include "src/model/rank_group.h"
#include "src/storage/open_store.h"

namespace k3::app {
namespace {

// "1,2,3" -> ids; every item a decimal integer in [0, 2^31).
Result<std::vector<int32_t>> ParsePromptIds(const std::string& text) {
  std::vector<int32_t> ids;
  size_t begin = 0;
  while (begin <= text.size()) {
    size_t end = text.find(',', begin);
    if (end == std::string::npos) end = text.size();
    const std::string item = text.substr(begin, end - begin);
    int32_t id = 0;
    auto [ptr, ec] = std::from_chars(item.data(), item.data() + item.size(), id);
    if (item.empty() || ec != std::errc() || ptr != item.data() + item.size() || id < 0) {
      return InvalidArgument(
          "--prompt-ids: '{}' is not a token id (expected comma-separated integers >= 0, "
          "e.g. 1008,10484,318)",
          item);
    }
    ids.push_back(id);
    begin = end + 1;
  }
  return ids;
}

std::string FormatTop(std::span<const float> logits) {
  std::string out;
  for (const auto& [id, logit] : model::TopLogits(logits, 5)) {
    out += fmt::format("{}{}:{:.5f}", out.empty() ? "" : "  ", id, logit);
  }
  return out;
}

// DIR/layer_LL.npy for each layer's rows and DIR/final_norm.npy, each [rows, hidden].
Status WriteHiddenStates(const std::string& dir, const std::vector<std::vector<float>>& layers,
                         const std::vector<float>& final_rows, int64_t hidden) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return IoError("--dump-hidden {}: cannot create the directory: {}", dir, ec.message());
  for (size_t l = 0; l < layers.size(); ++l) {
    const std::string path = fmt::format("{}/layer_{:02d}.npy", dir, l);
    K3_RETURN_IF_ERROR(io::WriteNpyFloat32(path, layers[l].data(),
                                           {static_cast<int64_t>(layers[l].size()) / hidden, hidden}));
  }
  return io::WriteNpyFloat32(dir + "/final_norm.npy", final_rows.data(),
                             {static_cast<int64_t>(final_rows.size()) / hidden, hidden});
}

}  // namespace

void RegisterRunCommand(CLI::App& app) {
  struct Flags {
    std::string model_dir;
    std::string prompt_ids;
    int64_t max_new = 8;
    int threads = 0;
    std::string dump_logits;
    std::string dump_hidden;
    dist::GroupFlags group;
    S3Flags s3;
  };
  auto flags = std::make_shared<Flags>();
  CLI::App* cmd =
      app.add_subcommand("run", "Run one prompt (token ids) and print top-5 logits and greedy ids");
  cmd->add_option("--model", flags->model_dir,
                  "checkpoint directory, s3://bucket/prefix or az://account/container/prefix (default: the "
                  "embedded tiny-k3)");
  flags->s3.Add(cmd);
  cmd->add_option("--prompt-ids", flags->prompt_ids, "comma-separated token ids")->required();
  cmd->add_option("--max-new", flags->max_new, "greedy tokens to generate")->capture_default_str();
  cmd->add_option("--threads", flags->threads, "worker threads (0: all cores)")->capture_default_str();
  cmd->add_option("--dump-logits", flags->dump_logits,
                  "write every row's logits (prompt positions, then steps) as float32 .npy [rows, vocab]");
  cmd->add_option("--dump-hidden", flags->dump_hidden,
                  "write every row's hidden states to DIR: layer_00.npy (embeddings) .. layer_LL.npy, "
                  "final_norm.npy, float32 [rows, hidden]");
  AddGroupFlags(cmd, &flags->group, "Distributed (as k3 serve)");
  cmd->callback([flags] {
    auto prompt = ParsePromptIds(flags->prompt_ids);
    if (!prompt.ok()) return FailCommand("run", prompt.status().message(), 2);
    if (flags->max_new < 0) return FailCommand("run", "--max-new must be >= 0", 2);
    if (flags->threads < 0) return FailCommand("run", "--threads must be >= 0", 2);
    std::string dir = flags->model_dir;
    if (dir.empty()) {
      auto embedded = EnsureEmbeddedModel();
      if (!embedded.ok()) return FailCommand("run", embedded.status().ToString());
      dir = *embedded;
    }
    auto group = ResolveGroupFromFlags(flags->group);
    if (!group.ok()) return FailCommand("run", group.status().message(), 2);
    // A bucket (s3://..., az://...): read into memory and checked as a local directory would be; with
    // several ranks each reads its own part (--enable-expert-parallel: only its experts).
    std::optional<storage::ObjectUri> remote;
    if (dir.find("://") != std::string::npos) {
      auto uri = storage::ParseObjectUri(dir);
      if (!uri.ok()) return FailCommand("run", fmt::format("--model {}: {}", dir, uri.status().message()), 2);
      if (uri->scheme != storage::UriScheme::kFile) remote = *uri;
    }
    const int threads = group->world > 1 ? DefaultThreadsPerRank(*group, flags->threads) : flags->threads;
    auto local_ranks = StartLocalRanks(*group, "run");
    if (!local_ranks.ok()) return FailCommand("run", local_ranks.status().ToString());
    ThreadPool pool(static_cast<size_t>(threads));
    model::RankLoadOptions load;
    load.version = K3_VERSION_STRING;
    if (remote) load.store.s3 = flags->s3.Options(storage::ProcessEnvironment());
    auto loaded = model::LoadForRank(dir, *group, &pool, std::move(load));
    if (!loaded.ok()) return FailCommand("run", loaded.status().ToString(), group->world > 1 ? 3 : 1);
    model::GroupMember* member = &loaded->member;
    if (*local_ranks != nullptr) (*local_ranks)->ExpectExit();
    if (!group->serves_http()) {  // ranks > 0 follow rank 0's steps
      Status done = model::RunWorker(*member->model, *member->comm);
      if (!done.ok()) return FailCommand("run", fmt::format("rank {}: {}", group->rank, done.ToString()), 3);
      return;
    }
    const int64_t prompt_len = static_cast<int64_t>(prompt->size());
    std::vector<float> rows;
    int64_t num_rows = 0;
    std::vector<std::vector<float>> layer_rows;  // [num_layers + 1][rows * D], then the final norm's
    std::vector<float> final_rows;
    model::ForwardCallback on_forward;
    if (!flags->dump_hidden.empty()) {
      on_forward = [&](const model::ForwardOutput& out) {
        layer_rows.resize(out.layer_hidden.size());
        for (size_t l = 0; l < out.layer_hidden.size(); ++l)
          layer_rows[l].insert(layer_rows[l].end(), out.layer_hidden[l].begin(), out.layer_hidden[l].end());
        final_rows.insert(final_rows.end(), out.final_hidden.begin(), out.final_hidden.end());
      };
    }
    auto generated = model::GreedyGenerate(
        *member->model, *prompt, flags->max_new,
        [&](int64_t pos, int32_t token, std::span<const float> logits) {
          const char* kind = pos < prompt_len ? "pos" : "step";
          std::printf("%s %lld token %d: %s\n", kind, static_cast<long long>(pos), token,
                      FormatTop(logits).c_str());
          if (!flags->dump_logits.empty()) {
            rows.insert(rows.end(), logits.begin(), logits.end());
            ++num_rows;
          }
        },
        on_forward);
    if (member->leader != nullptr) {
      const Status shut = member->leader->Shutdown();
      if (!shut.ok() && generated.ok()) return FailCommand("run", shut.ToString(), 3);
    }
    if (!generated.ok()) return FailCommand("run", generated.status().message(), 2);
    if (!flags->dump_logits.empty()) {
      const int64_t vocab = member->model->config().vocab_size;
      Status written = io::WriteNpyFloat32(flags->dump_logits, rows.data(), {num_rows, vocab});
      if (!written.ok()) return FailCommand("run", written.ToString());
    }
    if (!flags->dump_hidden.empty()) {
      const Status written =
          WriteHiddenStates(flags->dump_hidden, layer_rows, final_rows, member->model->config().hidden_size);
      if (!written.ok()) return FailCommand("run", written.ToString());
    }
    std::string ids;
    for (int32_t id : *generated) ids += fmt::format("{}{}", ids.empty() ? "" : ",", id);
    std::printf("greedy: %s\n", ids.c_str());
  });
}

}  // namespace k3::app
