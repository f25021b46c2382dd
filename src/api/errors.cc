// OpenAI error bodies and the standard errors of the API layer.
#include "src/api/errors.h"

#include <fmt/format.h>

#include "src/api/error_table.h"
#include "src/api/json_dump.h"

namespace k3::api {

nlohmann::json ErrorJson(const ApiError& error) {
  nlohmann::json inner = {{"message", error.message},
                          {"type", std::string(ErrorKindFor(error.http_status).openai_type)},
                          {"param", nullptr},
                          {"code", nullptr}};
  if (!error.param.empty()) inner["param"] = error.param;
  if (!error.code.empty()) inner["code"] = error.code;
  return {{"error", std::move(inner)}};
}

std::string ErrorBody(const ApiError& error) { return DumpJson(ErrorJson(error)); }

ApiError ModelNotFound(const std::string& model, const ServerContext& ctx) {
  std::string served = "`" + ctx.served_model_name + "`";
  for (const std::string& alias : ctx.served_model_aliases) served += ", `" + alias + "`";
  ApiError error;
  error.http_status = 404;
  error.param = "model";
  error.code = "model_not_found";
  error.message = fmt::format("The model `{}` does not exist. This server serves {}.", model, served);
  return error;
}

ApiError PromptTooLong(int64_t prompt_tokens, int64_t max_model_len, const std::string& param) {
  ApiError error;
  error.param = param;
  error.message = fmt::format(
      "This model's maximum context length is {} tokens. However, your request has {} input tokens. "
      "Please reduce the length of the input.",
      max_model_len, prompt_tokens);
  return error;
}

ApiError MaxTokensTooLarge(int64_t max_tokens, int64_t prompt_tokens, int64_t max_model_len) {
  ApiError error;
  error.param = "max_tokens";
  error.message = fmt::format(
      "'max_tokens' or 'max_completion_tokens' is too large: {}. This model's maximum context length is {} "
      "tokens and your request has {} input tokens ({} > {} - {}).",
      max_tokens, max_model_len, prompt_tokens, max_tokens, max_model_len, prompt_tokens);
  return error;
}

ApiError EngineFailure(const std::string& message, bool unavailable) {
  ApiError error;
  error.http_status = unavailable ? 503 : 500;
  error.message = message.empty() ? "the engine failed while generating this request" : message;
  return error;
}

}  // namespace k3::api
