// Builds the structured-output / forced-tool-call constraint of a chat request.
#include "src/api/chat_constraint.h"

#include <string>
#include <vector>

#include "src/api/json_fields.h"
#include "src/chat/json_schema_grammar.h"
#include "src/chat/regex_constraint.h"

namespace k3::api {

std::optional<ApiError> MakeChatConstraint(const ChatOptions& options, const ServerContext& ctx,
                                           int64_t prompt_tokens, int64_t max_tokens,
                                           std::unique_ptr<chat::TokenConstraint>* constraint) {
  constraint->reset();
  const bool plain_text = options.guided_regex.has_value() || options.guided_choice.has_value();
  if (!options.json_output && !options.tool_call_required && !plain_text) return std::nullopt;
  chat::ConstraintOptions constraint_options;
  constraint_options.end_ids.assign(ctx.eos_token_ids.begin(), ctx.eos_token_ids.end());
  constraint_options.allow_reasoning = options.render.thinking;
  // The engine stops at max_tokens, or (none given) where the context ends.
  constraint_options.max_tokens =
      max_tokens > 0 ? max_tokens : (ctx.max_model_len > 0 ? ctx.max_model_len - prompt_tokens : 0);
  Result<std::unique_ptr<chat::TokenConstraint>> made =
      options.guided_regex
          ? chat::MakeRegexConstraint(*ctx.tokenizer, *options.guided_regex, constraint_options)
      : options.guided_choice
          ? chat::MakeChoiceConstraint(*ctx.tokenizer, *options.guided_choice, constraint_options)
      : options.json_output
          ? chat::MakeJsonConstraint(*ctx.tokenizer, options.json_schema, constraint_options)
          : chat::MakeToolCallConstraint(*ctx.tokenizer, options.render.tools, options.forced_function,
                                         options.parallel_tool_calls, constraint_options);
  if (!made.ok()) {
    const std::string param = plain_text                      ? options.guided_field
                              : !options.json_output          ? std::string("tools")
                              : options.json_schema.is_null() ? std::string("response_format")
                                                              : options.json_schema_field;
    std::string message = made.status().message();
    if (message.rfind(param + ": ", 0) == 0) message.erase(0, param.size() + 2);  // (named once)
    return FieldError(param, message);
  }
  *constraint = std::move(*made);
  return std::nullopt;
}

}  // namespace k3::api
