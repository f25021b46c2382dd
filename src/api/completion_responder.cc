// CompletionResponder: engine events -> text_completion chunks or one text_completion body (echo, legacy
// logprobs with the echoed prompt's, vLLM's prompt_logprobs; several prompts: choice = prompt * n + i).
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
    std::vector<engine::TokenLogprob> prompt_logprobs;  // from the choice's first event
    engine::FinishReason finish = engine::FinishReason::kNone;
    std::string stop_reason;
    int64_t completion_tokens = 0;  // generated so far (continuous usage)
  };

  // Copies, so the plan need not outlive the responder.
  std::string model;
  bool stream;
  bool include_usage;
  bool continuous_usage;
  bool echo;
  std::vector<CompletionPrompt> prompts;
  int32_t n;
  int32_t logprobs;
  int32_t prompt_logprobs;
  std::vector<int32_t> stop_token_ids;
  std::vector<std::string> stop;
  const tokenizer::Tokenizer* tokenizer;
  bool as_token_ids;  // --return-tokens-as-token-ids
  std::string id;
  int64_t created;
  std::vector<Choice> choices;
  engine::Usage usage;
  std::optional<ApiError> failure;

  Impl(const CompletionPlan& plan, const ServerContext& ctx, std::string i, int64_t t)
      : model(plan.model),
        stream(plan.stream),
        include_usage(plan.include_usage),
        continuous_usage(plan.continuous_usage),
        echo(plan.echo),
        prompts(plan.prompts),
        n(std::max(plan.n, 1)),
        logprobs(plan.logprobs),
        prompt_logprobs(plan.prompt_logprobs),
        stop_token_ids(plan.stop_token_ids),
        stop(plan.stop),
        tokenizer(ctx.tokenizer),
        as_token_ids(ctx.return_tokens_as_token_ids),
        id(std::move(i)),
        created(t),
        choices(std::max<size_t>(plan.prompts.size(), 1) * static_cast<size_t>(std::max(plan.n, 1))) {}

  const CompletionPrompt& PromptOf(size_t choice) const { return prompts[choice / static_cast<size_t>(n)]; }

  // Legacy logprobs of the echoed prompt: its first token has none (null), the rest come from the
  // engine's prompt logprobs, each with the top `logprobs` and the prompt token itself.
  // Sets *text_offset past the prompt's token texts (the generated tokens' offsets continue from there;
  // token texts may differ from the prompt's decoded text where they split a UTF-8 character).
  nlohmann::json EchoedPromptLogprobs(const Choice& choice, const CompletionPrompt& prompt,
                                      int64_t* text_offset) const {
    nlohmann::json out = {{"tokens", nlohmann::json::array()},
                          {"token_logprobs", nlohmann::json::array()},
                          {"top_logprobs", nlohmann::json::array()},
                          {"text_offset", nlohmann::json::array()}};
    int64_t offset = 0;
    for (size_t i = 0; i < prompt.ids.size(); ++i) {
      TokenText token = DescribeToken(*tokenizer, prompt.ids[i], as_token_ids);
      out["text_offset"].push_back(offset);
      offset += static_cast<int64_t>(token.text.size());
      out["tokens"].push_back(std::move(token.text));
      if (i == 0 || i - 1 >= choice.prompt_logprobs.size()) {
        out["token_logprobs"].push_back(nullptr);
        out["top_logprobs"].push_back(nullptr);
        continue;
      }
      const engine::TokenLogprob& entry = choice.prompt_logprobs[i - 1];
      nlohmann::json top = nlohmann::json::object();
      for (size_t t = 0; t < entry.top.size() && t < static_cast<size_t>(logprobs); ++t)
        top[DescribeToken(*tokenizer, entry.top[t].token, as_token_ids).text] =
            JsonLogprob(entry.top[t].logprob);
      top[DescribeToken(*tokenizer, entry.token, as_token_ids).text] = JsonLogprob(entry.logprob);
      out["token_logprobs"].push_back(JsonLogprob(entry.logprob));
      out["top_logprobs"].push_back(std::move(top));
    }
    *text_offset = offset;
    return out;
  }

  // vLLM's prompt_logprobs with the top `prompt_logprobs` (the engine may have computed more for echo).
  nlohmann::json PromptLogprobs(const Choice& choice) const {
    std::vector<engine::TokenLogprob> entries = choice.prompt_logprobs;
    for (engine::TokenLogprob& entry : entries) {
      if (entry.top.size() > static_cast<size_t>(prompt_logprobs)) entry.top.resize(prompt_logprobs);
    }
    return PromptLogprobsJson(*tokenizer, entries);
  }

  nlohmann::json Body(nlohmann::json choice_list) const {
    nlohmann::json body = {{"id", id},
                           {"object", "text_completion"},
                           {"created", created},
                           {"model", model},
                           {"choices", std::move(choice_list)}};
    if (stream && include_usage) body["usage"] = nullptr;
    return body;
  }

  nlohmann::json ChoiceJson(size_t index, std::string text, nlohmann::json logprob_json, const Choice& choice,
                            bool with_prompt_logprobs) const {
    nlohmann::json out = {{"index", index},
                          {"text", std::move(text)},
                          {"logprobs", std::move(logprob_json)},
                          {"finish_reason", FinishReasonJson(choice.finish, false)},
                          {"stop_reason", StopReasonJson(choice.stop_reason, stop_token_ids, stop)}};
    if (with_prompt_logprobs) out["prompt_logprobs"] = PromptLogprobs(choice);
    return out;
  }

  std::vector<std::string> OnEvent(const engine::Event& event) {
    std::vector<std::string> out;
    if (event.choice < 0 || event.choice >= static_cast<int32_t>(choices.size())) return out;
    Choice& choice = choices[event.choice];
    choice.completion_tokens += static_cast<int64_t>(event.tokens.size());
    if (!event.prompt_logprobs.empty()) choice.prompt_logprobs = event.prompt_logprobs;
    std::string text;
    nlohmann::json logprob_json = nullptr;
    const bool echo_now = echo && !choice.echoed;
    if (echo_now) {
      choice.echoed = true;
      const CompletionPrompt& prompt = PromptOf(event.choice);
      text = prompt.text;
      choice.text_offset = static_cast<int64_t>(prompt.text.size());
      if (logprobs >= 0) logprob_json = EchoedPromptLogprobs(choice, prompt, &choice.text_offset);
    }
    text += event.text;
    choice.text += text;
    if (logprobs >= 0) {
      nlohmann::json generated =
          LegacyLogprobs(*tokenizer, event.logprobs, &choice.text_offset, as_token_ids);
      if (logprob_json.is_null()) {
        logprob_json = std::move(generated);
      } else {
        AppendLegacyLogprobs(&logprob_json, generated);
      }
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
    if (stream && (!text.empty() || finished || !event.logprobs.empty() || echo_now)) {
      // json::array(...) spelled out: a braced list holding one json initialises a json parameter as a
      // copy of that element under clang and as a one-element array under g++.
      nlohmann::json body = Body(nlohmann::json::array(
          {ChoiceJson(event.choice, std::move(text), std::move(logprob_json), choice, false)}));
      if (continuous_usage) {  // vLLM: this choice's prompt and its tokens so far
        const auto prompt_tokens =
            prompts.empty() ? int64_t{0} : static_cast<int64_t>(PromptOf(event.choice).ids.size());
        body["usage"] = {{"prompt_tokens", prompt_tokens},
                         {"completion_tokens", choice.completion_tokens},
                         {"total_tokens", prompt_tokens + choice.completion_tokens}};
      }
      out.push_back(DumpJson(body));
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
      choice_list.push_back(
          ChoiceJson(i, choice.text, std::move(logprob_json), choice, prompt_logprobs >= 0));
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
