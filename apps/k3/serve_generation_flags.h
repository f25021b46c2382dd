// k3 serve's vLLM flags about what a request gets by default and how chat is rendered:
//   --generation-config auto|vllm|FOLDER   default sampling from FOLDER/generation_config.json (auto: the
//                                          model's folder, when it has one; vllm: none)
//   --override-generation-config JSON     keys layered on top ('{"temperature": 0.5}')
//   --chat-template NAME|FILE|TEXT        kimi_k3 / xtml, or a template that is the K3 XTML one (its markers
//                                          present): chat is rendered natively either way; any other
//                                          template is refused (this server runs no Jinja)
//   --chat-template-content-format auto|string|openai   accepted (content parts are read natively)
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "src/base/status.h"
#include "src/server/serve.h"

namespace k3::app {

struct GenerationFlags {
  std::string generation_config = "auto";
  std::string override_generation_config;
  std::string chat_template;
  std::string chat_template_content_format = "auto";
};

void AddGenerationFlags(CLI::App* cmd, GenerationFlags* flags, const std::string& group);

// Checks the flags (errors name the flag, the file and the fix) and sets config's generation-config fields.
Status ApplyGenerationFlags(const GenerationFlags& flags, server::ServeConfig* config);

}  // namespace k3::app
