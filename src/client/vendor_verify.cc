// RunVendorVerify: runs the vendor suite's checks in order; the run's helpers (recording finish reasons,
// the render route, reference prompt-token counts, tool-argument validation).
#include "src/client/vendor_verify.h"

#include <fmt/format.h>

#include "src/chat/render_request.h"
#include "src/chat/schema_validator.h"
#include "src/client/vendor_internal.h"

namespace k3::client {
namespace vendor_internal {

using nlohmann::json;

ChatAnswer VendorRun::Ask(const std::string& label, const json& request) {
  ChatAnswer answer = verify_internal::AskChat(run, request);
  if (!answer.failure) finishes.push_back({label, answer.result.finish_reason});
  return answer;
}

StreamCapture VendorRun::Stream(const std::string& label, const json& request) {
  StreamCapture capture = run.ChatStream(request);
  if (capture.transport.ok()) finishes.push_back({label + " (stream)", capture.chat.result().finish_reason});
  return capture;
}

Result<std::vector<int64_t>> VendorRun::RenderIds(const json& request) {
  if (render_route == false) return NotFound("the endpoint has no /v1/chat/completions/render");
  json body = request;
  body["model"] = run.model;
  K3_ASSIGN_OR_RETURN(HttpResponse response,
                      run.client.Post(options.verify.endpoint.Url("/v1/chat/completions/render"), body.dump(),
                                      options.verify.endpoint.JsonHeaders()));
  if (response.status == 404 || response.status == 405) {
    render_route = false;
    return NotFound("the endpoint has no /v1/chat/completions/render (HTTP {})", response.status);
  }
  K3_ASSIGN_OR_RETURN(json answer, ParseJsonAnswer(response, "POST /v1/chat/completions/render"));
  render_route = true;
  for (const char* key : {"token_ids", "prompt_token_ids"}) {
    auto ids = answer.find(key);
    if (ids == answer.end() || !ids->is_array()) continue;
    std::vector<int64_t> out;
    for (const json& id : *ids) {
      if (!id.is_number_integer()) return DataLoss("render route: {} holds a non-integer", key);
      out.push_back(id.get<int64_t>());
    }
    return out;
  }
  return DataLoss("render route: no token_ids array in {}", Snippet(response.body, 200));
}

Result<std::vector<int64_t>> VendorRun::LocalIds(const json& request,
                                                 const std::vector<chat::ImagePart>& images) {
  if (options.tokenizer == nullptr) return NotFound("no tokenizer (k3 verify --tokenizer DIR)");
  K3_ASSIGN_OR_RETURN(chat::RenderRequest parsed, chat::ParseRenderRequest(request.dump()));
  parsed.options.images = images;
  K3_ASSIGN_OR_RETURN(chat::RenderedPrompt prompt,
                      chat::RenderXtml(*options.tokenizer, parsed.messages, parsed.options));
  return std::vector<int64_t>(prompt.ids.begin(), prompt.ids.end());
}

Result<PromptCount> VendorRun::ExpectedPromptTokens(const json& request,
                                                    const std::vector<chat::ImagePart>& images) {
  if (options.tokenizer != nullptr) {
    K3_ASSIGN_OR_RETURN(std::vector<int64_t> ids, LocalIds(request, images));
    return PromptCount{static_cast<int64_t>(ids.size()), "k3's tokenizer and renderer"};
  }
  auto ids = RenderIds(request);
  if (!ids.ok()) {
    return NotFound(
        "no reference count: pass --tokenizer DIR (the model's tokenizer files) or serve "
        "/v1/chat/completions/render ({})",
        ids.status().message());
  }
  return PromptCount{static_cast<int64_t>(ids->size()), "the endpoint's render route"};
}

Status ValidateToolArguments(const std::string& arguments, const json& schema) {
  const json value = json::parse(arguments, nullptr, false);
  if (value.is_discarded()) return InvalidArgument("not JSON: '{}'", Snippet(arguments, 80));
  if (auto violation = chat::FindSchemaViolation(schema, value))
    return InvalidArgument("{}", violation->Message());
  return OkStatus();
}

const json* FindToolSchema(const json& tools, const std::string& name) {
  static const json kAnything = json::object();
  for (const json& tool : tools) {
    auto function = tool.find("function");
    if (function == tool.end() || !function->is_object() || function->value("name", "") != name) continue;
    auto parameters = function->find("parameters");
    return parameters == function->end() ? &kAnything : &*parameters;
  }
  return nullptr;
}

std::string DescribeAnswer(const ChatResult& r) {
  std::string out = fmt::format("finish_reason={}", r.finish_reason.empty() ? "none" : r.finish_reason);
  if (!r.content.empty()) out += ", content '" + Snippet(r.content, 80) + "'";
  return out;
}

}  // namespace vendor_internal

VerifyReport RunVendorVerify(const VendorOptions& options) {
  using namespace vendor_internal;
  using verify_internal::Fail;
  using verify_internal::Skip;
  VerifyReport report;
  report.endpoint = options.verify.endpoint.base;
  VendorRun vr(options);
  vr.run.model = options.verify.model;
  auto add = [&](std::string id, std::string title, auto&& check) {
    verify_internal::Timer timer;
    CheckResult r = check();
    r.id = std::move(id);
    r.title = std::move(title);
    r.seconds = timer.seconds();
    report.checks.push_back(std::move(r));
    return &report.checks.back();
  };
  const CheckResult* models =
      add("models", "GET /v1/models lists the model", [&] { return verify_internal::CheckModels(vr.run); });
  report.model = vr.run.model;
  const bool unreachable = models->outcome == Outcome::kFail && models->evidence.empty();
  const std::string unreachable_reason = "not run: the endpoint is unreachable (" + models->detail + ")";
  const bool have_model = !vr.run.model.empty();
  auto guarded = [&](std::string id, std::string title, auto&& check) {
    add(std::move(id), std::move(title), [&]() -> CheckResult {
      if (unreachable) return Fail(unreachable_reason);
      if (!have_model) return Skip("no model name: /v1/models listed none; pass --model");
      return check();
    });
  };
  for (const ToolSchemaCase& c : ToolSchemaCorpus()) {
    guarded("tool-args-" + c.name,
            fmt::format("{} arguments valid against its schema, streamed and not", c.name),
            [&] { return CheckToolArgs(vr, c); });
  }
  guarded("tool-choice-required", "tool_choice required calls a declared tool with valid arguments",
          [&] { return CheckToolChoiceRequired(vr); });
  guarded("tool-choice-named", "a named tool_choice calls exactly that tool",
          [&] { return CheckToolChoiceNamed(vr); });
  guarded("tool-choice-none", "tool_choice none gives no tool_calls",
          [&] { return CheckToolChoiceNone(vr); });
  guarded("dynamic-tools", "tools declared in a system message reach the prompt",
          [&] { return CheckDynamicTools(vr); });
  guarded("response-format", "response_format json_schema gives valid JSON, streamed and not",
          [&] { return CheckResponseFormat(vr); });
  guarded("thinking-effort", "thinking effort low / high / max changes the prompt",
          [&] { return CheckThinkingEffort(vr); });
  guarded("prompt-tokens-text", "usage.prompt_tokens of text prompts as k3 counts them",
          [&] { return CheckPromptTokensText(vr); });
  guarded("prompt-tokens-image", "usage.prompt_tokens of an image prompt as k3 counts it",
          [&]() -> CheckResult {
            if (!options.verify.vision) return Skip("not run: --no-vision");
            return CheckPromptTokensImage(vr);
          });
  guarded("special-token-text", "special-token names typed by a user stay text",
          [&] { return CheckSpecialTokenText(vr); });
  guarded("usage-chunk", "the usage chunk is last, after finish_reason, and agrees with non-streaming",
          [&] { return CheckUsageChunk(vr); });
  guarded("finish-reason", "finish_reason is stop, length or tool_calls (never a raw token id)",
          [&] { return CheckFinishReasons(vr); });
  return report;
}

}  // namespace k3::client
