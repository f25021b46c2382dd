// RunVerify: runs the checks in order; the models, health and error-shape checks; shared helpers.
#include "src/client/verify.h"

#include <fmt/format.h>

#include "src/client/verify_internal.h"

namespace k3::client {

const char* OutcomeName(Outcome outcome) {
  switch (outcome) {
    case Outcome::kPass:
      return "pass";
    case Outcome::kFail:
      return "fail";
    case Outcome::kSkip:
      return "skip";
  }
  return "?";
}

int VerifyReport::count(Outcome outcome) const {
  int n = 0;
  for (const CheckResult& c : checks) n += c.outcome == outcome;
  return n;
}

int VerifyReport::failures() const { return count(Outcome::kFail); }

namespace verify_internal {

using nlohmann::json;

CheckResult Pass(std::string detail, std::string evidence) {
  CheckResult r;
  r.outcome = Outcome::kPass;
  r.detail = std::move(detail);
  r.evidence = std::move(evidence);
  return r;
}

CheckResult Fail(std::string detail, std::string evidence) {
  CheckResult r;
  r.outcome = Outcome::kFail;
  r.detail = std::move(detail);
  r.evidence = std::move(evidence);
  return r;
}

CheckResult Skip(std::string detail) {
  CheckResult r;
  r.outcome = Outcome::kSkip;
  r.detail = std::move(detail);
  return r;
}

std::string Evidence(const HttpResponse& response) {
  return fmt::format("HTTP {} in {:.0f} ms: {}", response.status, response.elapsed_s * 1000,
                     Snippet(response.body, 200));
}

Result<HttpResponse> Run::Chat(json body) {
  body["model"] = model;
  return client.Post(options.endpoint.Url("/v1/chat/completions"), body.dump(),
                     options.endpoint.JsonHeaders());
}

StreamCapture Run::ChatStream(json body) {
  body["model"] = model;
  body["stream"] = true;
  body["stream_options"] = {{"include_usage", true}};
  StreamCapture capture;
  std::vector<std::string> headers = options.endpoint.JsonHeaders();
  headers.push_back("Accept: text/event-stream");
  auto response = client.PostStreaming(options.endpoint.Url("/v1/chat/completions"), body.dump(), headers,
                                       [&](std::string_view piece) {
                                         capture.raw.append(piece);
                                         capture.sse.Feed(piece);
                                         for (std::string& e : capture.sse.TakeEvents()) {
                                           capture.chat.OnEvent(e);
                                           capture.events.push_back(std::move(e));
                                         }
                                       });
  if (!response.ok()) {
    capture.transport = response.status();
    return capture;
  }
  capture.response = *response;
  capture.response.body = capture.raw;
  if (response->status != 200) {
    capture.transport = ParseJsonAnswer(capture.response, "POST /v1/chat/completions (stream)").status();
    if (capture.transport.ok()) {
      capture.transport = InvalidArgument("POST /v1/chat/completions (stream): HTTP {}", response->status);
    }
    return capture;
  }
  capture.sse.Finish();
  for (std::string& e : capture.sse.TakeEvents()) {
    capture.chat.OnEvent(e);
    capture.events.push_back(std::move(e));
  }
  return capture;
}

ChatAnswer AskChat(Run& run, const json& request) {
  ChatAnswer answer;
  auto response = run.Chat(request);
  if (!response.ok()) {
    answer.failure = Fail(response.status().message());
    return answer;
  }
  answer.response = std::move(*response);
  answer.evidence = Evidence(answer.response);
  auto body = ParseJsonAnswer(answer.response, "POST /v1/chat/completions");
  if (!body.ok()) {
    answer.failure = Fail(body.status().message(), answer.evidence);
    return answer;
  }
  auto result = ParseChatCompletion(*body);
  if (!result.ok()) {
    answer.failure = Fail(result.status().message(), answer.evidence);
    return answer;
  }
  answer.result = std::move(*result);
  return answer;
}

CheckResult CheckModels(Run& run) {
  auto response = run.client.Get(run.options.endpoint.Url("/v1/models"), run.options.endpoint.JsonHeaders());
  if (!response.ok()) return Fail(response.status().message());
  auto body = ParseJsonAnswer(*response, "GET /v1/models");
  if (!body.ok()) return Fail(body.status().message(), Evidence(*response));
  const json& data = (*body)["data"];
  if (body->value("object", "") != "list" || !data.is_array()) {
    return Fail("not an OpenAI model list (expected {\"object\": \"list\", \"data\": [...]})",
                Evidence(*response));
  }
  std::vector<std::string> ids;
  for (const json& m : data) {
    if (m.is_object() && m.contains("id") && m["id"].is_string()) ids.push_back(m["id"].get<std::string>());
  }
  const std::string listed = fmt::format("{}", fmt::join(ids, ", "));
  if (run.options.model.empty()) {
    if (ids.empty()) return Fail("the model list is empty", Evidence(*response));
    run.model = ids.front();
    return Pass(fmt::format("{} model(s): {}; using '{}'", ids.size(), listed, run.model),
                Evidence(*response));
  }
  if (std::find(ids.begin(), ids.end(), run.options.model) == ids.end()) {
    return Fail(
        fmt::format("'{}' is not listed (listed: {})", run.options.model, listed.empty() ? "none" : listed),
        Evidence(*response));
  }
  return Pass(fmt::format("'{}' listed ({} model(s))", run.model, ids.size()), Evidence(*response));
}

CheckResult CheckHealth(Run& run) {
  auto response = run.client.Get(run.options.endpoint.Url("/health"), run.options.endpoint.JsonHeaders());
  if (!response.ok()) return Fail(response.status().message());
  if (response->status != 200)
    return Fail(fmt::format("GET /health: HTTP {}", response->status), Evidence(*response));
  return Pass("GET /health: HTTP 200", Evidence(*response));
}

CheckResult CheckErrorShape(Run& run) {
  // Two bad requests: a wrong field type, and a body that is not JSON.
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"messages is a number", json{{"model", run.model}, {"messages", 42}}.dump()},
      {"body is not JSON", "{\"model\": "},
  };
  std::string evidence;
  for (const auto& [what, body] : cases) {
    auto response = run.client.Post(run.options.endpoint.Url("/v1/chat/completions"), body,
                                    run.options.endpoint.JsonHeaders());
    if (!response.ok()) return Fail(what + ": " + response.status().message());
    if (!evidence.empty()) evidence += " | ";
    evidence += what + ": " + Evidence(*response);
    if (response->status < 400 || response->status >= 500) {
      return Fail(fmt::format("{}: expected a 4xx status, got HTTP {}", what, response->status), evidence);
    }
    const json parsed = json::parse(response->body, nullptr, false);
    const bool shaped = parsed.is_object() && parsed.contains("error") && parsed["error"].is_object() &&
                        parsed["error"].contains("message") && parsed["error"]["message"].is_string();
    if (!shaped) {
      return Fail(fmt::format("{}: HTTP {} but the body is not an OpenAI error "
                              "({{\"error\": {{\"message\": ..., \"type\": ...}}}})",
                              what, response->status),
                  evidence);
    }
  }
  return Pass("both bad requests got a 4xx with an OpenAI error object", evidence);
}

}  // namespace verify_internal

