// The prompt-or-batch field of /v1/completions ("prompt") and /v1/embeddings ("input"): a string, an
// array of token ids, or a list of up to kMaxCompletionPrompts strings / token-id arrays. Errors go to the
// FieldReader and name the element ("prompt[2][5]: expected a token id in [0, 1023], got -1").
#pragma once

#include <string_view>
#include <vector>

#include "src/api/json_fields.h"
#include "src/api/openai.h"
#include "src/tokenizer/tokenizer.h"

namespace k3::api {

// Reads `field` into its prompts (text and ids). `noun` ("prompt", "input") words the errors. With
// keep_text, token-id prompts are also decoded into text (completions echo it); otherwise only ids are
// filled. Returns what was read before any error (check fields.ok()).
std::vector<CompletionPrompt> ReadPromptList(FieldReader& fields, std::string_view field,
                                             std::string_view noun, const tokenizer::Tokenizer& tokenizer,
                                             bool keep_text);

}  // namespace k3::api
