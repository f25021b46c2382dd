// The routes a vLLM deployment probes or uses beyond the OpenAI API (OpenAiService::AddVllmRoutes):
//
//   POST /invocations         SageMaker's inference path: a chat body (messages), a completion body
//                             (prompt) or an embedding body (input), answered as the matching /v1 route
//   POST /reset_prefix_cache  drops every prefix-cache snapshot (running requests keep their blocks)
//   GET  /server_info         the served names and the engine's resolved limits, as JSON
//   GET  /load                {"server_load": requests running + waiting}
//   GET  /openapi.json        an OpenAPI 3.1 document of the routes this server answers
//   POST /sleep               sleep mode: new requests get 503, the queued ones finish, then the prefix
//                             cache and the paged cache memory are freed (answers once that is done;
//                             vLLM's ?level= is accepted: weights stay mapped at every level)
//   POST /wake_up             requests are served again;  GET /is_sleeping  {"is_sleeping": bool}
//   POST /v1/chat/completions/render, /v1/completions/render   the prompt token ids and text a request
//                             would be given, without generating (api::RenderChatCompletion)
//
// and, for vLLM routes this engine does not provide (LoRA, pooling models, audio, ...), a 404
// whose message names the route as unsupported and says why, instead of the plain "no route".
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "src/api/openai.h"
#include "src/server/error_json.h"
#include "src/server/openai_service.h"

