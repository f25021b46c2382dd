// k3 tokenize: text (or a JSON string) in, token ids and readable tokens out; --decode for the reverse.
// Flags -> tokenizer::LoadOrTrainTokenizer / Encode / FormatTokenReport; no logic here.
#include <cstdio>
#include <iostream>
#include <iterator>
#include <memory>
#include <string>

#include "apps/k3/commands.h"
#include "src/tokenizer/token_report.h"

namespace k3::app {

void RegisterTokenizeCommand(CLI::App& app) {
  struct Flags {
    std::string text;
    std::string model;
    size_t ranks = 256 + 512;
    bool json_input = false;
    bool allow_special = false;
    bool decode = false;
    std::string format = "text";
  };
  auto flags = std::make_shared<Flags>();
  CLI::App* cmd = app.add_subcommand("tokenize", "Token ids and readable tokens of a text (K3 tiktoken BPE)");
  cmd->add_option("text", flags->text, "text to encode (default: stdin)");
  cmd->add_option("--model", flags->model, "model DIR with tiktoken.model + tokenizer_config.json");
  cmd->add_option("--ranks", flags->ranks, "without --model: BPE ranks trained from the embedded corpus")
      ->capture_default_str();
  cmd->add_flag("--json", flags->json_input, "the input is a JSON string literal (for escapes)");
  cmd->add_flag("--allow-special", flags->allow_special,
                "special-token names in the text become special ids (default: ordinary text)");
  cmd->add_flag("--decode", flags->decode, "the input is token ids; print the text they decode to");
  cmd->add_option("--format", flags->format, "text | json")->capture_default_str();
  cmd->callback([cmd, flags] {
    auto format = tokenizer::ParseReportFormat(flags->format);
    if (!format.ok()) return FailCommand("tokenize", format.status().message(), 2);
    std::string input = flags->text;
    if (cmd->count("text") == 0) input.assign(std::istreambuf_iterator<char>(std::cin), {});
    auto tokenizer = tokenizer::LoadOrTrainTokenizer(flags->model, flags->ranks);
    if (!tokenizer.ok()) return FailCommand("tokenize", tokenizer.status().ToString());
    std::vector<tokenizer::TokenId> ids;
    if (flags->decode) {
      auto parsed = tokenizer::ParseIdList(input);
      if (!parsed.ok()) return FailCommand("tokenize", parsed.status().message(), 2);
      ids = std::move(parsed).value();
    } else {
      if (flags->json_input) {
        auto parsed = tokenizer::ParseJsonStringInput(input);
        if (!parsed.ok()) return FailCommand("tokenize", parsed.status().message(), 2);
        input = std::move(parsed).value();
      }
      ids = tokenizer->Encode(input, flags->allow_special ? tokenizer::SpecialTokens::kAllowed
                                                          : tokenizer::SpecialTokens::kDisallowed);
    }
    auto report = tokenizer::FormatTokenReport(*tokenizer, ids, *format);
    if (!report.ok()) return FailCommand("tokenize", report.status().message(), 2);
    std::fputs(report->c_str(), stdout);
  });
}

}  // namespace k3::app
