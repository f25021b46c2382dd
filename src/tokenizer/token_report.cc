// Token reports and input parsing for the tokenizer commands.
#include "src/tokenizer/token_report.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "src/tokenizer/bpe_trainer.h"
#include "src/tokenizer/utf8.h"

namespace k3::tokenizer {

Result<ReportFormat> ParseReportFormat(std::string_view name) {
  if (name == "text") return ReportFormat::kText;
  if (name == "json") return ReportFormat::kJson;
  return InvalidArgument("unknown output format '{}' (expected text or json)", name);
}

std::string DisplayToken(const Tokenizer& tokenizer, TokenId id) {
  auto bytes = tokenizer.TokenBytes(id);
  if (!bytes.ok()) return fmt::format("<unknown id {}>", id);
  if (tokenizer.IsSpecial(id)) return std::string(*bytes);
  std::string out;
  size_t pos = 0;
  while (pos < bytes->size()) {
    const auto c = static_cast<unsigned char>((*bytes)[pos]);
    const size_t length = ValidSequenceLength(*bytes, pos);
    if (length == 0 || (length == 1 && (c < 0x20 || c == 0x7F || c == '\\'))) {
      switch (c) {
        case '\n':
          out += "\\n";
          break;
        case '\r':
          out += "\\r";
          break;
        case '\t':
          out += "\\t";
          break;
        case '\\':
          out += "\\\\";
          break;
        default:
          out += fmt::format("\\x{:02x}", c);
      }
      ++pos;
      continue;
    }
    out.append(bytes->substr(pos, length));
    pos += length;
  }
  return out;
}

Result<std::string> FormatTokenReport(const Tokenizer& tokenizer, std::span<const TokenId> ids,
                                      ReportFormat format) {
  K3_ASSIGN_OR_RETURN(std::string text, tokenizer.Decode(ids));
  if (format == ReportFormat::kJson) {
    nlohmann::json tokens = nlohmann::json::array();
    for (TokenId id : ids) tokens.push_back(DisplayToken(tokenizer, id));
    nlohmann::json report = {{"ids", std::vector<TokenId>(ids.begin(), ids.end())},
                             {"tokens", tokens},
                             {"count", ids.size()},
                             {"text", ReplaceInvalidUtf8(text)}};
    return report.dump() + "\n";
  }
  std::string out = fmt::format("ids: [{}]\ncount: {}\n", fmt::join(ids, ", "), ids.size());
  for (TokenId id : ids) out += fmt::format("{}\t{}\n", id, DisplayToken(tokenizer, id));
  return out;
}

Result<std::string> ParseJsonStringInput(std::string_view json) {
  nlohmann::json value = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (value.is_discarded() || !value.is_string()) {
    return InvalidArgument("--json input must be one JSON string literal, e.g. \"caf\\u00e9\\n\"");
  }
  return value.get<std::string>();
}

Result<std::vector<TokenId>> ParseIdList(std::string_view text) {
  std::vector<TokenId> ids;
  size_t pos = 0;
  const auto is_separator = [](char c) {
    return c == ' ' || c == '\n' || c == '\r' || c == '\t' || c == ',' || c == '[' || c == ']';
  };
  while (pos < text.size()) {
    if (is_separator(text[pos])) {
      ++pos;
      continue;
    }
    uint64_t value = 0;
    size_t digits = 0;
    while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') {
      value = value * 10 + static_cast<uint64_t>(text[pos] - '0');
      if (value > UINT32_MAX) return InvalidArgument("token id too large near offset {}", pos);
      ++pos;
      ++digits;
    }
    if (digits == 0 || (pos < text.size() && !is_separator(text[pos]))) {
      return InvalidArgument("expected token ids (numbers separated by spaces or commas) at offset {}", pos);
    }
    ids.push_back(static_cast<TokenId>(value));
  }
  return ids;
}

Result<Tokenizer> LoadOrTrainTokenizer(const std::string& model_dir, size_t num_ranks) {
  if (!model_dir.empty()) return Tokenizer::LoadFromDirectory(model_dir);
  if (num_ranks < 256 || num_ranks > 1'000'000) {
    return InvalidArgument("--ranks must be in 256..1000000, got {}", num_ranks);
  }
  return Tokenizer::CreateK3(TrainByteLevelBpe(EmbeddedCorpus(), num_ranks));
}

}  // namespace k3::tokenizer