namespace k3::server {
namespace {

struct RouteDoc {
  const char* method;
  const char* path;
  const char* summary;
};

// Every route this server answers (kept in step with AddRoutes and AddVllmRoutes; server tests compare
// the two).
constexpr RouteDoc kServedRoutes[] = {
    {"GET", "/health", "200 once the model is loaded and the engine runs, else 503"},
    {"GET", "/ping", "SageMaker's health probe (as /health)"},
    {"GET", "/version", "the server version"},
    {"GET", "/metrics", "Prometheus metrics (vLLM names)"},
    {"GET", "/v1/models", "the served model names"},
    {"POST", "/v1/chat/completions",
     "chat completions (streaming and not), tools, reasoning, structured output"},
    {"POST", "/v1/completions", "text completions: one prompt or a list, echo, logprobs, prompt_logprobs"},
    {"POST", "/v1/responses",
     "the Responses API: reasoning, message and function-call items, typed stream events"},
    {"POST", "/v1/messages",
     "Anthropic's Messages API: thinking, text and tool_use blocks, named stream events"},
    {"POST", "/v1/messages/count_tokens", "the prompt tokens of a Messages request"},
    {"POST", "/v1/embeddings",
     "embeddings: the mean of the final-normed hidden states over the input, L2-normalised"},
    {"POST", "/tokenize", "text or messages to token ids"},
    {"POST", "/detokenize", "token ids to text"},
    {"POST", "/v1/chat/completions/render", "a chat request's prompt token ids and text, without generating"},
    {"POST", "/v1/completions/render", "each completion prompt's token ids and text, without generating"},
    {"POST", "/invocations", "SageMaker's inference path: a chat, completion or embedding body"},
    {"POST", "/reset_prefix_cache", "drop every prefix-cache snapshot"},
    {"GET", "/server_info", "served names and the engine's limits"},
    {"GET", "/load", "requests running and waiting"},
    {"POST", "/sleep", "sleep mode: refuse new requests, finish the queued ones, free the cache memory"},
    {"POST", "/wake_up", "leave sleep mode"},
    {"GET", "/is_sleeping", "whether the server sleeps"},
    {"GET", "/openapi.json", "this document"},
};

struct Unsupported {
  const char* path;
  const char* why;
};

// vLLM routes that are not served here, with the reason a client gets.
constexpr Unsupported kUnsupportedRoutes[] = {
    {"/pooling", "pooling models are not served"},
    {"/classify", "pooling models are not served"},
    {"/score", "pooling models are not served"},
    {"/v1/score", "pooling models are not served"},
    {"/rerank", "pooling models are not served"},
    {"/v1/rerank", "pooling models are not served"},
    {"/v2/rerank", "pooling models are not served"},
    {"/v1/audio/transcriptions", "Kimi K3 takes no audio"},
    {"/v1/audio/translations", "Kimi K3 takes no audio"},
    {"/v1/load_lora_adapter", "LoRA adapters are not supported"},
    {"/v1/unload_lora_adapter", "LoRA adapters are not supported"},
    {"/collective_rpc", "a vLLM development route"},
    {"/start_profile", "profiling routes are not provided"},
    {"/stop_profile", "profiling routes are not provided"},
    {"/scale_elastic_ep", "elastic expert parallelism is not supported"},
    {"/is_scaling_elastic_ep", "elastic expert parallelism is not supported"},
};

HttpResponse Json(int status, const nlohmann::json& body) {
  HttpResponse r;
  r.status = status;
  r.body = body.dump();
  return r;
}

nlohmann::json OpenApiDocument(const std::string& version) {
  nlohmann::json paths = nlohmann::json::object();
  for (const RouteDoc& route : kServedRoutes) {
    std::string method = route.method;
    for (char& c : method) c = static_cast<char>(c - 'A' + 'a');
    paths[route.path][method] = {{"summary", route.summary},
                                 {"responses", {{"200", {{"description", "OK"}}}}}};
  }
  return {{"openapi", "3.1.0"},
          {"info", {{"title", "k3 serve: OpenAI- and vLLM-compatible API"}, {"version", version}}},
          {"paths", std::move(paths)}};
}

}  // namespace

std::vector<std::pair<std::string, std::string>> OpenAiService::DocumentedRoutes() {
  std::vector<std::pair<std::string, std::string>> out;
  for (const RouteDoc& route : kServedRoutes) out.emplace_back(route.method, route.path);
  return out;
}

void OpenAiService::AddVllmRoutes(Router* router) {
  using RenderEndpoint = std::optional<std::string> (*)(std::string_view, const api::ServerContext&,
                                                        std::string_view, api::ApiError*);
  for (auto [path, fn] :
       {std::pair<const char*, RenderEndpoint>{"/v1/chat/completions/render", &api::RenderChatCompletion},
        std::pair<const char*, RenderEndpoint>{"/v1/completions/render", &api::RenderCompletion}}) {
    router->Add("POST", path, [this, fn = fn](std::shared_ptr<Exchange> ex) {
      const Ready* ready = ready_.load(std::memory_order_acquire);
      if (ready == nullptr) return ex->Respond(ErrorResponse(503, "the model is still loading"));
      api::ApiError error;
      auto body = fn(ex->request().body, ready->ctx, ex->request().request_id, &error);
      HttpResponse response;
      response.status = body ? 200 : error.http_status;
      response.body = body ? std::move(*body) : api::ErrorBody(error);
      ex->Respond(std::move(response));
    });
  }
  router->Add("POST", "/invocations", [this](std::shared_ptr<Exchange> ex) {
    const nlohmann::json body =
        nlohmann::json::parse(ex->request().body, nullptr, /*allow_exceptions=*/false);
    if (body.is_object() && body.contains("messages")) return Chat(ex);
    if (body.is_object() && body.contains("prompt")) return Completion(ex);
    if (body.is_object() && body.contains("input")) return Embedding(ex);
    ex->Respond(ErrorResponse(400,
                              "/invocations takes a chat completion body (with `messages`), a completion "
                              "body (with `prompt`) or an embedding body (with `input`)"));
  });
  router->Add("POST", "/reset_prefix_cache", [this](std::shared_ptr<Exchange> ex) {
    const Ready* ready = ready_.load(std::memory_order_acquire);
    if (ready == nullptr) return ex->Respond(ErrorResponse(503, "the model is still loading"));
    const bool queued = ready->engine->ResetPrefixCache([ex](int64_t dropped) {
      ex->Post([ex, dropped] { ex->Respond(Json(200, {{"dropped_snapshots", dropped}})); });
    });
    if (!queued) ex->Respond(ErrorResponse(503, "the engine has stopped"));
  });
  router->Add("GET", "/server_info", [this](std::shared_ptr<Exchange> ex) {
    const Ready* ready = ready_.load(std::memory_order_acquire);
    nlohmann::json info = {
        {"version", version_}, {"served_model_name", served_model_name_}, {"ready", false}};
    if (ready != nullptr) {
      const engine::EngineOptions& options = ready->engine->options();
      nlohmann::json names = nlohmann::json::array({ready->ctx.served_model_name});
      for (const std::string& alias : ready->ctx.served_model_aliases) names.push_back(alias);
      info["ready"] = true;
      info["served_model_names"] = std::move(names);
      info["max_model_len"] = options.max_model_len;
      info["max_num_seqs"] = options.max_num_seqs;
      info["max_num_batched_tokens"] = options.max_num_batched_tokens;
      info["block_size"] = options.block_tokens;
      info["kv_cache_bytes"] = options.kv_cache_bytes;
      info["enable_prefix_caching"] = options.enable_prefix_caching;
      info["max_logprobs"] = ready->ctx.max_logprobs;
      info["reasoning_parser"] = ready->ctx.reasoning_parser;
      info["enable_auto_tool_choice"] = ready->ctx.enable_auto_tool_choice;
    }
    ex->Respond(Json(200, info));
  });
  router->Add("GET", "/load", [this](std::shared_ptr<Exchange> ex) {
    const Ready* ready = ready_.load(std::memory_order_acquire);
    int64_t load = 0;
    if (ready != nullptr) {
      const engine::EngineMetrics m = ready->engine->Metrics();
      load = m.num_running + m.num_waiting;
    }
    ex->Respond(Json(200, {{"server_load", load}}));
  });
  router->Add("POST", "/sleep", [this](std::shared_ptr<Exchange> ex) {
    const Ready* ready = ready_.load(std::memory_order_acquire);
    if (ready == nullptr) return ex->Respond(ErrorResponse(503, "the model is still loading"));
    const bool queued = ready->engine->Sleep([ex] {
      ex->Post([ex] { ex->Respond(Json(200, {{"is_sleeping", true}})); });
    });
    if (!queued) ex->Respond(ErrorResponse(503, "the engine has stopped"));
  });
  router->Add("POST", "/wake_up", [this](std::shared_ptr<Exchange> ex) {
    const Ready* ready = ready_.load(std::memory_order_acquire);
    if (ready == nullptr) return ex->Respond(ErrorResponse(503, "the model is still loading"));
    ready->engine->WakeUp();
    ex->Respond(Json(200, {{"is_sleeping", false}}));
  });
  router->Add("GET", "/is_sleeping", [this](std::shared_ptr<Exchange> ex) {
    const Ready* ready = ready_.load(std::memory_order_acquire);
    ex->Respond(Json(200, {{"is_sleeping", ready != nullptr && ready->engine->IsSleeping()}}));
  });
  router->Add("GET", "/openapi.json",
              [this](std::shared_ptr<Exchange> ex) { ex->Respond(Json(200, OpenApiDocument(version_))); });
  for (const Unsupported& route : kUnsupportedRoutes) {
    const std::string message = fmt::format("{} is not supported by this server: {}", route.path, route.why);
    for (const char* method : {"GET", "POST"}) {
      router->Add(method, route.path, [message](std::shared_ptr<Exchange> ex) {
        HttpResponse r = ErrorResponse(404, message);
        ex->Respond(std::move(r));
      });
    }
  }
}

}  // namespace k3::server
