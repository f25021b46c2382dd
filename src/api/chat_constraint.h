// The output constraint of a chat request: response_format json_object / json_schema -> a JSON grammar,
// tool_choice "required" / named -> a forced XTML tool call (chat/json_schema_grammar.h builds both).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include "src/api/chat_options.h"
#include "src/api/openai.h"
#include "src/chat/token_constraint.h"

namespace k3::api {

// nullptr in *constraint when the request has no constraint. A schema the grammar cannot take is a 400
// naming response_format (or tools). The constraint fits its output into max_tokens (0: the context left
// after prompt_tokens), so a forced tool call or JSON value completes before the engine stops at length.
std::optional<ApiError> MakeChatConstraint(const ChatOptions& options, const ServerContext& ctx,
                                           int64_t prompt_tokens, int64_t max_tokens,
                                           std::unique_ptr<chat::TokenConstraint>* constraint);

}  // namespace k3::api
