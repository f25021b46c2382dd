// PromptForLog: the decoded prompt and its ids, each cut to max_len.
#include "src/server/request_log.h"

#include <algorithm>
#include <vector>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

namespace k3::server {
namespace {

// The byte length of the first `max_chars` UTF-8 code points of `text` (continuation bytes do not count).
size_t PrefixBytes(const std::string& text, int64_t max_chars) {
  int64_t chars = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const auto byte = static_cast<unsigned char>(text[i]);
    if ((byte & 0xC0) == 0x80) continue;
    if (chars == max_chars) return i;
    ++chars;
  }
  return text.size();
}

int64_t CountChars(const std::string& text) {
  int64_t chars = 0;
  for (char c : text) chars += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return chars;
}

}  // namespace

std::string PromptForLog(const tokenizer::Tokenizer& tokenizer, std::span<const int32_t> ids,
                         int64_t max_len) {
  std::vector<tokenizer::TokenId> all(ids.begin(), ids.end());
  Result<std::string> decoded = tokenizer.Decode(all);
  std::string text = decoded.ok() ? *decoded : "(" + decoded.status().message() + ")";
  std::string text_more;
  if (max_len >= 0) {
    const int64_t total = CountChars(text);
    if (total > max_len) {
      text.resize(PrefixBytes(text, max_len));
      text_more = fmt::format("(+{} more characters)", total - max_len);
    }
  }
  const size_t shown = max_len < 0 ? ids.size() : std::min(ids.size(), static_cast<size_t>(max_len));
  std::string ids_more;
  if (shown < ids.size()) ids_more = fmt::format("(+{} more)", ids.size() - shown);
  const std::string quoted =
      nlohmann::json(text).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return fmt::format("prompt: {}{}, prompt_token_ids: [{}]{}", quoted, text_more,
                     fmt::join(ids.subspan(0, shown), ", "), ids_more);
}

}  // namespace k3::server
