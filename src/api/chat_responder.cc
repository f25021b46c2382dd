// ChatResponder: engine events -> chat.completion.chunk payloads or one chat.completion body.
//
// Each choice has its own chat::StreamParser over the event text, so streaming deltas and the final
// body come from the same parse: the concatenated deltas equal the body. Logprobs of tokens whose text
// the parser still holds back ride on the next chunk of that choice, so none is lost. A choice that ends
// normally is checked against what its schema left to the end (plan.schema_check): a violation finishes it
// with "schema_violation" and the violation as stop_reason.
#include <utility>

#include "src/api/errors.h"
#include "src/api/json_dump.h"
#include "src/api/openai.h"
#include "src/api/response_parts.h"

namespace k3::api {

struct ChatResponder::Impl {
  struct Choice {
    explicit Choice(chat::ParserOptions options) : parser(options) {}
    chat::StreamParser parser;
    std::string reasoning;
    std::string content;
    nlohmann::json tool_calls = nlohmann::json::array();  // OpenAI tool_call objects
    nlohmann::json logprobs = nlohmann::json::array();    // every entry (non-streaming body)
    nlohmann::json unsent_logprobs = nlohmann::json::array();
    engine::FinishReason finish = engine::FinishReason::kNone;
    std::string stop_reason;
    std::optional<std::string> violation;  // the end check's finding (finish_reason "schema_violation")
    int64_t completion_tokens = 0;         // generated so far (continuous usage)
  };

  // Copies of what the responder needs: the plan's request is moved to the engine and the plan itself
  // need not outlive the responder.
  struct PlanCopy {
    explicit PlanCopy(const ChatPlan& p)
        : model(p.model),
          stream(p.stream),
          include_usage(p.include_usage),
          continuous_usage(p.continuous_usage),
          prompt_tokens(p.prompt_tokens),
          parser(p.parser),
          logprobs(p.logprobs),
          n(p.n),
          include_reasoning(p.include_reasoning),
          prompt_logprobs(p.prompt_logprobs),
          stop_token_ids(p.stop_token_ids),
          stop(p.stop),
          schema_check(p.schema_check) {}
    std::string model;
    bool stream;
    bool include_usage;
    bool continuous_usage;
    int64_t prompt_tokens;
    chat::ParserOptions parser;
    bool logprobs;
    int32_t n;
    bool include_reasoning;
    int32_t prompt_logprobs;
    std::vector<int32_t> stop_token_ids;
    std::vector<std::string> stop;
    std::shared_ptr<const chat::OutputSchemaCheck> schema_check;
  };
  struct ContextCopy {
    const tokenizer::Tokenizer* tokenizer;
    bool reasoning_parser;
    bool reasoning_alias;
    std::string response_role;
    bool as_token_ids;  // --return-tokens-as-token-ids
  };

  PlanCopy plan;
  ContextCopy ctx;
  std::string id;
  int64_t created;
  std::vector<Choice> choices;
  bool roles_sent = false;
  engine::Usage usage;
  std::optional<ApiError> failure;
  std::vector<engine::TokenLogprob> prompt_logprobs;  // from choice 0's first event

  Impl(const ChatPlan& p, const ServerContext& c, std::string i, int64_t t)
      : plan(p),
        ctx{c.tokenizer, c.reasoning_parser, c.reasoning_alias, c.response_role,
            c.return_tokens_as_token_ids},
        id(std::move(i)),
        created(t) {
    for (int32_t n = 0; n < std::max(plan.n, 1); ++n) choices.emplace_back(plan.parser);
  }

  // A chunk; with continuous usage it carries the usage so far of the choice it is about (vLLM: the
  // prompt and that choice's tokens).
  nlohmann::json Chunk(nlohmann::json choice_list, const Choice* about = nullptr) const {
    nlohmann::json chunk = {{"id", id},
                            {"object", "chat.completion.chunk"},
                            {"created", created},
                            {"model", plan.model},
                            {"choices", std::move(choice_list)}};
    if (plan.include_usage) chunk["usage"] = nullptr;
    if (plan.continuous_usage && about != nullptr) {
      chunk["usage"] = {{"prompt_tokens", plan.prompt_tokens},
                        {"completion_tokens", about->completion_tokens},
                        {"total_tokens", plan.prompt_tokens + about->completion_tokens}};
    }
    return chunk;
  }

