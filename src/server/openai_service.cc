// OpenAiService: request parsing (src/api) -> Engine::Submit -> events on the connection's strand ->
// api responders -> SSE chunks or one JSON body; metrics measured on the way.
#include "src/server/openai_service.h"

#include <chrono>
#include <ctime>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "src/server/error_json.h"
#include "src/server/request_id.h"

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

HttpResponse NotReady() { return ErrorResponse(503, "the model is still loading; retry when /health is 200"); }

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// One generation request in flight: owns the plan's responder and feeds it engine events on the strand.
template <typename Plan, typename Responder>
class Generation : public std::enable_shared_from_this<Generation<Plan, Responder>> {
 public:
  Generation(std::shared_ptr<Exchange> ex, Plan plan, const api::ServerContext& ctx, std::string id,
             ServingMetrics* metrics)
      : ex_(std::move(ex)),
        stream_(plan.stream),
        n_(std::max<int32_t>(plan.n, 1)),
        responder_(plan, ctx, std::move(id), static_cast<int64_t>(std::time(nullptr))),
        metrics_(metrics),
        last_token_(n_) {}

  // Submits and wires up events and cancellation. Answers the exchange itself on every path.
  void Start(engine::Engine* engine, engine::Request request) {
    request.client_id = ex_->request().request_id;
    auto self = this->shared_from_this();
    auto id = engine->Submit(std::move(request), [self](const engine::Event& event) {
      self->ex_->Post([self, event] { self->OnEvent(event); });
    });
    if (!id.ok()) {
      const Status& s = id.status();
      if (s.code() == StatusCode::kResourceExhausted) {
        HttpResponse r = ErrorResponse(429, fmt::format("the server is busy: {}", s.message()));
        r.headers.emplace_back("Retry-After", "1");
        ex_->Respond(std::move(r));
      } else if (s.code() == StatusCode::kInvalidArgument) {
        ex_->Respond(ErrorResponse(400, s.message()));
      } else {
        ex_->Respond(ErrorResponse(503, fmt::format("the engine cannot take requests: {}", s.message())));
      }
      return;
    }
    const uint64_t request_id = *id;
    ex_->OnClientGone([engine, request_id] { engine->Cancel(request_id); });
  }

 private:
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
      if (event.request_done) payloads.emplace_back("[DONE]");
      if (!payloads.empty()) ex_->SendEvents(std::move(payloads));
      if (event.request_done) ex_->EndEvents();
      return;
    }
    if (!event.request_done) return;
    if (responder_.failure()) {
      ex_->Respond(ApiErrorResponse(*responder_.failure()));
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
    ex->Respond(NotReady());
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
    spdlog::info("request {}: chat, model {}, {} prompt tokens, max_tokens {}, n {}, stream {}",
                 ex->request().request_id, plan->model, plan->prompt_tokens, plan->request.sampling.max_tokens,
                 plan->n, plan->stream);
  }
  engine::Request request = std::move(plan->request);
  auto generation = std::make_shared<Generation<api::ChatPlan, api::ChatResponder>>(
      ex, std::move(*plan), ready->ctx, "chatcmpl-" + GenerateRequestId(), &metrics_);
  generation->Start(ready->engine, std::move(request));
}

void OpenAiService::Completion(const std::shared_ptr<Exchange>& ex) {
  const Ready* ready = ready_.load(std::memory_order_acquire);
  if (ready == nullptr) return ex->Respond(NotReady());
  api::ApiError error;
  auto plan = api::ParseCompletion(ex->request().body, ready->ctx, &error);
  if (!plan) return ex->Respond(ApiErrorResponse(error));
  if (log_requests_) {
    spdlog::info("request {}: completion, model {}, {} prompt tokens, max_tokens {}, stream {}",
                 ex->request().request_id, plan->model, plan->prompt_tokens, plan->request.sampling.max_tokens,
                 plan->stream);
  }
  engine::Request request = std::move(plan->request);
  auto generation = std::make_shared<Generation<api::CompletionPlan, api::CompletionResponder>>(
      ex, std::move(*plan), ready->ctx, "cmpl-" + GenerateRequestId(), &metrics_);
  generation->Start(ready->engine, std::move(request));
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
  using TextEndpoint = std::optional<std::string> (*)(std::string_view, const api::ServerContext&, api::ApiError*);
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
}

}  // namespace k3::server
