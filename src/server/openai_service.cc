// OpenAiService: request parsing (src/api) -> Engine::Submit -> events on the connection's strand ->
// api responders -> SSE chunks or one JSON body; metrics measured on the way.
#include "src/server/openai_service.h"

#include <chrono>
#include <ctime>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "src/api/anthropic.h"
#include "src/api/embeddings.h"
#include "src/api/responses.h"
#include "src/server/error_json.h"
#include "src/server/request_id.h"
#include "src/server/request_log.h"

namespace k3::server {
namespace {

using Clock = std::chrono::steady_clock;

HttpResponse JsonResponse(int status, std::string body) {
  HttpResponse r;
  r.status = status;
  r.body = std::move(body);
  return r;
}

HttpResponse ApiErrorResponse(const api::ApiError& error) {
  return JsonResponse(error.http_status, api::ErrorBody(error));
}

HttpResponse NotReady() {
  return ErrorResponse(503, "the model is still loading; retry when /health is 200");
}

// An OpenAI-shaped error response re-shaped as Anthropic's (the /v1/messages routes).
HttpResponse AnthropicError(HttpResponse response) {
  const auto body = nlohmann::json::parse(response.body, nullptr, /*allow_exceptions=*/false);
  std::string message = "error";
  if (body.is_object() && body.contains("error") && body["error"].is_object())
    message = body["error"].value("message", message);
  response.body = api::AnthropicErrorBody(response.status, message);
  return response;
}

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

int32_t NumPrompts(const api::ChatPlan&) { return 1; }
int32_t NumPrompts(const api::ResponsesPlan&) { return 1; }
int32_t NumPrompts(const api::AnthropicPlan&) { return 1; }
int32_t NumPrompts(const api::EmbeddingPlan& plan) {
  return std::max<int32_t>(static_cast<int32_t>(plan.inputs.size()), 1);
}
int32_t NumPrompts(const api::CompletionPlan& plan) {
  return std::max<int32_t>(static_cast<int32_t>(plan.prompts.size()), 1);
}

// One generation request in flight: owns the plan's responder and feeds it engine events on the strand.
template <typename Plan, typename Responder>
class Generation : public std::enable_shared_from_this<Generation<Plan, Responder>> {
 public:
  Generation(std::shared_ptr<Exchange> ex, Plan plan, const api::ServerContext& ctx, std::string id,
             ServingMetrics* metrics)
      : ex_(std::move(ex)),
        stream_(plan.stream),
        n_(std::max<int32_t>(plan.n, 1) * NumPrompts(plan)),
        responder_(plan, ctx, std::move(id), static_cast<int64_t>(std::time(nullptr))),
        metrics_(metrics),
        last_token_(n_) {}

  // Submits every request (one per prompt; choice c of request k becomes choice k * choices_per_request
  // + c) and wires up events and cancellation. Answers the exchange itself on every path: when a Submit
  // fails, the requests already queued are cancelled and the error is the answer.
  void Start(engine::Engine* engine, std::vector<engine::Request> requests) {
    auto self = this->shared_from_this();
    const int32_t per_request = n_ / std::max<int32_t>(static_cast<int32_t>(requests.size()), 1);
    remaining_ = requests.size();
    std::vector<uint64_t> ids;
    for (size_t k = 0; k < requests.size(); ++k) {
      requests[k].client_id = ex_->request().request_id;
      const int32_t offset = static_cast<int32_t>(k) * per_request;
      auto id = engine->Submit(std::move(requests[k]), [self, offset](const engine::Event& event) {
        self->ex_->Post([self, offset, event = engine::Event(event)]() mutable {
          event.choice += offset;
          self->OnRequestEvent(std::move(event));
        });
      });
      if (!id.ok()) {
        failed_ = true;
        for (uint64_t queued : ids) engine->Cancel(queued);
        return RespondSubmitError(id.status());
      }
      ids.push_back(*id);
    }
    ex_->OnClientGone([engine, ids] {
      for (uint64_t id : ids) engine->Cancel(id);
    });
  }

 private:
  void RespondSubmitError(const Status& s) {
    HttpResponse r;
    if (s.code() == StatusCode::kResourceExhausted) {
      r = ErrorResponse(429, fmt::format("the server is busy: {}", s.message()));
      r.headers.emplace_back("Retry-After", "1");
    } else if (s.code() == StatusCode::kInvalidArgument) {
      r = ErrorResponse(400, s.message());
    } else if (s.code() == StatusCode::kUnavailable) {
      r = ErrorResponse(503, fmt::format("the engine cannot take requests: {}", s.message()));
    } else {
      r = ErrorResponse(
          500, fmt::format("the engine failed to queue the request (a bug in k3stack): {}", s.ToString()));
    }
    if constexpr (requires(const api::ApiError& e) { Responder::FailureBody(e); })
      r = AnthropicError(std::move(r));
    ex_->Respond(std::move(r));
  }

