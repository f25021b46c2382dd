// What `k3 tokenize` (and `k3 render-chat`) print: token ids with a readable form of each token, as
// text or JSON, plus the input helpers those commands share (JSON string input, id lists, which
// tokenizer to use).
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "src/base/status.h"
#include "src/tokenizer/tokenizer.h"

namespace k3::tokenizer {

enum class ReportFormat { kText, kJson };
Result<ReportFormat> ParseReportFormat(std::string_view name);  // "text" | "json"

// One token for display: valid UTF-8 as is, with \n \r \t \\ and other control or invalid bytes escaped
// (\xNN); special tokens by name.
std::string DisplayToken(const Tokenizer& tokenizer, TokenId id);

// text: "ids: [a, b, ...]" then "count: N", then one "id<TAB>token" line per token.
// json: {"ids": [...], "tokens": ["display", ...], "count": N, "text": decoded text (invalid UTF-8 as
// U+FFFD)}. Errors on unknown ids.
Result<std::string> FormatTokenReport(const Tokenizer& tokenizer, std::span<const TokenId> ids,
                                      ReportFormat format);

// Input text given as a JSON string literal ("caf\u00e9\n").
Result<std::string> ParseJsonStringInput(std::string_view json);
// Ids as a JSON array or separated by whitespace / commas.
Result<std::vector<TokenId>> ParseIdList(std::string_view text);

// The tokenizer of model_dir (tiktoken.model + tokenizer_config.json), or, when model_dir is empty, a
// K3-layout tokenizer trained from the embedded corpus with num_ranks ranks (what generated models use).
Result<Tokenizer> LoadOrTrainTokenizer(const std::string& model_dir, size_t num_ranks);

}  // namespace k3::tokenizer