  nlohmann::json FinishJson(const Choice& choice) const {
    if (choice.violation) return "schema_violation";
    return FinishReasonJson(choice.finish, !choice.tool_calls.empty());
  }
  nlohmann::json StopJson(const Choice& choice) const {
    if (choice.violation) return *choice.violation;
    return StopReasonJson(choice.stop_reason, plan.stop_token_ids, plan.stop);
  }

  // The end check of a choice that ended normally: its JSON reply, or each of its tool calls. A reply cut
  // by a stop string or stop token id is not a finished value and is not checked.
  std::optional<std::string> EndCheck(const Choice& choice) const {
    if (plan.schema_check == nullptr || choice.finish != engine::FinishReason::kStop) return std::nullopt;
    if (!StopReasonJson(choice.stop_reason, plan.stop_token_ids, plan.stop).is_null()) return std::nullopt;
    if (choice.tool_calls.empty()) return plan.schema_check->CheckJson(choice.content);
    for (size_t i = 0; i < choice.tool_calls.size(); ++i) {
      const nlohmann::json& function = choice.tool_calls[i]["function"];
      if (auto found = plan.schema_check->CheckToolCall(function["name"].get<std::string>(),
                                                        function["arguments"].get<std::string>(), i)) {
        return found;
      }
    }
    return std::nullopt;
  }

  nlohmann::json ToolCallJson(const chat::ParsedToolCall& call, int32_t choice, size_t number) const {
    return {{"id", ToolCallId(id, choice, number)},
            {"type", "function"},
            {"function", {{"name", call.name}, {"arguments", call.arguments}}}};
  }

  // Adds a parser delta to the choice; returns the chunk delta object (only the fields that changed).
  nlohmann::json Apply(Choice& choice, int32_t index, const chat::OutputDelta& delta) {
    nlohmann::json out = nlohmann::json::object();
    // Without a reasoning parser the reasoning text is content (it comes first in a delta).
    const std::string content = ctx.reasoning_parser ? delta.content : delta.reasoning + delta.content;
    if (ctx.reasoning_parser && !delta.reasoning.empty() && plan.include_reasoning) {
      choice.reasoning += delta.reasoning;
      out["reasoning_content"] = delta.reasoning;
      if (ctx.reasoning_alias) out["reasoning"] = delta.reasoning;
    }
    if (!content.empty()) {
      choice.content += content;
      out["content"] = content;
    }
    for (const chat::ParsedToolCall& call : delta.tool_calls) {
      const size_t number = choice.tool_calls.size();
      nlohmann::json json = ToolCallJson(call, index, number);
      choice.tool_calls.push_back(json);
      json["index"] = number;
      out["tool_calls"].push_back(std::move(json));
    }
    return out;
  }

