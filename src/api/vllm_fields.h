// vLLM's own request fields beyond OpenAI's, on /v1/chat/completions and /v1/completions: what this
// server does with each, so none is silently ignored (issue: drop-in for vLLM's server).
//
//   guided_json (a schema object, or its JSON text)  chat: the output is constrained to the schema, as
//     structured_outputs.json                          response_format json_schema does (not shown to
//                                                      the model); completions: 400
//   guided_regex, guided_choice, guided_grammar,     400 naming the field: structured output here
//     structured_outputs.{regex,choice,grammar,...}    takes JSON schemas only
//   prompt_logprobs: k in [0, --max-logprobs]         each prompt token's logprob and the top k, in
//                                                      vLLM's shape (chat: top level; completions: per
//                                                      choice); 400 with stream, as vLLM
//   stream_options without stream: true              400, as vLLM
//   stream_options.continuous_usage_stats: true      400: usage comes in the last chunk only
// Errors go to `fields` (the first one is kept).
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "src/api/json_fields.h"

namespace k3::api {

// A schema given through vLLM's fields, and the field it came from ("guided_json" or
// "structured_outputs.json", for error messages).
struct GuidedSchema {
  nlohmann::json schema;
  std::string field;
};

// The schema of guided_json / structured_outputs.json when one is given (chat); refuses the rest.
// `chat` false (completions): guided_json is refused too.
std::optional<GuidedSchema> ReadVllmGuidedFields(FieldReader& fields, bool chat);

// prompt_logprobs: k, or -1 when absent or null; errors (range, stream) go to `fields`.
int32_t ReadPromptLogprobs(FieldReader& fields, bool stream, int32_t max_logprobs);

// stream_options: include_usage (returned), the refusals above. `stream`: the request's stream flag.
bool ReadStreamOptions(FieldReader& fields, bool stream);

}  // namespace k3::api
