// k3 render-chat: an OpenAI chat request (or messages array) as JSON in; the K3 XTML prompt out, as
// readable text with the special markers by name, and as token ids.
// Flags -> chat::ParseRenderRequest / chat::RenderXtml / tokenizer::FormatTokenReport; no logic here.
#include <cstdio>
#include <iostream>
#include <iterator>
#include <memory>
#include <string>

#include "apps/k3/commands.h"
#include "src/base/file.h"
#include "src/chat/render_request.h"
#include "src/chat/xtml_renderer.h"
#include "src/tokenizer/token_report.h"

namespace k3::app {

void RegisterRenderChatCommand(CLI::App& app) {
  struct Flags {
    std::string request = "-";
    std::string model;
    size_t ranks = 256 + 512;
    bool no_generation_prompt = false;
    bool continue_final_message = false;
    std::string format = "text";
  };
  auto flags = std::make_shared<Flags>();
  CLI::App* cmd =
      app.add_subcommand("render-chat", "Render an OpenAI chat request as the K3 XTML prompt (text + ids)");
  cmd->add_option("request", flags->request, "request JSON file, or - for stdin")->capture_default_str();
  cmd->add_option("--model", flags->model, "model DIR with tiktoken.model + tokenizer_config.json");
  cmd->add_option("--ranks", flags->ranks, "without --model: BPE ranks trained from the embedded corpus")
      ->capture_default_str();
  cmd->add_flag("--no-generation-prompt", flags->no_generation_prompt,
                "leave out the assistant prefix (as the request's add_generation_prompt: false)");
  cmd->add_flag("--continue-final-message", flags->continue_final_message,
                "leave the final assistant message open (as continue_final_message: true; implies "
                "--no-generation-prompt)");
  cmd->add_option("--format", flags->format, "text (prompt text, then one line per token) | json")
      ->capture_default_str();
  cmd->callback([flags] {
    auto format = tokenizer::ParseReportFormat(flags->format);
    if (!format.ok()) return FailCommand("render-chat", format.status().message(), 2);
    std::string input;
    if (flags->request == "-") {
      input.assign(std::istreambuf_iterator<char>(std::cin), {});
    } else {
      auto read = ReadFileToString(flags->request);
      if (!read.ok()) return FailCommand("render-chat", read.status().ToString());
      input = std::move(read).value();
    }
    auto request = chat::ParseRenderRequest(input);
    if (!request.ok()) return FailCommand("render-chat", request.status().ToString(), 2);
    if (flags->no_generation_prompt || flags->continue_final_message)
      request->options.add_generation_prompt = false;
    if (flags->continue_final_message) request->options.continue_final_message = true;
    auto tokenizer = tokenizer::LoadOrTrainTokenizer(flags->model, flags->ranks);
    if (!tokenizer.ok()) return FailCommand("render-chat", tokenizer.status().ToString());
    auto prompt = chat::RenderXtml(*tokenizer, request->messages, request->options);
    if (!prompt.ok()) return FailCommand("render-chat", prompt.status().ToString(), 2);
    auto report = tokenizer::FormatTokenReport(*tokenizer, prompt->ids, *format);
    if (!report.ok()) return FailCommand("render-chat", report.status().ToString());
    if (*format == tokenizer::ReportFormat::kText) std::printf("%s\n\n", prompt->text.c_str());
    std::fputs(report->c_str(), stdout);
  });
}

}  // namespace k3::app
