// What --enable-log-requests writes about a request's prompt, cut as vLLM's --max-log-len cuts it: the
// prompt text (decoded from the rendered ids, as a JSON string: quoted, control characters escaped,
// non-ASCII kept as UTF-8, ill-formed bytes as U+FFFD) to at most N
// characters (code points) and the prompt ids to at most N ids; max_len -1 keeps both whole.
//   prompt: "<|open|>user..."(+812 more characters), prompt_token_ids: [1, 2, 3](+201 more)
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "src/tokenizer/tokenizer.h"

namespace k3::server {

std::string PromptForLog(const tokenizer::Tokenizer& tokenizer, std::span<const int32_t> ids,
                         int64_t max_len);

}  // namespace k3::server
