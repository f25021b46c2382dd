// CompletionResponder: engine events -> text_completion chunks or one text_completion body (echo and
// legacy logprobs included).
#include <utility>

#include "src/api/errors.h"
#include "src/api/json_dump.h"
#include "src/api/openai.h"
#include "src/api/response_parts.h"

namespace k3::api {

struct CompletionResponder::Impl {
  struct Choice {
    std::string text;
    nlohmann::json logprobs;  // legacy shape, accumulated (null when not requested)
    int64_t text_offset = 0;
    bool echoed = false;
    engine::FinishReason finish = engine::FinishReason::kNone;
    std::string stop_reason;
  };

  // Copies, so the plan need not outlive the responder.
  std::string model;
  bool stream;
  bool include_usage;
  bool echo;
  std::string prompt_text;
  int32_t logprobs;
  std::vector<int32_t> stop_token_ids;
  std::vector<std::string> stop;
  const tokenizer::Tokenizer* tokenizer;
  std::string id;
  int64_t created;
  std::vector<Choice> choices;
  engine::Usage usage;
  std::optional<ApiError> failure;

  Impl(const CompletionPlan& plan, const ServerContext& ctx, std::string i, int64_t t)
      : model(plan.model),
        stream(plan.stream),
        include_usage(plan.include_usage),
        echo(plan.echo),
        prompt_text(plan.prompt_text),
        logprobs(plan.logprobs),
        stop_token_ids(plan.stop_token_ids),
        stop(plan.stop),
        tokenizer(ctx.tokenizer),
        id(std::move(i)),
        created(t),
        choices(std::max(plan.n, 1)) {}

  nlohmann::json Body(nlohmann::json choice_list) const {
    nlohmann::json body = {{"id", id},
                           {"object", "text_completion"},
                           {"created", created},
                           {"model", model},
                           {"choices", std::move(choice_list)}};
    if (stream && include_usage) body["usage"] = nullptr;
    return body;
  }

  nlohmann::json ChoiceJson(size_t index, std::string text, nlohmann::json logprob_json,
                            const Choice& choice) const {
    return {{"index", index},
            {"text", std::move(text)},
            {"logprobs", std::move(logprob_json)},
            {"finish_reason", FinishReasonJson(choice.finish, false)},
            {"stop_reason", StopReasonJson(choice.stop_reason, stop_token_ids, stop)}};
  }

  std::vector<std::string> OnEvent(const engine::Event& event) {
    std::vector<std::string> out;
    if (event.choice < 0 || event.choice >= static_cast<int32_t>(choices.size())) return out;
    Choice& choice = choices[event.choice];
    std::string text;
    if (echo && !choice.echoed) {
      choice.echoed = true;
      text = prompt_text;
      choice.text_offset = static_cast<int64_t>(prompt_text.size());
    }
    text += event.text;
    choice.text += text;
    nlohmann::json logprob_json = nullptr;
    if (logprobs >= 0) {
      logprob_json = LegacyLogprobs(*tokenizer, event.logprobs, &choice.text_offset);
      if (choice.logprobs.is_null()) {
        choice.logprobs = logprob_json;
      } else {
        AppendLegacyLogprobs(&choice.logprobs, logprob_json);
      }
    }
    const bool finished = event.finish != engine::FinishReason::kNone;
    if (finished) {
      choice.finish = event.finish;
      choice.stop_reason = event.stop_reason;
    }
    if (event.finish == engine::FinishReason::kError && !failure) {
      failure = EngineFailure(event.error, event.unavailable);
      if (stream) out.push_back(ErrorBody(*failure));
    }
    if (stream && (!text.empty() || finished || !event.logprobs.empty())) {
      // json::array(...) spelled out: a braced list holding one json initialises a json parameter as a
      // copy of that element under clang and as a one-element array under g++.
      out.push_back(DumpJson(Body(nlohmann::json::array(
          {ChoiceJson(event.choice, std::move(text), std::move(logprob_json), choice)}))));
    }
    if (event.request_done) {
      usage = event.usage;
      if (stream && include_usage) {
        nlohmann::json body = Body(nlohmann::json::array());
        body["usage"] = UsageJson(usage);
        out.push_back(DumpJson(body));
      }
    }
    return out;
  }

  std::string FinalBody() const {
    nlohmann::json choice_list = nlohmann::json::array();
    for (size_t i = 0; i < choices.size(); ++i) {
      const Choice& choice = choices[i];
      nlohmann::json logprob_json = choice.logprobs;
      if (logprobs >= 0 && logprob_json.is_null()) {
        int64_t offset = 0;
        logprob_json = LegacyLogprobs(*tokenizer, {}, &offset);
      }
      choice_list.push_back(ChoiceJson(i, choice.text, std::move(logprob_json), choice));
    }
    nlohmann::json body = Body(std::move(choice_list));
    body["usage"] = UsageJson(usage);
    return DumpJson(body);
  }
};

CompletionResponder::CompletionResponder(const CompletionPlan& plan, const ServerContext& ctx, std::string id,
                                         int64_t created)
    : impl_(std::make_unique<Impl>(plan, ctx, std::move(id), created)) {}
CompletionResponder::~CompletionResponder() = default;

std::vector<std::string> CompletionResponder::OnEvent(const engine::Event& event) {
  return impl_->OnEvent(event);
}
std::string CompletionResponder::FinalBody() const { return impl_->FinalBody(); }
const std::optional<ApiError>& CompletionResponder::failure() const { return impl_->failure; }

}  // namespace k3::api
