// RunServe: listen, load, serve, drain.
#include "src/server/serve.h"

#include <atomic>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <memory>
#include <optional>
#include <thread>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "src/api/image_parts.h"
#include "src/api/openai.h"
#include "src/base/file.h"
#include "src/base/open_files.h"
#include "src/base/thread_pool.h"
#include "src/cache/kv_cache.h"
#include "src/model/cache_dtype.h"
#include "src/model/load_for_rank.h"
#include "src/model/model.h"
#include "src/model/rank_group.h"
#include "src/model/tensors.h"
#include "src/server/openai_service.h"
#include "src/tokenizer/tokenizer.h"

namespace k3::server {
namespace {

std::string Bytes(int64_t n) {
  if (n >= (int64_t{1} << 30)) return fmt::format("{:.2f} GiB", static_cast<double>(n) / (1 << 30));
  if (n >= (int64_t{1} << 20)) return fmt::format("{:.1f} MiB", static_cast<double>(n) / (1 << 20));
  return fmt::format("{} KiB", n >> 10);
}

std::string Count(int64_t n) {
  if (n >= 1'000'000'000) return fmt::format("{:.2f}B", n / 1e9);
  if (n >= 1'000'000) return fmt::format("{:.2f}M", n / 1e6);
  return fmt::format("{:.1f}K", n / 1e3);
}

// Everything that exists once the model is loaded; destroyed before the HTTP server.
struct Loaded {
  std::unique_ptr<ThreadPool> pool;
  std::unique_ptr<tokenizer::Tokenizer> tokenizer;
  model::GroupMember member;  // the model (and in a group, the communicator and the leader)
  std::unique_ptr<engine::Engine> engine;
};

Result<std::string> ResolveModelDir(const ServeConfig& config) {
  std::string dir = config.model_dir;
  if (dir.empty()) {
    if (!config.resolve_model) return InvalidArgument("no --model given");
    K3_ASSIGN_OR_RETURN(dir, config.resolve_model());
  }
  if (model::RemoteModelUri(dir)) return dir;
  if (!std::filesystem::is_directory(dir)) {
    return NotFound(
        "--model {}: not a directory. k3 serve loads a local checkpoint directory (config.json, "
        "*.safetensors, tokenizer files); download the weights first, e.g. `huggingface-cli download {} "
        "--local-dir DIR`",
        dir, dir);
  }
  return dir;
}

// Default sampling from the generation config (vLLM's --generation-config) with the override on top.
// remote_auto: the model's generation_config.json read from object storage ("" when it has none), used
// for "auto" instead of the model folder.
Result<api::SamplingDefaults> GenerationDefaults(const ServeConfig& config, const std::string& model_dir,
                                                 const std::optional<std::string>& remote_auto) {
  api::SamplingDefaults defaults;
  if (config.generation_config == "auto" && remote_auto) {
    if (!remote_auto->empty()) {
      const std::string where = model_dir + "/generation_config.json";
      const nlohmann::json parsed = nlohmann::json::parse(*remote_auto, nullptr, /*allow_exceptions=*/false);
      if (parsed.is_discarded())
        return InvalidArgument("{}: not valid JSON (fix it, or pass --generation-config vllm)", where);
      K3_ASSIGN_OR_RETURN(defaults, api::ParseGenerationConfig(parsed, where));
    }
  } else if (config.generation_config != "vllm") {
    const std::string folder = config.generation_config == "auto" ? model_dir : config.generation_config;
    const std::filesystem::path file = std::filesystem::path(folder) / "generation_config.json";
    std::error_code ec;
    if (std::filesystem::is_regular_file(file, ec)) {
      K3_ASSIGN_OR_RETURN(std::string text, ReadFileToString(file.string()));
      const nlohmann::json parsed = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
      if (parsed.is_discarded())
        return InvalidArgument("{}: not valid JSON (fix it, or pass --generation-config vllm)",
                               file.string());
      K3_ASSIGN_OR_RETURN(defaults, api::ParseGenerationConfig(parsed, file.string()));
    }
  }
  defaults = api::MergeSamplingDefaults(defaults, config.override_generation_config);
  if (!defaults.empty()) {
    spdlog::info("default sampling parameters from the generation config: {} (a request's own fields win)",
                 defaults.Describe());
  }
  return defaults;
}

// Joins the group (if any) and loads the model of this rank from a directory or a bucket (`dir` is a URI,
// model::LoadForRank); a bucket's tokenizer and generation files come back in *remote_files (when not null).
Status LoadModel(const ServeConfig& config, const std::string& dir, ThreadPool* pool,
                 std::function<void(const Status&)> on_failure, model::LoadProgress* progress,
                 model::GroupMember* out, model::RemoteModelFiles* remote_files) {
  if (config.group.world > 1) {
    spdlog::info(
        "rank {} of {} ({}, node {} of {}), rendezvous at {}:{}", config.group.rank, config.group.world,
        config.group.expert_parallel ? "tensor + expert parallel" : "tensor parallel", config.group.node_rank,
        config.group.nnodes, config.group.master_addr, config.group.master_port);
  }
  model::RankLoadOptions options;
  options.version = config.version;
  options.store = config.store;
  options.remote = config.remote_load;
  options.progress = progress;
  options.on_failure = std::move(on_failure);
  K3_ASSIGN_OR_RETURN(model::RankLoad loaded,
                      model::LoadForRank(dir, config.group, pool, std::move(options)));
  *out = std::move(loaded.member);
  if (remote_files != nullptr && loaded.remote_files) *remote_files = std::move(*loaded.remote_files);
  if (config.on_group_formed) config.on_group_formed();
  return OkStatus();
}

// What image requests are checked against: the checkpoint's image processor (preprocessor_config.json; K3's
// published values when a checkpoint with a tower has none), the decode limits, the per-prompt limit and
// the URL fetcher the flags allow.
Result<std::shared_ptr<const api::MediaSettings>> MediaFor(const ServeConfig& config, const std::string& dir,
                                                           bool has_vision) {
  auto media = std::make_shared<api::MediaSettings>();
  media->model_has_vision = has_vision;
  media->max_images_per_prompt = config.max_images_per_prompt;
  media->limits = image::DefaultDecodeLimits();
  media->processor = image::K3ProcessorConfig();
  if (!has_vision) return std::shared_ptr<const api::MediaSettings>(std::move(media));
  const std::string path = dir + "/preprocessor_config.json";
  if (!model::RemoteModelUri(dir) && std::filesystem::exists(path)) {
    K3_ASSIGN_OR_RETURN(std::string text, ReadFileToString(path));
    K3_ASSIGN_OR_RETURN(media->processor, image::ParseProcessorConfig(text, path));
  } else {
    spdlog::info(
        "images: no preprocessor_config.json beside the checkpoint; using Kimi K3's published values");
  }
  media->limits.max_bytes = config.media_fetch.max_bytes;
  auto fetcher = std::make_shared<MediaFetcher>(config.media_fetch);
  if (fetcher->AllowsAnyUrl())
    media->fetch = [fetcher](const std::string& url) { return fetcher->Fetch(url); };
  spdlog::info(
      "images: on (at most {} per prompt; URLs: data:{}{})", media->max_images_per_prompt,
      config.media_fetch.allowed_domains.empty() ? "" : ", http(s) of --allowed-media-domains",
      config.media_fetch.allowed_local_path.empty() ? "" : ", file: under --allowed-local-media-path");
  return std::shared_ptr<const api::MediaSettings>(std::move(media));
}

Status Load(const ServeConfig& config, OpenAiService* service, const std::string& served_name,
            std::function<void(const Status&)> on_failure, model::LoadProgress* progress, Loaded* out) {
  progress->SetPhase("resolving the model");
  K3_ASSIGN_OR_RETURN(std::string dir, ResolveModelDir(config));
  const auto t0 = std::chrono::steady_clock::now();
  out->pool = std::make_unique<ThreadPool>(static_cast<size_t>(config.threads));
  std::optional<std::string> remote_generation_config;
  if (model::RemoteModelUri(dir)) {
    model::RemoteModelFiles files;
    K3_RETURN_IF_ERROR(
        LoadModel(config, dir, out->pool.get(), std::move(on_failure), progress, &out->member, &files));
    if (config.tokenizer_dir.empty()) {
      K3_ASSIGN_OR_RETURN(tokenizer::Tokenizer tok, tokenizer::Tokenizer::LoadFromContents(
                                                        dir, files.tokenizer_model, files.tokenizer_config));
      out->tokenizer = std::make_unique<tokenizer::Tokenizer>(std::move(tok));
    }
    remote_generation_config = std::move(files.generation_config);
  } else {
    progress->SetPhase(config.group.world > 1
                           ? fmt::format("joining the group of {} ranks and loading this rank's shard of {}",
                                         config.group.world, dir)
                           : fmt::format("loading {}", dir));
    if (config.tokenizer_dir.empty()) {
      K3_ASSIGN_OR_RETURN(tokenizer::Tokenizer tok, tokenizer::Tokenizer::LoadFromDirectory(dir));
      out->tokenizer = std::make_unique<tokenizer::Tokenizer>(std::move(tok));
    }
    K3_RETURN_IF_ERROR(
        LoadModel(config, dir, out->pool.get(), std::move(on_failure), progress, &out->member, nullptr));
  }
  model::Model* model = out->member.model.get();
  if (!config.tokenizer_dir.empty()) {  // --tokenizer: the tokenizer files of another local directory
    Result<tokenizer::Tokenizer> tok = tokenizer::Tokenizer::LoadFromDirectory(config.tokenizer_dir);
    if (!tok.ok()) return InvalidArgument("--tokenizer {}: {}", config.tokenizer_dir, tok.status().message());
    if (model != nullptr && static_cast<int64_t>(tok->vocab_size()) > model->config().vocab_size) {
      return InvalidArgument("--tokenizer {}: its {} tokens do not fit the model's vocabulary of {}",
                             config.tokenizer_dir, tok->vocab_size(), model->config().vocab_size);
    }
    out->tokenizer = std::make_unique<tokenizer::Tokenizer>(std::move(*tok));
    spdlog::info("tokenizer from {}", config.tokenizer_dir);
  }
  const io::ModelConfig& cfg = model->config();
  const model::ParameterCount params = model::CountParameters(cfg);
  spdlog::info("model {} ({}): {} parameters, {} active per token, vocab {}, {} layers, loaded in {:.2f} s",
               dir, cfg.model_type, Count(params.total), Count(params.active_per_token), cfg.vocab_size,
               cfg.num_layers, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  progress->SetPhase("starting the engine (memory plan, cache)");
  engine::EngineOptions engine_options = config.engine;
  engine_options.image_encoder = model->image_encoder();
  if (out->member.leader != nullptr) {  // a failed step is the group's failure, which on_failure reports
    engine_options.on_fatal = [](const Status&) {};
  }
  K3_ASSIGN_OR_RETURN(out->engine, engine::Engine::Create(model, out->tokenizer.get(), engine_options));
  const engine::EngineOptions& eo = out->engine->options();
  cache::KvCacheOptions plan_options;  // the engine's split of the budget, repeated for the log
  plan_options.bytes = eo.kv_cache_bytes;
  plan_options.block_tokens = eo.block_tokens;
  plan_options.max_seqs = eo.max_num_seqs;
  plan_options.prefix_caching = eo.enable_prefix_caching;
  plan_options.cache_dtype = eo.kv_cache_dtype;
  const Result<cache::KvCacheLayout> layout = cache::PlanKvCache(model->state_config(), plan_options);
  const int64_t mla_bytes_per_token = layout.ok() ? layout->mla_bytes_per_token : 0;
  const int64_t cache_tokens = layout.ok() ? layout->num_blocks * eo.block_tokens : 0;
  spdlog::info(
      "memory plan: cache {} (MLA blocks of {} tokens in {}, {} B/token on this rank, room for {} tokens + "
      "KDA "
      "state slots + prefix snapshots), max-model-len {}, max-num-seqs {}, max-num-batched-tokens {}, prefix "
      "caching {} (KDA snapshot every {} tokens), {} model threads",
      Bytes(eo.kv_cache_bytes), eo.block_tokens, model::CacheDtypeName(eo.kv_cache_dtype),
      mla_bytes_per_token, cache_tokens, eo.max_model_len, eo.max_num_seqs, eo.max_num_batched_tokens,
      eo.enable_prefix_caching ? "on" : "off", eo.prefix_snapshot_interval, out->pool->num_threads());

  api::ServerContext ctx;
  K3_ASSIGN_OR_RETURN(ctx.sampling_defaults, GenerationDefaults(config, dir, remote_generation_config));
  ctx.tokenizer = out->tokenizer.get();
  ctx.served_model_name = served_name;
  ctx.served_model_aliases = config.served_model_aliases;
  ctx.max_logprobs = config.max_logprobs;
  ctx.max_model_len = eo.max_model_len;
  for (const char* name : {"<|end_of_msg|>", "[EOS]"}) {
    auto id = out->tokenizer->SpecialId(name);
    if (id.ok()) ctx.eos_token_ids.push_back(static_cast<int32_t>(*id));
  }
  ctx.created = static_cast<int64_t>(std::time(nullptr));
  K3_ASSIGN_OR_RETURN(ctx.media, MediaFor(config, dir, model->image_encoder() != nullptr));
  ctx.enable_auto_tool_choice = config.enable_auto_tool_choice;
  ctx.reasoning_parser = config.reasoning_parser;
  ctx.response_role = config.response_role;
  ctx.force_include_usage = config.force_include_usage;
  ctx.return_tokens_as_token_ids = config.return_tokens_as_token_ids;
  spdlog::info("tool_choice auto {}; reasoning {}",
               config.enable_auto_tool_choice ? "on (tool-call parser kimi_k3)"
                                              : "refused with HTTP 400 (--tool-call-parser none)",
               config.reasoning_parser ? "in reasoning_content (reasoning parser kimi_k3)"
                                       : "left in content (--reasoning-parser none)");
  service->SetReady(out->engine.get(), std::move(ctx));
  return OkStatus();
}

// Ranks > 0: no HTTP; join, load, follow rank 0's steps.
int RunWorkerRank(const ServeConfig& config) {
  auto dir = ResolveModelDir(config);
  if (!dir.ok()) {
    spdlog::error("{}", dir.status().ToString());
    return 1;
  }
  ThreadPool pool(static_cast<size_t>(config.threads));
  model::GroupMember member;
  Status loaded = LoadModel(config, *dir, &pool, nullptr, nullptr, &member, nullptr);
  if (!loaded.ok()) {
    spdlog::error("rank {}: {}", config.group.rank, loaded.ToString());
    return kExitGroupLost;
  }
  spdlog::info("rank {}: shard loaded ({} threads); following rank 0", config.group.rank, pool.num_threads());
  Status done = model::RunWorker(*member.model, *member.comm);
  if (!done.ok()) {
    spdlog::error("rank {}: the group is lost: {}", config.group.rank, done.ToString());
    spdlog::default_logger()->flush();
    return kExitGroupLost;
  }
  spdlog::info("rank {}: rank 0 shut the group down", config.group.rank);
  return 0;
}

}  // namespace

int RunServe(const ServeConfig& config) {
  if (!config.group.serves_http()) return RunWorkerRank(config);
  std::string served_name = config.served_model_name;
  if (served_name.empty()) {
    served_name = config.model_dir.empty()
                      ? std::string("tiny-k3")
                      : std::filesystem::path(config.model_dir).lexically_normal().filename().string();
    if (served_name.empty()) served_name = config.model_dir;
  }
  const OpenFilesLimit files = RaiseOpenFilesLimit();  // one descriptor per connection, idle ones too
  spdlog::info("open files limit: {}{} (hard {})", files.soft,
               files.raised ? fmt::format(", raised from {}", files.before) : std::string(), files.hard);
  OpenAiService service(served_name, config.version);
  service.SetLogRequests(config.log_requests, config.max_log_len);
  model::LoadProgress progress;  // /health's 503 body while loading (declared before the server: outlives it)
  service.SetLoadProgress(&progress);
  Router router;
  service.AddRoutes(&router);
  ServerOptions http = config.http;
  http.handle_signals = true;
  auto server = HttpServer::Start(http, std::move(router));
  if (!server.ok()) {
    spdlog::error("{}", server.status().message());
    return 1;
  }
  spdlog::info("listening on {}://{} (model \"{}\" loading; /health is 503 until it is ready){}",
               http.tls.enabled() ? "https" : "http", (*server)->address(), served_name,
               http.api_key.empty() ? "" : ", API key required on /v1/*");

  // Load on a helper thread so SIGTERM / SIGINT during a long load still ends the process promptly.
  Loaded loaded;
  std::atomic<bool> load_done{false};
  std::atomic<bool> load_failed{false};
  std::atomic<bool> group_lost{false};
  // The group broke (a rank died or stopped answering): /health turns 503, requests end with 503, and the
  // process stops with kExitGroupLost instead of serving from a group that cannot compute.
  auto on_group_failure = [&](const Status& s) {
    if (group_lost.exchange(true)) return;
    spdlog::error("the model's group of ranks is lost: {}", s.ToString());
    service.SetDraining();
    (*server)->RequestStop();
  };
  std::thread loader([&] {
    Status s = Load(config, &service, served_name, on_group_failure, &progress, &loaded);
    if (!s.ok()) {
      spdlog::error("loading failed: {}", s.ToString());
      load_failed.store(true);
      // Done before the stop request: the main thread reads load_done as soon as it wakes, and a load
      // that failed fast was taken for a signal during loading (exit 0 instead of 1).
      load_done.store(true);
      (*server)->RequestStop();
    } else {
      spdlog::info("ready: serving \"{}\" on http://{}", served_name, (*server)->address());
      load_done.store(true);
    }
  });
  const int signal_number = (*server)->WaitForStopSignal();
  if (!load_done.load()) {
    spdlog::warn("signal {} while loading: exiting", signal_number);
    spdlog::default_logger()->flush();
    std::_Exit(0);
  }
  loader.join();
  if (load_failed.load()) {
    (*server)->Stop();
    return 1;
  }

  if (group_lost.load()) {
    // For a moment keep answering: /health and new requests get 503 (what a probe or a load balancer
    // should see) rather than connection refused, then stop.
    std::this_thread::sleep_for(kGroupLostLinger);
  }
  spdlog::info("signal {}: stopped accepting; finishing {} request(s) in flight (up to {} s)", signal_number,
               (*server)->active_exchanges(), std::chrono::duration<double>(config.shutdown_timeout).count());
  service.SetDraining();
  const bool drained = (*server)->Drain(config.shutdown_timeout);
  if (!drained) spdlog::warn("shutdown timeout: aborting {} request(s)", (*server)->active_exchanges());
  loaded.engine->Shutdown(/*drain=*/false);
  (*server)->Stop();
  loaded.engine.reset();  // releases the exchanges its callbacks held, before the server goes
  server->reset();
  if (loaded.member.leader != nullptr) {
    const Status workers = loaded.member.leader->Shutdown();  // the other ranks leave with success
    if (!workers.ok() && !group_lost.load()) spdlog::warn("shutting the group down: {}", workers.ToString());
  }
  if (group_lost.load()) {
    spdlog::error("exiting with code {}: the group of ranks was lost", kExitGroupLost);
    return kExitGroupLost;
  }
  spdlog::info("shut down");
  return 0;
}

}  // namespace k3::server
