// RunServe: the whole life of `k3 serve`. Listens first (so /health answers 503 while loading), loads the
// tokenizer and model, starts the engine, serves, and on SIGTERM / SIGINT stops accepting, lets requests
// in flight finish for up to shutdown_timeout, aborts the rest and returns 0.
//
// In a group of ranks (config.group, spec/distributed.md) rank 0 does all of that over a LeaderModel;
// every other rank serves no HTTP: it joins, loads its shard and runs RunWorker until rank 0 shuts the
// group down (exit 0) or the group breaks (exit kExitGroupLost, the log naming the lost rank).
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "src/api/generation_config.h"
#include "src/base/status.h"
#include "src/dist/launch.h"
#include "src/engine/engine.h"
#include "src/model/remote_checkpoint.h"
#include "src/server/http_server.h"
#include "src/server/media_fetch.h"
#include "src/storage/open_store.h"

namespace k3::server {

struct ServeConfig {
  ServerOptions http;
  std::string model_dir;                               // empty: resolve_model()
  std::function<Result<std::string>()> resolve_model;  // e.g. the embedded tiny-k3
  std::string served_model_name;                       // empty: the model directory's name
  std::vector<std::string> served_model_aliases;       // more names requests may use (vLLM's list)
  int32_t max_logprobs = 20;                           // --max-logprobs
  bool log_requests = false;                           // --enable-log-requests
  int64_t max_log_len = -1;  // --max-log-len: >= 0 logs each prompt cut to N characters / ids
  // Default sampling: "auto" (the model folder's generation_config.json, when present), "vllm" (none) or
  // a folder holding one; the override is layered on top (--override-generation-config).
  std::string generation_config = "auto";
  api::SamplingDefaults override_generation_config;
  engine::EngineOptions engine;
  bool enable_auto_tool_choice = true;  // false: tool_choice "auto" with tools is a 400
  bool reasoning_parser = true;         // false: reasoning text stays in content
  int threads = 0;                      // model worker threads (0: all cores)
  std::chrono::milliseconds shutdown_timeout{30'000};
  // vLLM serve flags (apps/k3/serve_vllm_flags.h): --response-role, --tokenizer (tokenizer files from this
  // local directory; empty: the model's), --enable-force-include-usage, --return-tokens-as-token-ids.
  std::string response_role = "assistant";
  std::string tokenizer_dir;
  bool force_include_usage = false;
  bool return_tokens_as_token_ids = false;
  std::string version;
  dist::GroupPlan group;  // world 1: one process
  // Called once every rank has loaded its shard (the collectives watch the ranks from then on).
  std::function<void()> on_group_formed;
  // A model_dir that is a URI (s3://bucket/prefix) is read into memory through the storage layer:
  // S3 settings (unset fields from the environment) and the read parallelism (--load-concurrency,
  // --load-max-inflight-mib).
  storage::StoreOptions store;
  model::RemoteLoadOptions remote_load;
  // Images (a checkpoint with a vision tower): at most this many per prompt (--limit-mm-per-prompt), and
  // where http(s) / file: image URLs may be read from (--allowed-media-domains, --allowed-local-media-path).
  int64_t max_images_per_prompt = 16;
  MediaFetchOptions media_fetch;
};

// Exit code of a rank whose group lost a rank (a crash, a kill, a network partition) or never formed.
inline constexpr int kExitGroupLost = 3;
// How long rank 0 keeps answering 503 after its group broke, before it exits.
inline constexpr std::chrono::milliseconds kGroupLostLinger{2000};

// Returns the process exit code (0 after a signal-initiated shutdown, 1 when listening or loading fails).
int RunServe(const ServeConfig& config);

}  // namespace k3::server