  // One engine request's event: its usage is added up, and only the last request's end ends the whole.
  void OnRequestEvent(engine::Event event) {
    if (failed_) return;  // answered with the Submit error; the cancelled requests' events are dropped
    if (event.request_done) {
      usage_.prompt_tokens += event.usage.prompt_tokens;
      usage_.cached_prompt_tokens += event.usage.cached_prompt_tokens;
      usage_.completion_tokens += event.usage.completion_tokens;
      event.usage = usage_;
      event.request_done = --remaining_ == 0;
    }
    OnEvent(event);
  }

  void OnEvent(const engine::Event& event) {
    const auto now = Clock::now();
    if (!event.tokens.empty() && event.choice >= 0 && event.choice < n_) {
      if (!first_token_seen_) {
        first_token_seen_ = true;
        metrics_->ObserveTimeToFirstToken(Seconds(now - ex_->request().received));
      }
      auto& last = last_token_[event.choice];
      if (last != Clock::time_point{}) {
        const double per_token = Seconds(now - last) / static_cast<double>(event.tokens.size());
        for (size_t i = 0; i < event.tokens.size(); ++i) metrics_->ObserveInterTokenLatency(per_token);
      }
      last = now;
    }
    if (event.finish != engine::FinishReason::kNone) metrics_->CountFinished(event.finish);
    std::vector<std::string> payloads = responder_.OnEvent(event);
    if (event.request_done) metrics_->ObserveEndToEnd(Seconds(now - ex_->request().received));
    if (stream_) {
      // Headers go out with the first event, so a failed Submit can still answer with a status.
      if (!stream_started_) {
        stream_started_ = true;
        ex_->StartEvents();
      }
      if (event.request_done && Responder::kDoneMarker) payloads.emplace_back("[DONE]");
      if (!payloads.empty()) ex_->SendEvents(std::move(payloads));
      if (event.request_done) ex_->EndEvents();
      return;
    }
    if (!event.request_done) return;
    if (responder_.failure()) {
      if constexpr (requires(const api::ApiError& e) { Responder::FailureBody(e); }) {  // its own error shape
        ex_->Respond(
            JsonResponse(responder_.failure()->http_status, Responder::FailureBody(*responder_.failure())));
      } else {
        ex_->Respond(ApiErrorResponse(*responder_.failure()));
      }
    } else {
      ex_->Respond(JsonResponse(200, responder_.FinalBody()));
    }
  }

