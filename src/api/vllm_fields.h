// vLLM's own request fields beyond OpenAI's, on /v1/chat/completions and /v1/completions: what this
// server does with each, so none is silently ignored (issue: drop-in for vLLM's server).
//
//   guided_json (a schema object, or its JSON text)  chat: the output is constrained to the schema, as
//     structured_outputs.json                          response_format json_schema does (not shown to
//                                                      the model); completions: 400
//   guided_regex / structured_outputs.regex          chat: the whole reply matches the pattern
//   guided_choice / structured_outputs.choice        chat: the reply is exactly one of the strings
//   guided_grammar, structured_outputs.{grammar,     400 naming the field (no grammar language here)
//     structural_tag,...}
//   prompt_logprobs: k in [0, --max-logprobs]         each prompt token's logprob and the top k, in
//                                                      vLLM's shape (chat: top level; completions: per
//                                                      choice); 400 with stream, as vLLM
//   stream_options without stream: true              400, as vLLM
//   stream_options.continuous_usage_stats: true      with include_usage, every chunk carries the usage
//                                                      so far (vLLM's meaning); alone, no effect (as vLLM)
// Errors go to `fields` (the first one is kept).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "src/api/json_fields.h"

namespace k3::api {

// An output constraint given through vLLM's fields (one at most), and the field it came from (for error
// messages).
struct GuidedOutput {
  enum class Kind { kJson, kRegex, kChoice };
  Kind kind = Kind::kJson;
  nlohmann::json schema;             // kJson
  std::string regex;                 // kRegex
  std::vector<std::string> choices;  // kChoice
  std::string field;                 // "guided_json", "structured_outputs.regex", ...
};

// The constraint of guided_json / guided_regex / guided_choice / structured_outputs.{json,regex,choice}
// when one is given (chat); refuses the rest. `chat` false (completions): every kind is refused.
std::optional<GuidedOutput> ReadVllmGuidedFields(FieldReader& fields, bool chat);

// prompt_logprobs: k, or -1 when absent or null; errors (range, stream) go to `fields`.
int32_t ReadPromptLogprobs(FieldReader& fields, bool stream, int32_t max_logprobs);

// stream_options: include_usage, continuous_usage_stats; the refusal above. `stream`: the request's
// stream flag.
struct StreamOptions {
  bool include_usage = false;     // a last chunk with the request's usage
  bool continuous_usage = false;  // every chunk carries the usage so far (needs include_usage, as vLLM)
};
StreamOptions ReadStreamOptions(FieldReader& fields, bool stream);

}  // namespace k3::api
