// k3 serve's remaining vLLM serve flags (issue 42) and the notes for vLLM flags k3 does not take:
//   --enable-request-id-headers      accepted: every response already carries X-Request-Id
//   --response-role NAME             the role chat responses name (default assistant)
//   --max-log-len N                  with --enable-log-requests: each request's prompt (text and ids) is
//                                    logged, cut to N characters and N ids
//   --enable-prompt-tokens-details   accepted: usage always carries prompt_tokens_details.cached_tokens
//   --enable-force-include-usage     streams end with a usage chunk even without stream_options
//   --api-server-count N             1 accepted; more refused (one HTTP server with I/O threads)
//   --return-tokens-as-token-ids     logprob tokens (chat and completions) as "token_id:N" strings
//   --quantization mxfp4             accepted (the checkpoint's experts are MXFP4); any other refused
//   --uds PATH                       refused (the HTTP server listens on TCP only)
//   --tokenizer DIR                  tokenizer files (tiktoken.model, tokenizer_config.json) from DIR
//   --revision R                     refused (models are local or S3 directories; no Hub revisions)
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <CLI/CLI.hpp>

#include "src/base/status.h"
#include "src/server/serve.h"

namespace k3::app {

struct VllmServeFlags {
  bool enable_request_id_headers = false;
  std::string response_role = "assistant";
  int64_t max_log_len = -1;  // -1: no prompt in the request log
  bool enable_prompt_tokens_details = false;
  bool enable_force_include_usage = false;
  int32_t api_server_count = 1;
  bool return_tokens_as_token_ids = false;
  std::string quantization;
  std::string uds;
  std::string tokenizer;
  std::string revision;
};

void AddVllmServeFlags(CLI::App* cmd, VllmServeFlags* flags, const std::string& group);

// Checks the flags against the model directory (empty: the embedded model) and sets config's fields.
// Errors name the flag and why k3 cannot honour it.
Status ApplyVllmServeFlags(const VllmServeFlags& flags, const std::string& model_dir,
                           server::ServeConfig* config);

// For a flag CLI11 did not expect (e.g. "--enable-lora"): when vLLM's `serve` has it, a line naming it as
// a vLLM flag and saying what k3 does instead; nullopt for names vLLM does not have either.
std::optional<std::string> VllmFlagNote(std::string_view flag);

}  // namespace k3::app