  std::shared_ptr<Exchange> ex_;
  bool stream_;
  int32_t n_;
  Responder responder_;
  ServingMetrics* metrics_;
  bool first_token_seen_ = false;
  bool stream_started_ = false;
  std::vector<Clock::time_point> last_token_;
  size_t remaining_ = 0;  // engine requests not yet done
  bool failed_ = false;
  engine::Usage usage_;  // summed over the requests done
};

}  // namespace

OpenAiService::OpenAiService(std::string served_model_name, std::string version)
    : served_model_name_(std::move(served_model_name)), version_(std::move(version)) {}

OpenAiService::~OpenAiService() = default;

void OpenAiService::SetReady(engine::Engine* engine, api::ServerContext ctx) {
  ready_storage_ = std::make_unique<Ready>(Ready{engine, std::move(ctx)});
  ready_.store(ready_storage_.get(), std::memory_order_release);
}

void OpenAiService::Health(const std::shared_ptr<Exchange>& ex) const {
  const Ready* ready = ready_.load(std::memory_order_acquire);
  if (draining_.load()) {
    ex->Respond(ErrorResponse(503, "the server is shutting down"));
  } else if (ready == nullptr) {
    HttpResponse response = NotReady();
    if (const model::LoadProgress* progress = load_progress_.load()) {
      nlohmann::json body = nlohmann::json::parse(response.body);
      body["loading"] = model::LoadProgressJson(progress->Get());
      response.body = body.dump();
    }
    ex->Respond(std::move(response));
  } else if (!ready->engine->Alive()) {
    ex->Respond(ErrorResponse(503, "the engine loop is not running"));
  } else {
    ex->Respond(JsonResponse(200, ""));
  }
}

void OpenAiService::Chat(const std::shared_ptr<Exchange>& ex) {
  const Ready* ready = ready_.load(std::memory_order_acquire);
  if (ready == nullptr) return ex->Respond(NotReady());
  api::ApiError error;
  auto plan = api::ParseChatCompletion(ex->request().body, ready->ctx, &error);
  if (!plan) return ex->Respond(ApiErrorResponse(error));
  if (log_requests_) {
    spdlog::info("request {}: chat, model {}, {} prompt tokens, max_tokens {}, n {}, stream {}{}",
                 ex->request().request_id, plan->model, plan->prompt_tokens,
                 plan->request.sampling.max_tokens, plan->n, plan->stream,
                 LoggedPrompt(*ready, plan->request.prompt));
  }
  std::vector<engine::Request> requests;
  requests.push_back(std::move(plan->request));
  auto generation = std::make_shared<Generation<api::ChatPlan, api::ChatResponder>>(
      ex, std::move(*plan), ready->ctx, "chatcmpl-" + GenerateRequestId(), &metrics_);
  generation->Start(ready->engine, std::move(requests));
}

void OpenAiService::Responses(const std::shared_ptr<Exchange>& ex) {
  const Ready* ready = ready_.load(std::memory_order_acquire);
  if (ready == nullptr) return ex->Respond(NotReady());
  api::ApiError error;
  auto plan = api::ParseResponses(ex->request().body, ready->ctx, &error);
  if (!plan) return ex->Respond(ApiErrorResponse(error));
  if (log_requests_) {
    spdlog::info("request {}: responses, model {}, {} prompt tokens, max_tokens {}, stream {}{}",
                 ex->request().request_id, plan->chat.model, plan->chat.prompt_tokens,
                 plan->chat.request.sampling.max_tokens, plan->stream,
                 LoggedPrompt(*ready, plan->chat.request.prompt));
  }
  std::vector<engine::Request> requests;
  requests.push_back(std::move(plan->chat.request));
  auto generation = std::make_shared<Generation<api::ResponsesPlan, api::ResponsesResponder>>(
      ex, std::move(*plan), ready->ctx, "resp_" + GenerateRequestId(), &metrics_);
  generation->Start(ready->engine, std::move(requests));
}

void OpenAiService::Messages(const std::shared_ptr<Exchange>& ex) {
  const Ready* ready = ready_.load(std::memory_order_acquire);
  if (ready == nullptr) return ex->Respond(AnthropicError(NotReady()));
  api::ApiError error;
  auto plan = api::ParseAnthropicMessages(ex->request().body, ready->ctx, &error);
  if (!plan) return ex->Respond(JsonResponse(error.http_status, api::AnthropicErrorBody(error)));
  if (log_requests_) {
    spdlog::info("request {}: messages, model {}, {} prompt tokens, max_tokens {}, stream {}{}",
                 ex->request().request_id, plan->chat.model, plan->chat.prompt_tokens,
                 plan->chat.request.sampling.max_tokens, plan->stream,
                 LoggedPrompt(*ready, plan->chat.request.prompt));
  }
  std::vector<engine::Request> requests;
  requests.push_back(std::move(plan->chat.request));
  auto generation = std::make_shared<Generation<api::AnthropicPlan, api::AnthropicResponder>>(
      ex, std::move(*plan), ready->ctx, "msg_" + GenerateRequestId(), &metrics_);
  generation->Start(ready->engine, std::move(requests));
}

void OpenAiService::Completion(const std::shared_ptr<Exchange>& ex) {
  const Ready* ready = ready_.load(std::memory_order_acquire);
  if (ready == nullptr) return ex->Respond(NotReady());
  api::ApiError error;
  auto plan = api::ParseCompletion(ex->request().body, ready->ctx, &error);
  if (!plan) return ex->Respond(ApiErrorResponse(error));
  if (log_requests_) {
    spdlog::info("request {}: completion, model {}, {} prompts, {} prompt tokens, max_tokens {}, stream {}",
                 ex->request().request_id, plan->model, plan->prompts.size(), plan->prompt_tokens,
                 plan->request.sampling.max_tokens, plan->stream);
  }
  std::vector<engine::Request> requests = api::CompletionRequests(&*plan);
  if (log_requests_ && max_log_len_ >= 0) {
    for (size_t i = 0; i < requests.size(); ++i) {
      spdlog::info("request {}: completion prompt {}{}", ex->request().request_id, i,
                   LoggedPrompt(*ready, requests[i].prompt));
    }
  }
  auto generation = std::make_shared<Generation<api::CompletionPlan, api::CompletionResponder>>(
      ex, std::move(*plan), ready->ctx, "cmpl-" + GenerateRequestId(), &metrics_);
  generation->Start(ready->engine, std::move(requests));
}

void OpenAiService::Embedding(const std::shared_ptr<Exchange>& ex) {
  const Ready* ready = ready_.load(std::memory_order_acquire);
  if (ready == nullptr) return ex->Respond(NotReady());
  api::ApiError error;
  auto plan = api::ParseEmbedding(ex->request().body, ready->ctx, &error);
  if (!plan) return ex->Respond(ApiErrorResponse(error));
  if (log_requests_) {
    spdlog::info("request {}: embedding, model {}, {} inputs, {} prompt tokens", ex->request().request_id,
                 plan->model, plan->inputs.size(), plan->prompt_tokens);
  }
  std::vector<engine::Request> requests = api::EmbeddingRequests(*plan);
  auto generation = std::make_shared<Generation<api::EmbeddingPlan, api::EmbeddingResponder>>(
      ex, std::move(*plan), ready->ctx, "embd-" + GenerateRequestId(), &metrics_);
  generation->Start(ready->engine, std::move(requests));
}

std::string OpenAiService::LoggedPrompt(const Ready& ready, std::span<const int32_t> ids) const {
  if (max_log_len_ < 0 || ready.ctx.tokenizer == nullptr) return "";
  return ", " + PromptForLog(*ready.ctx.tokenizer, ids, max_log_len_);
}

void OpenAiService::AddRoutes(Router* router) {
  auto health = [this](std::shared_ptr<Exchange> ex) { Health(ex); };
  router->Add("GET", "/health", health);
  router->Add("GET", "/ping", health);  // SageMaker's probe path
  router->Add("GET", "/version", [this](std::shared_ptr<Exchange> ex) {
    ex->Respond(JsonResponse(200, nlohmann::json{{"version", version_}}.dump()));
  });
  router->Add("GET", "/metrics", [this](std::shared_ptr<Exchange> ex) {
    const Ready* ready = ready_.load(std::memory_order_acquire);
    engine::EngineMetrics m;
    if (ready != nullptr) m = ready->engine->Metrics();
    HttpResponse r;
    r.content_type = "text/plain; version=0.0.4; charset=utf-8";
    r.body = metrics_.Render(ready ? &m : nullptr, served_model_name_);
    ex->Respond(std::move(r));
  });
  router->Add("GET", "/v1/models", [this](std::shared_ptr<Exchange> ex) {
    const Ready* ready = ready_.load(std::memory_order_acquire);
    if (ready == nullptr) return ex->Respond(NotReady());
    ex->Respond(JsonResponse(200, api::ModelsBody(ready->ctx)));
  });
  router->Add("POST", "/v1/chat/completions", [this](std::shared_ptr<Exchange> ex) { Chat(ex); });
  router->Add("POST", "/v1/completions", [this](std::shared_ptr<Exchange> ex) { Completion(ex); });
  router->Add("POST", "/v1/responses", [this](std::shared_ptr<Exchange> ex) { Responses(ex); });
  router->Add("POST", "/v1/messages", [this](std::shared_ptr<Exchange> ex) { Messages(ex); });
  router->Add("POST", "/v1/messages/count_tokens", [this](std::shared_ptr<Exchange> ex) {
    const Ready* ready = ready_.load(std::memory_order_acquire);
    if (ready == nullptr) return ex->Respond(AnthropicError(NotReady()));
    api::ApiError error;
    auto body = api::AnthropicCountTokens(ex->request().body, ready->ctx, &error);
    if (!body) return ex->Respond(JsonResponse(error.http_status, api::AnthropicErrorBody(error)));
    ex->Respond(JsonResponse(200, std::move(*body)));
  });
  router->Add("POST", "/v1/embeddings", [this](std::shared_ptr<Exchange> ex) { Embedding(ex); });
  using TextEndpoint =
      std::optional<std::string> (*)(std::string_view, const api::ServerContext&, api::ApiError*);
  for (auto [path, fn] : {std::pair<const char*, TextEndpoint>{"/tokenize", &api::Tokenize},
                          std::pair<const char*, TextEndpoint>{"/detokenize", &api::Detokenize}}) {
    // fn = fn: clang 14 (scripts/test.sh's sanitizer build) cannot capture a structured binding.
    router->Add("POST", path, [this, fn = fn](std::shared_ptr<Exchange> ex) {
      const Ready* ready = ready_.load(std::memory_order_acquire);
      if (ready == nullptr) return ex->Respond(NotReady());
      api::ApiError error;
      auto body = fn(ex->request().body, ready->ctx, &error);
      if (!body) return ex->Respond(ApiErrorResponse(error));
      ex->Respond(JsonResponse(200, std::move(*body)));
    });
  }
  AddVllmRoutes(router);
}

}  // namespace k3::server
