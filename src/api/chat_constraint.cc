// Builds the structured-output / forced-tool-call constraint of a chat request.
#include "src/api/chat_constraint.h"

#include <vector>

#include "src/api/json_fields.h"
#include "src/chat/json_schema_grammar.h"

namespace k3::api {

std::optional<ApiError> MakeChatConstraint(const ChatOptions& options, const ServerContext& ctx,
                                           int64_t prompt_tokens, int64_t max_tokens,
                                           std::unique_ptr<chat::TokenConstraint>* constraint) {
  constraint->reset();
  if (!options.json_output && !options.tool_call_required) return std::nullopt;
  chat::ConstraintOptions constraint_options;
  constraint_options.end_ids.assign(ctx.eos_token_ids.begin(), ctx.eos_token_ids.end());
  constraint_options.allow_reasoning = options.render.thinking;
  // The engine stops at max_tokens, or (none given) where the context ends.
  constraint_options.max_tokens =
      max_tokens > 0 ? max_tokens : (ctx.max_model_len > 0 ? ctx.max_model_len - prompt_tokens : 0);
  Result<std::unique_ptr<chat::TokenConstraint>> made =
      options.json_output
          ? chat::MakeJsonConstraint(*ctx.tokenizer, options.json_schema, constraint_options)
          : chat::MakeToolCallConstraint(*ctx.tokenizer, options.render.tools, options.forced_function,
                                         options.parallel_tool_calls, constraint_options);
  if (!made.ok()) {
    const char* param = !options.json_output            ? "tools"
                        : options.json_schema.is_null() ? "response_format"
                                                        : options.json_schema_field.c_str();
    return FieldError(param, made.status().message());
  }
  *constraint = std::move(*made);
  return std::nullopt;
}

}  // namespace k3::api