VerifyReport RunVerify(const VerifyOptions& options) {
  using namespace verify_internal;
  VerifyReport report;
  report.endpoint = options.endpoint.base;
  Run run(options);
  run.model = options.model;
  auto add = [&](std::string id, std::string title, auto&& check) {
    Timer timer;
    CheckResult r = check();
    r.id = std::move(id);
    r.title = std::move(title);
    r.seconds = timer.seconds();
    report.checks.push_back(std::move(r));
    return &report.checks.back();
  };
  const CheckResult* models =
      add("models", "GET /v1/models lists the model", [&] { return CheckModels(run); });
  report.model = run.model;
  // A transport failure on the first request (refused, timeout, TLS, DNS) means nothing else can pass.
  const bool unreachable = models->outcome == Outcome::kFail && models->evidence.empty();
  const std::string unreachable_reason = "not run: the endpoint is unreachable (" + models->detail + ")";
  const bool have_model = !run.model.empty();
  auto guarded = [&](std::string id, std::string title, auto&& check) {
    add(std::move(id), std::move(title), [&]() -> CheckResult {
      if (unreachable) return Fail(unreachable_reason);
      if (!have_model) return Skip("no model name: /v1/models listed none; pass --model");
      return check();
    });
  };
  add("health", "GET /health answers 200", [&]() -> CheckResult {
    if (unreachable) return Fail(unreachable_reason);
    return CheckHealth(run);
  });
  guarded("tool-calls-auto", "tools + tool_choice auto are accepted; any tool_calls are schema-valid",
          [&] { return CheckToolCalls(run, "auto"); });
  guarded("tool-calls-required", "tools + tool_choice required give schema-valid tool_calls",
          [&] { return CheckToolCalls(run, "required"); });
  guarded("reasoning", "thinking output carries reasoning_content (or reasoning)",
          [&] { return CheckReasoning(run); });
  std::optional<std::pair<CheckResult, CheckResult>> context;
  guarded("long-context", fmt::format("a {}-token prompt succeeds", options.long_context), [&] {
    context = CheckLongContextAndPrefixCache(run);
    return context->first;
  });
  guarded("prefix-cache", "the repeated long prompt hits the prefix cache",
          [&] { return context ? context->second : Skip("the long-context request did not run"); });
  guarded("stream-equals-non-stream", "streaming equals non-streaming at temperature 0",
          [&] { return CheckStreamEqualsNonStream(run); });
  guarded("sse-format", "SSE is well formed (data lines, usage chunk, [DONE])",
          [&] { return CheckSseFormat(run); });
  guarded("error-shape", "a bad request gets an OpenAI-shaped 4xx error",
          [&] { return CheckErrorShape(run); });
  guarded("vision", "an image's prompt tokens match the reference processor", [&]() -> CheckResult {
    if (!options.vision) return Skip("not run: --no-vision");
    return CheckVision(run);
  });
  return report;
}

}  // namespace k3::client
