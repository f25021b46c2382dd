// k3 serve: the OpenAI-compatible server (src/server/serve.h) with vLLM's command line accepted.
//   k3 serve [MODEL_DIR] [--model DIR] [--host H] [--port 8000] [--served-model-name NAME] [--api-key KEY]
//            [--max-model-len N] [--max-num-seqs N] [--max-num-batched-tokens N] [--kv-cache-memory SIZE]
//            [--enable-prefix-caching | --no-enable-prefix-caching] [--shutdown-timeout S]
//            [--tool-call-parser kimi_k3|none] [--reasoning-parser kimi_k3|none] ...
// Without a model the embedded tiny-k3 is generated once into the cache directory. The K3 parsers are on
// by default (k3 serve is a K3 server); `none` switches one off with vLLM's semantics when it is not
// named: tool_choice "auto" with tools is an HTTP 400, reasoning text stays in content. The guide's vLLM
// flags (--trust-remote-code, --load-format, --enable-auto-tool-choice, ...) are accepted; values that
// would change behaviour we do not have (another parser, tensor parallelism > 1) are clear errors. The
// remaining vLLM flags (--response-role, --uds, --quantization, ...) are in serve_vllm_flags.h.
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "apps/k3/commands.h"
#include "apps/k3/embedded_model.h"
#include "apps/k3/http_flags.h"
#include "apps/k3/s3_flags.h"
#include "apps/k3/serve_generation_flags.h"
#include "apps/k3/serve_vllm_flags.h"
#include "apps/k3/version.h"
#include "src/model/cache_dtype.h"
#include "src/server/serve.h"

namespace k3::app {
namespace {

// uvicorn's level names (vLLM's --uvicorn-log-level) as spdlog levels; nullopt for anything else.
std::optional<spdlog::level::level_enum> UvicornLogLevel(const std::string& name) {
  if (name == "critical") return spdlog::level::critical;
  if (name == "error") return spdlog::level::err;
  if (name == "warning") return spdlog::level::warn;
  if (name == "info") return spdlog::level::info;
  if (name == "debug") return spdlog::level::debug;
  if (name == "trace") return spdlog::level::trace;
  return std::nullopt;
}

// "4GiB", "512MiB", "2G", "1048576" -> bytes; -1 when malformed.
int64_t ParseSize(const std::string& text) {
  size_t end = 0;
  double value = 0;
  try {
    value = std::stod(text, &end);
  } catch (...) {
    return -1;
  }
  std::string unit = text.substr(end);
  for (char& c : unit) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  double scale = 1;
  if (unit == "" || unit == "b") {
    scale = 1;
  } else if (unit == "k" || unit == "kb" || unit == "kib") {
    scale = 1024.0;
  } else if (unit == "m" || unit == "mb" || unit == "mib") {
    scale = 1024.0 * 1024;
  } else if (unit == "g" || unit == "gb" || unit == "gib") {
    scale = 1024.0 * 1024 * 1024;
  } else if (unit == "t" || unit == "tb" || unit == "tib") {
    scale = 1024.0 * 1024 * 1024 * 1024;
  } else {
    return -1;
  }
  if (value < 0 || value * scale > 9e18) return -1;
  return static_cast<int64_t>(value * scale);
}

// --limit-mm-per-prompt '{"image": N}' (vLLM's JSON): the image limit; video (K3 servers take none) or
// another modality with a count above 0 is an error naming the fix.
Result<int64_t> ParseImageLimit(const std::string& text) {
  const nlohmann::json parsed = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!parsed.is_object()) {
    return InvalidArgument("--limit-mm-per-prompt {}: expected a JSON object such as '{{\"image\": 4}}'",
                           text);
  }
  int64_t images = 16;
  for (const auto& [modality, value] : parsed.items()) {
    if (!value.is_number_integer() || value.get<int64_t>() < 0) {
      return InvalidArgument("--limit-mm-per-prompt: \"{}\" must be a count >= 0", modality);
    }
    if (modality == "image") {
      images = value.get<int64_t>();
    } else if (value.get<int64_t>() > 0) {
      return InvalidArgument(
          "--limit-mm-per-prompt: \"{}\" is not supported (Kimi K3 servers take images only); "
          "set it to 0 or leave it out",
          modality);
    }
  }
  return images;
}

}  // namespace