  std::vector<std::string> OnEvent(const engine::Event& event) {
    std::vector<std::string> out;
    if (event.choice < 0 || event.choice >= static_cast<int32_t>(choices.size())) return out;
    if (event.choice == 0 && !event.prompt_logprobs.empty()) prompt_logprobs = event.prompt_logprobs;
    if (plan.stream && !roles_sent) {
      roles_sent = true;
      for (size_t i = 0; i < choices.size(); ++i) {
        // json::array(...) spelled out: a braced list holding one json initialises a json parameter
        // as a copy of that element under clang and as a one-element array under g++.
        out.push_back(
            DumpJson(Chunk(nlohmann::json::array({{{"index", i},
                                                   {"delta", {{"role", ctx.response_role}, {"content", ""}}},
                                                   {"logprobs", nullptr},
                                                   {"finish_reason", nullptr}}}),
                           &choices[i])));
      }
    }
    Choice& choice = choices[event.choice];
    choice.completion_tokens += static_cast<int64_t>(event.tokens.size());
    if (plan.logprobs && !event.logprobs.empty()) {
      for (auto& entry : ChatLogprobEntries(*ctx.tokenizer, event.logprobs, ctx.as_token_ids)) {
        choice.logprobs.push_back(entry);
        choice.unsent_logprobs.push_back(std::move(entry));
      }
    }
    chat::OutputDelta delta = choice.parser.Push(event.text);
    const bool finished = event.finish != engine::FinishReason::kNone;
    if (finished) {
      chat::OutputDelta rest = choice.parser.Finish();
      delta.reasoning += rest.reasoning;
      delta.content += rest.content;
      for (auto& call : rest.tool_calls) delta.tool_calls.push_back(std::move(call));
      choice.finish = event.finish;
      choice.stop_reason = event.stop_reason;
    }
    nlohmann::json delta_json = Apply(choice, event.choice, delta);
    if (finished) choice.violation = EndCheck(choice);
    if (event.finish == engine::FinishReason::kError && !failure) {
      failure = EngineFailure(event.error, event.unavailable);
      if (plan.stream) out.push_back(ErrorBody(*failure));
    }
    if (plan.stream && (!delta_json.empty() || finished || !choice.unsent_logprobs.empty())) {
      nlohmann::json entry = {{"index", event.choice},
                              {"delta", std::move(delta_json)},
                              {"logprobs", nullptr},
                              {"finish_reason", FinishJson(choice)}};
      if (plan.logprobs) {
        entry["logprobs"] = {{"content", std::move(choice.unsent_logprobs)}};
        choice.unsent_logprobs = nlohmann::json::array();
      }
      if (finished) entry["stop_reason"] = StopJson(choice);
      out.push_back(DumpJson(Chunk(nlohmann::json::array({std::move(entry)}), &choice)));
    }
    if (event.request_done) {
      usage = event.usage;
      if (plan.stream && plan.include_usage) {
        nlohmann::json chunk = Chunk(nlohmann::json::array());
        chunk["usage"] = UsageJson(usage);
        out.push_back(DumpJson(chunk));
      }
    }
    return out;
  }

  std::string FinalBody() const {
    nlohmann::json choice_list = nlohmann::json::array();
    for (size_t i = 0; i < choices.size(); ++i) {
      const Choice& choice = choices[i];
      nlohmann::json message = {{"role", ctx.response_role}};
      // content is null only when the answer is tool calls alone (OpenAI).
      if (choice.content.empty() && !choice.tool_calls.empty()) {
        message["content"] = nullptr;
      } else {
        message["content"] = choice.content;
      }
      if (ctx.reasoning_parser && plan.parser.thinking && plan.include_reasoning) {
        message["reasoning_content"] = choice.reasoning;
        if (ctx.reasoning_alias) message["reasoning"] = choice.reasoning;
      }
      if (!choice.tool_calls.empty()) message["tool_calls"] = choice.tool_calls;
      nlohmann::json entry = {{"index", i},
                              {"message", std::move(message)},
                              {"logprobs", nullptr},
                              {"finish_reason", FinishJson(choice)},
                              {"stop_reason", StopJson(choice)}};
      if (plan.logprobs) entry["logprobs"] = {{"content", choice.logprobs}};
      choice_list.push_back(std::move(entry));
    }
    nlohmann::json body = {{"id", id},
                           {"object", "chat.completion"},
                           {"created", created},
                           {"model", plan.model},
                           {"choices", std::move(choice_list)},
                           {"usage", UsageJson(usage)}};
    if (plan.prompt_logprobs >= 0)
      body["prompt_logprobs"] = PromptLogprobsJson(*ctx.tokenizer, prompt_logprobs);
    return DumpJson(body);
  }
};

ChatResponder::ChatResponder(const ChatPlan& plan, const ServerContext& ctx, std::string id, int64_t created)
    : impl_(std::make_unique<Impl>(plan, ctx, std::move(id), created)) {}
ChatResponder::~ChatResponder() = default;

std::vector<std::string> ChatResponder::OnEvent(const engine::Event& event) { return impl_->OnEvent(event); }
std::string ChatResponder::FinalBody() const { return impl_->FinalBody(); }
const std::optional<ApiError>& ChatResponder::failure() const { return impl_->failure; }

}  // namespace k3::api
