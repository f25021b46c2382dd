// k3 serve's remaining vLLM flags (serve_vllm_flags.h): what each does here, or why it is refused, and
// the table of vLLM serve flags k3 does not take, for CLI11's "not expected" error.
#include "apps/k3/serve_vllm_flags.h"

#include <filesystem>
#include <system_error>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

namespace k3::app {
namespace {

struct VllmFlag {
  const char* name;
  const char* k3;  // what k3 does instead
};

// vLLM `serve` flags that k3 serve does not register (the ones it takes are its own options).
constexpr VllmFlag kVllmOnlyFlags[] = {
    {"--tokenizer-mode", "no equivalent: the K3 tiktoken tokenizer is built in"},
    {"--tokenizer-revision", "no equivalent: tokenizer files come from the model directory"},
    {"--code-revision", "no equivalent: no remote code is run"},
    {"--hf-config-path", "no equivalent: config.json is read from the model directory"},
    {"--download-dir", "no equivalent: models are local or S3 directories (k3 weights fetch)"},
    {"--enable-lora", "no equivalent: LoRA adapters are not supported"},
    {"--lora-modules", "no equivalent: LoRA adapters are not supported"},
    {"--max-lora-rank", "no equivalent: LoRA adapters are not supported"},
    {"--max-loras", "no equivalent: LoRA adapters are not supported"},
    {"--speculative-config", "no equivalent: no speculative decoding"},
    {"--kv-transfer-config", "no equivalent: no disaggregated prefill"},
    {"--cpu-offload-gb", "no equivalent: weights are mapped from the checkpoint files"},
    {"--max-num-partial-prefills", "no equivalent: chunked prefill is scheduled by --max-num-batched-tokens"},
    {"--long-prefill-token-threshold",
     "no equivalent: chunked prefill is scheduled by --max-num-batched-tokens"},
    {"--scheduling-policy", "no equivalent: requests are served first come, first served"},
    {"--compilation-config", "no equivalent: nothing is compiled at start-up"},
    {"-O", "no equivalent: nothing is compiled at start-up"},
    {"--distributed-executor-backend", "no equivalent: ranks talk over k3's own TCP collectives"},
    {"--data-parallel-address", "k3 has --master-addr for the rendezvous"},
    {"--data-parallel-rpc-port", "k3 has --master-port for the rendezvous"},
    {"--data-parallel-size-local", "k3 derives ranks per node from --nnodes (see k3 plan)"},
    {"--hf-overrides", "no equivalent: config.json is read as shipped"},
    {"--mm-processor-kwargs", "no equivalent: the MoonViT processor settings are fixed"},
    {"--disable-mm-preprocessor-cache", "no equivalent: the encoder cache is sized automatically"},
    {"--guided-decoding-backend", "no equivalent: structured output uses k3's own grammar engine"},
    {"--structured-outputs-config", "no equivalent: structured output uses k3's own grammar engine"},
    {"--logits-processors", "no equivalent: no Python logits processors"},
    {"--middleware", "no equivalent: no Python middleware"},
    {"--ssl-ciphers", "no equivalent: the TLS library's defaults are used (--ssl-certfile, --ssl-keyfile)"},
    {"--otlp-traces-endpoint", "no equivalent: no OpenTelemetry export; see /metrics"},
    {"--collect-detailed-traces", "no equivalent: no OpenTelemetry export; see /metrics"},
    {"--enable-sleep-mode", "not needed: /sleep and /wake_up are always served"},
    {"--enable-tokenizer-info-endpoint", "no equivalent: use /tokenize and /detokenize"},
    {"--log-config-file", "no equivalent: logging goes to stderr (--uvicorn-log-level sets the level)"},
    {"--chat-template-kwargs", "no equivalent flag: send chat_template_kwargs in each request"},
    {"--default-chat-template-kwargs", "no equivalent flag: send chat_template_kwargs in each request"},
    {"--max-seq-len-to-capture", "no equivalent: no CUDA graphs on this engine"},
    {"--cuda-graph-sizes", "no equivalent: no CUDA graphs on this engine"},
    {"--num-gpu-blocks-override", "k3 has --kv-cache-memory"},
    {"--tool-parser-plugin", "no equivalent: the kimi_k3 parser is built in (--tool-call-parser)"},
    {"--reasoning-parser-plugin", "no equivalent: the kimi_k3 parser is built in (--reasoning-parser)"},
    {"--expand-tools-even-if-tool-choice-none", "no equivalent: tools are always declared in the prompt"},
    {"--exclude-tools-when-tool-choice-none", "no equivalent: tools are always declared in the prompt"},
    {"--enable-auto-tool-choice-with-parser", "k3 has --enable-auto-tool-choice"},
};

bool SameDirectory(const std::string& a, const std::string& b) {
  std::error_code ec_a, ec_b;
  const auto ca = std::filesystem::weakly_canonical(a, ec_a);
  const auto cb = std::filesystem::weakly_canonical(b, ec_b);
  return !ec_a && !ec_b && ca == cb;
}

}  // namespace

void AddVllmServeFlags(CLI::App* cmd, VllmServeFlags* f, const std::string& group) {
  cmd->add_flag("--enable-request-id-headers", f->enable_request_id_headers,
                "accepted: every response carries X-Request-Id (the client's, or a generated one)")
      ->group(group);
  cmd->add_option("--response-role", f->response_role, "the role chat completion responses name")
      ->capture_default_str()
      ->group(group);
  cmd->add_option("--max-log-len", f->max_log_len,
                  "with --enable-log-requests: each request's line also holds its prompt (decoded text and "
                  "token ids), cut to N characters and N ids (without it the log holds no prompt)")
      ->group(group);
  cmd->add_flag("--enable-prompt-tokens-details", f->enable_prompt_tokens_details,
                "accepted: usage always carries prompt_tokens_details.cached_tokens")
      ->group(group);
  cmd->add_flag("--enable-force-include-usage", f->enable_force_include_usage,
                "streams end with a usage chunk even without stream_options.include_usage")
      ->group(group);
  cmd->add_option("--api-server-count", f->api_server_count,
                  "1 (one HTTP server; --io-threads sets its threads); more is refused")
      ->capture_default_str()
      ->group(group);
  cmd->add_flag("--return-tokens-as-token-ids", f->return_tokens_as_token_ids,
                "logprob tokens as \"token_id:N\" strings (chat and completions)")
      ->group(group);
  cmd->add_option("--quantization,-q", f->quantization,
                  "mxfp4 (the checkpoint's experts are MXFP4 as shipped); other methods are refused")
      ->group(group);
  cmd->add_option("--uds", f->uds, "refused: the HTTP server listens on TCP (--host, --port) only")
      ->group(group);
  cmd->add_option("--tokenizer", f->tokenizer,
                  "a local directory with tiktoken.model + tokenizer_config.json (default: the model's)")
      ->group(group);
  cmd->add_option("--revision", f->revision,
                  "refused: models are local or S3 directories, with no Hub revisions")
      ->group(group);
}

Status ApplyVllmServeFlags(const VllmServeFlags& f, const std::string& model_dir,
                           server::ServeConfig* config) {
  if (f.response_role.empty()) return InvalidArgument("--response-role: must not be empty");
  if (f.api_server_count < 1) return InvalidArgument("--api-server-count must be >= 1");
  if (f.api_server_count > 1) {
    return InvalidArgument(
        "--api-server-count {}: k3 serves HTTP from one process (its I/O threads, --io-threads, do what "
        "vLLM's extra API server processes do); use 1",
        f.api_server_count);
  }
  if (!f.quantization.empty() && f.quantization != "mxfp4") {
    return InvalidArgument(
        "--quantization {}: the K3 checkpoint's experts are MXFP4 and used as shipped; only mxfp4 is "
        "accepted (no other quantization method)",
        f.quantization);
  }
  if (!f.uds.empty()) {
    return InvalidArgument(
        "--uds {}: the HTTP server listens on TCP only; use --host 127.0.0.1 --port N (or a proxy in front)",
        f.uds);
  }
  if (!f.tokenizer.empty() && !(!model_dir.empty() && SameDirectory(f.tokenizer, model_dir))) {
    if (f.tokenizer.find("://") != std::string::npos) {
      return InvalidArgument(
          "--tokenizer {}: a local directory holding tiktoken.model and "
          "tokenizer_config.json is needed (not a URL or Hub name)",
          f.tokenizer);
    }
    std::error_code ec;
    if (!std::filesystem::is_directory(f.tokenizer, ec)) {
      return InvalidArgument(
          "--tokenizer {}: not a directory (a local directory holding tiktoken.model and "
          "tokenizer_config.json; Hub names are not fetched)",
          f.tokenizer);
    }
    config->tokenizer_dir = f.tokenizer;
  }
  if (!f.revision.empty()) {
    return InvalidArgument(
        "--revision {}: models are local or S3 directories, not Hugging Face Hub repositories, so there is "
        "no revision to pick; point the model argument at the revision's files",
        f.revision);
  }
  if (f.max_log_len < -1) return InvalidArgument("--max-log-len must be >= 0");
  config->max_log_len = f.max_log_len;
  config->response_role = f.response_role;
  config->force_include_usage = f.enable_force_include_usage;
  config->return_tokens_as_token_ids = f.return_tokens_as_token_ids;
  return OkStatus();
}

std::optional<std::string> VllmFlagNote(std::string_view flag) {
  const size_t eq = flag.find('=');
  if (eq != std::string_view::npos) flag = flag.substr(0, eq);
  for (const VllmFlag& known : kVllmOnlyFlags) {
    if (flag == known.name) return fmt::format("{} is a vLLM serve flag; k3: {}", known.name, known.k3);
  }
  return std::nullopt;
}

}  // namespace k3::app
