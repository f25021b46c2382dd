// k3 run: one prompt (token ids) through the engine from the command line, for debugging and goldens.
//   k3 run [--model DIR] --prompt-ids 1,2,3 [--max-new N] [--threads N]
// Prints, for every prompt position and every generated step, the token fed and the top-5 next tokens
// with their logits, then the greedy continuation. Without --model, the embedded tiny-k3 is used.
#include <charconv>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "apps/k3/commands.h"
#include "apps/k3/embedded_model.h"
#include "src/base/thread_pool.h"
#include "src/model/greedy.h"
#include "src/model/model.h"

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

}  // namespace

void RegisterRunCommand(CLI::App& app) {
  struct Flags {
    std::string model_dir;
    std::string prompt_ids;
    int64_t max_new = 8;
    int threads = 0;
  };
  auto flags = std::make_shared<Flags>();
  CLI::App* cmd =
      app.add_subcommand("run", "Run one prompt (token ids) and print top-5 logits and greedy ids");
  cmd->add_option("--model", flags->model_dir, "checkpoint directory (default: the embedded tiny-k3)");
  cmd->add_option("--prompt-ids", flags->prompt_ids, "comma-separated token ids")->required();
  cmd->add_option("--max-new", flags->max_new, "greedy tokens to generate")->capture_default_str();
  cmd->add_option("--threads", flags->threads, "worker threads (0: all cores)")->capture_default_str();
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
    ThreadPool pool(static_cast<size_t>(flags->threads));
    auto model = model::Model::Load(dir, &pool);
    if (!model.ok()) return FailCommand("run", model.status().ToString());
    const int64_t prompt_len = static_cast<int64_t>(prompt->size());
    auto generated = model::GreedyGenerate(
        **model, *prompt, flags->max_new, [&](int64_t pos, int32_t token, std::span<const float> logits) {
          const char* kind = pos < prompt_len ? "pos" : "step";
          std::printf("%s %lld token %d: %s\n", kind, static_cast<long long>(pos), token,
                      FormatTop(logits).c_str());
        });
    if (!generated.ok()) return FailCommand("run", generated.status().message(), 2);
    std::string ids;
    for (int32_t id : *generated) ids += fmt::format("{}{}", ids.empty() ? "" : ",", id);
    std::printf("greedy: %s\n", ids.c_str());
  });
}

}  // namespace k3::app