void RegisterServeCommand(CLI::App& app) {
  struct Flags {
    std::string model_positional;
    std::string model;
    S3Flags s3;
    int load_concurrency = 8;
    uint64_t load_max_inflight_mib = 256;
    std::string host = "0.0.0.0";
    int port = 8000;
    std::vector<std::string> served_model_names;
    std::string api_key;
    int64_t max_model_len = 0;
    int32_t max_num_seqs = 64;
    int64_t max_num_batched_tokens = 2048;
    std::string kv_cache_memory = "1GiB";
    bool prefix_caching = true;
    int64_t prefix_snapshot_interval = 256;
    int32_t max_queued_requests = 1024;
    double shutdown_timeout = 30;
    int threads = 0;
    int io_threads = 2;
    std::string max_request_body = "16MiB";
    std::string tool_call_parser = "kimi_k3";
    std::string reasoning_parser = "kimi_k3";
    // Accepted for vLLM compatibility.
    bool enable_auto_tool_choice = false;
    dist::GroupFlags group;
    bool dry_run = false;
    bool trust_remote_code = false;
    std::string load_format = "auto";
    std::string moe_backend = "auto";
    bool no_flashinfer_autotune = false;
    double gpu_memory_utilization = 0.9;
    std::string dtype = "auto";
    bool disable_log_requests = false;
    bool enable_log_requests = false;
    bool disable_log_stats = false;
    bool enable_chunked_prefill = true;
    bool enforce_eager = false;
    std::string root_path;
    std::string uvicorn_log_level = "info";
    std::string kv_cache_dtype = "auto";
    std::optional<uint64_t> seed;
    int32_t max_logprobs = 20;
    GenerationFlags generation;
    VllmServeFlags vllm;
    int32_t block_size = 16;
    bool server_load_tracking = false;
    bool disable_fastapi_docs = false;
    bool disable_access_log = false;
    double swap_space = 0;
    HttpFlags http;  // TLS, CORS
    // Images (vLLM's multimodal flags).
    std::string limit_mm_per_prompt;
    std::vector<std::string> allowed_media_domains;
    std::string allowed_local_media_path;
    std::string max_image_bytes = "20MiB";
  };
  auto f = std::make_shared<Flags>();
  CLI::App* cmd = app.add_subcommand("serve", "OpenAI-compatible server (vLLM command line accepted)");
  cmd->add_option("model_dir", f->model_positional, "checkpoint directory (as `vllm serve MODEL`)");
  cmd->add_option("--model", f->model,
                  "checkpoint directory, s3://bucket/prefix or az://account/container/prefix (default: the "
                  "embedded tiny-k3)");
  f->s3.Add(cmd);
  cmd->add_option("--load-concurrency", f->load_concurrency,
                  "ranged requests in flight when the model is a URI (s3://..., az://...)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--load-max-inflight-mib", f->load_max_inflight_mib,
                  "MiB requested but not yet read when the model is a URI (s3://..., az://...)")
      ->capture_default_str()
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 20));
  cmd->add_option("--host", f->host, "address to listen on")->capture_default_str();
  cmd->add_option("--port", f->port, "port (0: any free port)")->capture_default_str();
  cmd->add_option("--served-model-name", f->served_model_names,
                  "the model name(s) clients send; the first is used in responses and metrics (default: the "
                  "model directory's name, tiny-k3 when embedded)")
      ->expected(1, -1);
  cmd->add_option(
      "--api-key", f->api_key,
      "require 'Authorization: Bearer KEY' (or 'x-api-key: KEY') on /v1/* (default: $K3_API_KEY, then "
      "$VLLM_API_KEY)");
  cmd->add_option("--max-model-len", f->max_model_len, "context length (0: the model's, capped by the cache)")
      ->capture_default_str();
  cmd->add_option("--max-num-seqs", f->max_num_seqs, "running sequences per step")->capture_default_str();
  cmd->add_option("--max-num-batched-tokens", f->max_num_batched_tokens, "tokens per engine step")
      ->capture_default_str();
  cmd->add_option("--kv-cache-memory", f->kv_cache_memory,
                  "cache budget: MLA blocks + KDA state slots + prefix snapshots (e.g. 4GiB)")
      ->capture_default_str();
  cmd->add_flag("--enable-prefix-caching,!--no-enable-prefix-caching", f->prefix_caching,
                "reuse cached prompt prefixes (default on)");
  cmd->add_option("--prefix-snapshot-interval", f->prefix_snapshot_interval,
                  "KDA state snapshot every N prompt tokens (prefix hits land on snapshots)")
      ->capture_default_str();
  cmd->add_option("--max-queued-requests", f->max_queued_requests,
                  "waiting requests beyond this get HTTP 429 with Retry-After")
      ->capture_default_str();
  cmd->add_option("--shutdown-timeout", f->shutdown_timeout,
                  "seconds SIGTERM waits for requests in flight before aborting them")
      ->capture_default_str();
  cmd->add_option("--threads", f->threads, "model worker threads (0: all cores)")->capture_default_str();
  cmd->add_option("--io-threads", f->io_threads, "HTTP I/O threads")->capture_default_str();
  cmd->add_option("--max-request-body", f->max_request_body, "larger request bodies get HTTP 413")
      ->capture_default_str();
  cmd->add_option("--tool-call-parser", f->tool_call_parser,
                  "kimi_k3 (built in) or none: tool_choice \"auto\" with tools is then refused with HTTP 400 "
                  "as by vLLM without a parser (\"required\" and named still work: constrained decoding)")
      ->capture_default_str();
  cmd->add_option("--reasoning-parser", f->reasoning_parser,
                  "kimi_k3 (built in) or none: the thinking text then stays in content, with no "
                  "reasoning_content, as from vLLM without a reasoning parser")
      ->capture_default_str();
  const std::string compat = "vLLM compatibility";
  CLI::Option* auto_tool_choice =
      cmd->add_flag("--enable-auto-tool-choice", f->enable_auto_tool_choice,
                    "accepted (tool_choice auto is on whenever a tool-call parser is set)")
          ->group(compat);
  cmd->add_flag("--trust-remote-code", f->trust_remote_code, "accepted (no remote code is ever run)")
      ->group(compat);
  cmd->add_option("--load-format", f->load_format,
                  "accepted: auto, safetensors, fastsafetensors (weights are mmap'd safetensors)")
      ->group(compat);
  cmd->add_option("--moe-backend", f->moe_backend, "accepted (CPU kernels are chosen at run time)")
      ->group(compat);
  cmd->add_flag("--no-enable-flashinfer-autotune", f->no_flashinfer_autotune, "accepted (no FlashInfer)")
      ->group(compat);
  cmd->add_option("--gpu-memory-utilization", f->gpu_memory_utilization,
                  "accepted (use --kv-cache-memory for the cache budget)")
      ->group(compat);
  cmd->add_option("--dtype", f->dtype, "auto or bfloat16 (the weights are used as shipped, in bf16)")
      ->group(compat);
  cmd->add_flag("--disable-log-requests", f->disable_log_requests,
                "accepted (requests are not logged by default)")
      ->group(compat);
  cmd->add_flag("--enable-log-requests", f->enable_log_requests,
                "one log line per generation request: id, route, prompt tokens, max_tokens, n, stream")
      ->group(compat);
  cmd->add_flag("--disable-log-stats", f->disable_log_stats,
                "accepted (no periodic stats lines: see /metrics)")
      ->group(compat);
  cmd->add_flag("--enable-chunked-prefill,!--no-enable-chunked-prefill", f->enable_chunked_prefill,
                "accepted: prefill is always chunked (--max-num-batched-tokens per step); off is refused")
      ->group(compat);
  cmd->add_flag("--enforce-eager", f->enforce_eager, "accepted (no CUDA graphs on this engine)")
      ->group(compat);
  cmd->add_option("--root-path", f->root_path,
                  "accepted (the path prefix of a proxy in front; routes stay where they are, as in vLLM)")
      ->group(compat);
  cmd->add_option("--uvicorn-log-level", f->uvicorn_log_level,
                  "log level: critical, error, warning, info, debug, trace")
      ->capture_default_str()
      ->group(compat);
  cmd->add_option(
         "--kv-cache-dtype", f->kv_cache_dtype,
         "auto or bfloat16 (bf16): the latent cache stores bf16 (2 bytes a value, as the reference); "
         "fp32: the same bf16 values in fp32 words (twice the memory, for debugging); fp8 kinds are "
         "refused")
      ->capture_default_str()
      ->group(compat);
  cmd->add_option("--seed", f->seed, "seeds the seeds of requests that give none (reproducible runs)")
      ->group(compat);
  cmd->add_option("--max-logprobs", f->max_logprobs, "most top_logprobs / logprobs a request may ask for")
      ->capture_default_str()
      ->group(compat);
  AddGenerationFlags(cmd, &f->generation, compat);
  AddVllmServeFlags(cmd, &f->vllm, compat);
  cmd->add_option("--block-size", f->block_size, "tokens per MLA cache block (1..4096)")
      ->capture_default_str()
      ->group(compat);
  cmd->add_flag("--enable-server-load-tracking", f->server_load_tracking,
                "accepted (GET /load always answers)")
      ->group(compat);
  cmd->add_flag("--disable-fastapi-docs", f->disable_fastapi_docs,
                "accepted (there are no docs pages; /openapi.json stays)")
      ->group(compat);
  cmd->add_flag("--disable-uvicorn-access-log", f->disable_access_log, "accepted (no access log is written)")
      ->group(compat);
  cmd->add_option("--swap-space", f->swap_space, "accepted (the cache lives in host memory already)")
      ->group(compat);

  cmd->add_option("--limit-mm-per-prompt", f->limit_mm_per_prompt,
                  "most images one prompt may hold, as JSON: '{\"image\": N}' (default 16; video: refused)")
      ->group("Images");
  cmd->add_option(
         "--allowed-media-domains", f->allowed_media_domains,
         "hosts whose http(s) image URLs may be fetched (default: none; redirects are checked again)")
      ->group("Images");
  cmd->add_option("--allowed-local-media-path", f->allowed_local_media_path,
                  "a directory whose files file: image URLs may read (default: none)")
      ->group("Images");
  cmd->add_option("--max-image-bytes", f->max_image_bytes, "largest image file accepted, encoded")
      ->capture_default_str()
      ->group("Images");
  AddGroupFlags(cmd, &f->group, "Distributed (vLLM's multiprocessing executor flags)");
  AddHttpFlags(cmd, &f->http);
  cmd->add_flag("--dry-run", f->dry_run,
                "check the command line (flags, parallel layout, LWS environment), print the plan and exit");

  cmd->callback([f, auto_tool_choice] {
    auto fail = [](const std::string& message) { FailCommand("serve", message, 2); };
    if (!f->model.empty() && !f->model_positional.empty() && f->model != f->model_positional) {
      return fail(fmt::format("two models given: '{}' and --model '{}'", f->model_positional, f->model));
    }
    if (f->tool_call_parser != "kimi_k3" && f->tool_call_parser != "none") {
      return fail(fmt::format(
          "--tool-call-parser {}: only kimi_k3 is built in (the K3 XTML tool-call format), or none",
          f->tool_call_parser));
    }
    if (f->reasoning_parser != "kimi_k3" && f->reasoning_parser != "none") {
      return fail(
          fmt::format("--reasoning-parser {}: only kimi_k3 is built in, or none", f->reasoning_parser));
    }
    if (auto_tool_choice->count() > 0 && f->tool_call_parser == "none") {
      return fail("--enable-auto-tool-choice needs a tool-call parser (--tool-call-parser kimi_k3)");
    }
    auto group = ResolveGroupFromFlags(f->group);
    if (!group.ok()) return fail(group.status().message());
    if (f->load_format != "auto" && f->load_format != "safetensors" && f->load_format != "fastsafetensors") {
      return fail(fmt::format("--load-format {}: k3 reads safetensors (auto, safetensors, fastsafetensors)",
                              f->load_format));
    }
    if (!f->enable_chunked_prefill)
      return fail("--no-enable-chunked-prefill: prefill is always chunked on this engine");
    const std::optional<model::CacheDtype> cache_dtype = model::ParseCacheDtype(f->kv_cache_dtype);
    if (!cache_dtype.has_value()) {
      return fail(fmt::format(
          "--kv-cache-dtype {}: auto, bfloat16 or fp32 (the latent cache holds bf16 values; no fp8 cache)",
          f->kv_cache_dtype));
    }
    if (f->max_logprobs < 0) return fail("--max-logprobs must be >= 0");
    const std::optional<spdlog::level::level_enum> level = UvicornLogLevel(f->uvicorn_log_level);
    if (!level.has_value()) {
      return fail(fmt::format("--uvicorn-log-level {}: one of critical, error, warning, info, debug, trace",
                              f->uvicorn_log_level));
    }
    if (f->dtype != "auto" && f->dtype != "bfloat16" && f->dtype != "bf16") {
      return fail(fmt::format(
          "--dtype {}: auto or bfloat16 (the weights are used as shipped, in bf16; no cast to other types)",
          f->dtype));
    }
    if (f->port < 0 || f->port > 65535) return fail(fmt::format("--port {}: not a port", f->port));
    if (f->max_num_seqs < 1) return fail("--max-num-seqs must be >= 1");
    if (f->max_num_batched_tokens < 1) return fail("--max-num-batched-tokens must be >= 1");
    if (f->max_model_len < 0) return fail("--max-model-len must be >= 0");
    if (f->max_queued_requests < 0) return fail("--max-queued-requests must be >= 0");
    if (f->prefix_snapshot_interval < 1) return fail("--prefix-snapshot-interval must be >= 1");
    if (f->shutdown_timeout < 0) return fail("--shutdown-timeout must be >= 0");
    if (f->io_threads < 1) return fail("--io-threads must be >= 1");
    if (f->threads < 0) return fail("--threads must be >= 0");
    const int64_t kv_bytes = ParseSize(f->kv_cache_memory);
    if (kv_bytes <= 0)
      return fail(fmt::format("--kv-cache-memory {}: expected a size like 4GiB", f->kv_cache_memory));
    const int64_t body_bytes = ParseSize(f->max_request_body);
    if (body_bytes <= 0) {
      return fail(fmt::format("--max-request-body {}: expected a size like 16MiB", f->max_request_body));
    }

    server::ServeConfig config;
    if (!f->limit_mm_per_prompt.empty()) {
      Result<int64_t> images = ParseImageLimit(f->limit_mm_per_prompt);
      if (!images.ok()) return fail(std::string(images.status().message()));
      config.max_images_per_prompt = *images;
    }
    config.media_fetch.allowed_domains = f->allowed_media_domains;
    config.media_fetch.allowed_local_path = f->allowed_local_media_path;
    if (!f->allowed_local_media_path.empty() && !std::filesystem::is_directory(f->allowed_local_media_path)) {
      return fail(fmt::format("--allowed-local-media-path {}: not a directory", f->allowed_local_media_path));
    }
    config.media_fetch.max_bytes = ParseSize(f->max_image_bytes);
    if (config.media_fetch.max_bytes <= 0)
      return fail(fmt::format("--max-image-bytes {}: expected a size like 20MiB", f->max_image_bytes));
    config.http.host = f->host;
    config.http.port = static_cast<uint16_t>(f->port);
    config.http.io_threads = f->io_threads;
    config.http.max_body_bytes = static_cast<size_t>(body_bytes);
    config.http.api_key = f->api_key;
    for (const char* env : {"K3_API_KEY", "VLLM_API_KEY"}) {
      const char* value = std::getenv(env);
      if (config.http.api_key.empty() && value != nullptr) config.http.api_key = value;
    }
    if (Status s = ApplyHttpFlags(f->http, &config.http); !s.ok()) return fail(s.message());
    config.model_dir = f->model.empty() ? f->model_positional : f->model;
    config.store.s3 = f->s3.Options(storage::ProcessEnvironment());
    config.remote_load.concurrency = f->load_concurrency;
    config.remote_load.max_inflight_bytes = f->load_max_inflight_mib << 20;
    config.resolve_model = [] { return EnsureEmbeddedModel(); };
    for (const std::string& name : f->served_model_names) {  // in order, each once
      if (config.served_model_name.empty()) {
        config.served_model_name = name;
      } else if (name != config.served_model_name &&
                 std::find(config.served_model_aliases.begin(), config.served_model_aliases.end(), name) ==
                     config.served_model_aliases.end()) {
        config.served_model_aliases.push_back(name);
      }
    }
    config.engine.max_model_len = f->max_model_len;
    config.engine.max_num_seqs = f->max_num_seqs;
    config.engine.max_num_batched_tokens = f->max_num_batched_tokens;
    config.engine.kv_cache_bytes = kv_bytes;
    config.engine.enable_prefix_caching = f->prefix_caching;
    config.enable_auto_tool_choice = f->tool_call_parser != "none";
    config.reasoning_parser = f->reasoning_parser != "none";
    config.engine.prefix_snapshot_interval = f->prefix_snapshot_interval;
    if (f->block_size < 1 || f->block_size > 4096)
      return fail(fmt::format("--block-size {}: must be in [1, 4096]", f->block_size));
    config.engine.block_tokens = f->block_size;
    config.engine.kv_cache_dtype = *cache_dtype;
    config.engine.max_waiting = f->max_queued_requests;
    config.engine.seed = f->seed;
    config.max_logprobs = f->max_logprobs;
    if (Status generation = ApplyGenerationFlags(f->generation, &config); !generation.ok())
      return fail(generation.message());
    if (Status vllm = ApplyVllmServeFlags(f->vllm, config.model_dir, &config); !vllm.ok())
      return fail(vllm.message());
    config.log_requests = f->enable_log_requests && !f->disable_log_requests;
    config.threads = group->world > 1 ? DefaultThreadsPerRank(*group, f->threads) : f->threads;
    config.group = *group;
    config.shutdown_timeout = std::chrono::milliseconds(static_cast<int64_t>(f->shutdown_timeout * 1000));
    config.version = K3_VERSION_STRING;
    if (f->dry_run) {
      std::printf(
          "k3 serve: command line ok: model %s, rank %d of %d (node %d of %d, %d per node%s), %s, "
          "rendezvous %s:%d, threads per rank %d\n",
          config.model_dir.empty() ? "(embedded tiny-k3)" : config.model_dir.c_str(), group->rank,
          group->world, group->node_rank, group->nnodes, group->ranks_per_node,
          group->expert_parallel ? ", expert parallel" : "",
          group->serves_http() ? fmt::format("HTTP on {}:{}", f->host, f->port).c_str() : "headless",
          group->master_addr.c_str(), group->master_port, config.threads);
      return;
    }
    spdlog::set_level(*level);
    auto local_ranks = StartLocalRanks(*group, "serve");
    if (!local_ranks.ok()) return FailCommand("serve", local_ranks.status().ToString());
    if (*local_ranks != nullptr)
      config.on_group_formed = [ranks = local_ranks->get()] { ranks->ExpectExit(); };
    CommandExitCode() = server::RunServe(config);
  });
}

}  // namespace k3::app
