// OpenAiService: the vLLM-compatible routes over an Engine.
//
//   GET  /health /ping           200 once the model is loaded and the engine loop is alive, else 503 (while
//                                loading, the body's "loading" object: phase, bytes read, rate, ETA)
//   GET  /version                {"version": "..."}
//   GET  /metrics                Prometheus text (vLLM names)
//   GET  /v1/models
//   POST /v1/chat/completions    streaming (SSE) and not
//   POST /v1/completions
//   POST /v1/responses           the Responses API (src/api/responses.h), streaming typed events and not
//   POST /v1/embeddings          pooled final hidden states (src/api/embeddings.h), one engine request per
//                                input (prefill only)
//   POST /tokenize /detokenize
//   POST /invocations /reset_prefix_cache /sleep /wake_up, GET /server_info /load /is_sleeping
//   /openapi.json (vllm_routes.cc), and 404s naming the vLLM routes not provided here (LoRA, pooling, ...)
//
// The routes exist from the start (so /health answers 503 while the model loads); SetReady switches
// them on. Engine events arrive on the engine thread and are posted onto the connection's strand, where
// the api responder turns them into JSON. A client that disconnects cancels its request.
#pragma once

#include <atomic>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "src/api/openai.h"
#include "src/engine/engine.h"
#include "src/model/load_progress.h"
#include "src/server/router.h"
#include "src/server/serving_metrics.h"

namespace k3::server {

class OpenAiService {
 public:
  OpenAiService(std::string served_model_name, std::string version);
  ~OpenAiService();

  // Adds every route; the handlers use this service, which must outlive the server.
  void AddRoutes(Router* router);
  // From now on requests are served. The engine and ctx.tokenizer must outlive the server's exchanges.
  void SetReady(engine::Engine* engine, api::ServerContext ctx);
  // One info line per accepted generation request (vLLM's --enable-log-requests): id, route, prompt
  // tokens, max_tokens, n, stream. The prompt itself (text and ids, request_log.h) only when
  // max_log_len >= 0 (--max-log-len N), cut to N characters and N ids.
  void SetLogRequests(bool on, int64_t max_log_len = -1) {
    log_requests_ = on;
    max_log_len_ = max_log_len;
  }
  // While not ready, /health's 503 body reports this load's progress (it must outlive the server).
  void SetLoadProgress(const model::LoadProgress* progress) { load_progress_.store(progress); }
  // /health answers 503 from now on (shutdown); requests in flight continue.
  void SetDraining() { draining_.store(true); }

  ServingMetrics& metrics() { return metrics_; }
  // (method, path) of every route /openapi.json documents.
  static std::vector<std::pair<std::string, std::string>> DocumentedRoutes();

  struct Ready {
    engine::Engine* engine = nullptr;
    api::ServerContext ctx;
  };

 private:
  void Health(const std::shared_ptr<Exchange>& ex) const;
  void Chat(const std::shared_ptr<Exchange>& ex);
  void Completion(const std::shared_ptr<Exchange>& ex);
  void Responses(const std::shared_ptr<Exchange>& ex);
  void Messages(const std::shared_ptr<Exchange>& ex);  // Anthropic's /v1/messages
  void Embedding(const std::shared_ptr<Exchange>& ex);
  void AddVllmRoutes(Router* router);  // vllm_routes.cc

  std::string served_model_name_;
  std::string version_;
  std::unique_ptr<Ready> ready_storage_;
  std::atomic<const Ready*> ready_{nullptr};
  std::atomic<bool> draining_{false};
  std::atomic<const model::LoadProgress*> load_progress_{nullptr};
  // ", prompt: ..., prompt_token_ids: [...]" with --max-log-len, else "".
  std::string LoggedPrompt(const Ready& ready, std::span<const int32_t> ids) const;

  bool log_requests_ = false;
  int64_t max_log_len_ = -1;
  ServingMetrics metrics_;
};

}  // namespace k3::server
