// k3 serve: --generation-config, --override-generation-config, --chat-template(-content-format).
#include "apps/k3/serve_generation_flags.h"

#include <filesystem>

#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "src/api/generation_config.h"
#include "src/base/file.h"

namespace k3::app {
namespace {

// True when a template text is the K3 XTML chat format (its structural markers appear in it).
bool IsXtmlTemplate(const std::string& text) {
  return text.find("<|open|>") != std::string::npos && text.find("<|close|>") != std::string::npos &&
         text.find("<|sep|>") != std::string::npos;
}

Status CheckChatTemplate(const std::string& value) {
  if (value.empty() || value == "kimi_k3" || value == "xtml") return OkStatus();
  std::error_code ec;
  std::string text = value;
  std::string what = "the template text";
  if (std::filesystem::is_regular_file(value, ec)) {
    K3_ASSIGN_OR_RETURN(text, ReadFileToString(value));
    what = value;
  } else if (value.find("{{") == std::string::npos && value.find("{%") == std::string::npos) {
    return InvalidArgument(
        "--chat-template {}: no such file (give the path of the model's chat template, or kimi_k3)", value);
  }
  if (!IsXtmlTemplate(text)) {
    return InvalidArgument(
        "--chat-template: {} is not the Kimi K3 XTML template (no <|open|> / <|close|> / <|sep|> markers); "
        "k3 renders the K3 XTML chat format natively and runs no Jinja templates: drop the flag or pass "
        "kimi_k3",
        what);
  }
  spdlog::info("--chat-template {}: the K3 XTML format, rendered natively (the template is not executed)",
               what);
  return OkStatus();
}

}  // namespace

void AddGenerationFlags(CLI::App* cmd, GenerationFlags* flags, const std::string& group) {
  cmd->add_option(
         "--generation-config", flags->generation_config,
         "auto: default sampling from the model's generation_config.json (when present); vllm: none; "
         "or a folder holding a generation_config.json")
      ->capture_default_str()
      ->group(group);
  cmd->add_option("--override-generation-config", flags->override_generation_config,
                  "JSON object layered on the generation config, e.g. '{\"temperature\": 0.5}'")
      ->group(group);
  cmd->add_option("--chat-template", flags->chat_template,
                  "kimi_k3, or the K3 XTML template (file or text): chat is rendered natively; other "
                  "templates are refused")
      ->group(group);
  cmd->add_option("--chat-template-content-format", flags->chat_template_content_format,
                  "accepted: auto, string, openai (message content parts are read natively)")
      ->capture_default_str()
      ->group(group);
}

Status ApplyGenerationFlags(const GenerationFlags& flags, server::ServeConfig* config) {
  const std::string& mode = flags.generation_config;
  if (mode != "auto" && mode != "vllm") {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(std::filesystem::path(mode) / "generation_config.json", ec)) {
      return InvalidArgument(
          "--generation-config {}: no generation_config.json in that folder (give auto, vllm or a folder "
          "holding one)",
          mode);
    }
  }
  config->generation_config = mode;
  if (!flags.override_generation_config.empty()) {
    const nlohmann::json parsed =
        nlohmann::json::parse(flags.override_generation_config, nullptr, /*allow_exceptions=*/false);
    if (parsed.is_discarded()) {
      return InvalidArgument(
          "--override-generation-config: not valid JSON (give an object such as "
          "'{{\"temperature\": 0.5}}')");
    }
    K3_ASSIGN_OR_RETURN(config->override_generation_config,
                        api::ParseGenerationConfig(parsed, "--override-generation-config"));
  }
  K3_RETURN_IF_ERROR(CheckChatTemplate(flags.chat_template));
  const std::string& format = flags.chat_template_content_format;
  if (format != "auto" && format != "string" && format != "openai") {
    return InvalidArgument("--chat-template-content-format {}: one of auto, string, openai", format);
  }
  return OkStatus();
}

}  // namespace k3::app
