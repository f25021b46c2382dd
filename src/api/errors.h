// The OpenAI-shaped errors the API layer produces, with the wording clients (and vLLM users) expect.
#pragma once

#include <cstdint>
#include <string>

#include "src/api/openai.h"

namespace k3::api {

// 404: "The model `NAME` does not exist." (param "model", code "model_not_found").
// 404 naming `model` and every name this server serves.
ApiError ModelNotFound(const std::string& model, const ServerContext& ctx);

// 400 when the prompt alone does not leave room for one generated token.
ApiError PromptTooLong(int64_t prompt_tokens, int64_t max_model_len, const std::string& param);

// 400 when prompt + max_tokens exceed the context (vLLM's wording).
ApiError MaxTokensTooLarge(int64_t max_tokens, int64_t prompt_tokens, int64_t max_model_len);

// 500 for a choice the engine ended with an error, or 503 when the model itself is unavailable (a sharded
// model lost a rank).
ApiError EngineFailure(const std::string& message, bool unavailable = false);

// {"error": {...}} as an nlohmann value (ErrorBody serialises it).
nlohmann::json ErrorJson(const ApiError& error);

}  // namespace k3::api
