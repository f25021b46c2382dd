// Tokenizer::LoadFromDirectory: parses tiktoken.model ("<base64> <rank>" lines) and the special-token
// names of tokenizer_config.json.
#include <charconv>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "src/base/base64.h"
#include "src/base/file.h"
#include "src/tokenizer/special_tokens.h"
#include "src/tokenizer/tokenizer.h"

namespace k3::tokenizer {
namespace {

Result<std::vector<std::string>> ParseTiktokenModel(const std::string& path, std::string_view text) {
  std::vector<std::string> ranks;
  std::vector<bool> seen;
  size_t line_number = 0, pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) continue;
    const size_t space = line.find(' ');
    if (space == std::string_view::npos) {
      return DataLoss("{}:{}: expected '<base64 token> <rank>'", path, line_number);
    }
    auto bytes = Base64Decode(line.substr(0, space));
    if (!bytes.ok()) return bytes.status().WithPrefix(fmt::format("{}:{}", path, line_number));
    const std::string_view rank_text = line.substr(space + 1);
    uint64_t rank = 0;
    const auto [rest, error] = std::from_chars(rank_text.data(), rank_text.data() + rank_text.size(), rank);
    if (error != std::errc() || rest != rank_text.data() + rank_text.size() || rank >= (1u << 30)) {
      return DataLoss("{}:{}: bad rank '{}'", path, line_number, rank_text);
    }
    if (rank >= ranks.size()) {
      ranks.resize(rank + 1);
      seen.resize(rank + 1, false);
    }
    if (seen[rank]) return DataLoss("{}:{}: rank {} appears twice", path, line_number, rank);
    seen[rank] = true;
    ranks[rank] = std::move(bytes).value();
  }
  for (size_t r = 0; r < seen.size(); ++r) {
    if (!seen[r])
      return DataLoss("{}: rank {} is missing (ranks must be 0..{} without gaps)", path, r, seen.size() - 1);
  }
  if (ranks.empty()) return DataLoss("{}: no tokens", path);
  return ranks;
}

Result<std::vector<std::pair<TokenId, std::string>>> ParseSpecialNames(const std::string& path,
                                                                       std::string_view text,
                                                                       size_t num_ranks) {
  nlohmann::json config = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (config.is_discarded() || !config.is_object()) return DataLoss("{}: not a JSON object", path);
  std::vector<std::string> names(kNumSpecialTokens);
  std::vector<std::pair<TokenId, std::string>> extra;
  const auto decoder = config.find("added_tokens_decoder");
  if (decoder != config.end()) {
    if (!decoder->is_object()) return DataLoss("{}: added_tokens_decoder must be an object", path);
    for (const auto& [key, entry] : decoder->items()) {
      uint64_t id = 0;
      const auto [rest, error] = std::from_chars(key.data(), key.data() + key.size(), id);
      if (error != std::errc() || rest != key.data() + key.size() || id >= (1u << 30)) {
        return DataLoss("{}: added_tokens_decoder key '{}' is not a token id", path, key);
      }
      const auto content = entry.is_object() ? entry.find("content") : entry.end();
      if (content == entry.end() || !content->is_string() || content->get<std::string>().empty()) {
        return DataLoss("{}: added_tokens_decoder[{}] needs a non-empty string 'content'", path, key);
      }
      if (id < num_ranks) {
        return DataLoss("{}: added token {} '{}' collides with BPE rank {} (ranks are 0..{})", path, id,
                        content->get<std::string>(), id, num_ranks - 1);
      }
      if (id < num_ranks + kNumSpecialTokens) {
        names[id - num_ranks] = content->get<std::string>();
      } else {
        extra.emplace_back(static_cast<TokenId>(id), content->get<std::string>());
      }
    }
  }
  std::vector<std::pair<TokenId, std::string>> specials;
  for (size_t offset = 0; offset < kNumSpecialTokens; ++offset) {
    const size_t id = num_ranks + offset;
    specials.emplace_back(static_cast<TokenId>(id), names[offset].empty()
                                                        ? fmt::format("<|reserved_token_{}|>", id)
                                                        : std::move(names[offset]));
  }
  for (auto& entry : extra) specials.push_back(std::move(entry));
  return specials;
}

}  // namespace

Result<Tokenizer> Tokenizer::LoadFromDirectory(const std::string& dir) {
  const std::string model_path = (std::filesystem::path(dir) / "tiktoken.model").string();
  const std::string config_path = (std::filesystem::path(dir) / "tokenizer_config.json").string();
  K3_ASSIGN_OR_RETURN(std::string model_text, ReadFileToString(model_path));
  K3_ASSIGN_OR_RETURN(std::string config_text, ReadFileToString(config_path));
  return LoadFromContents(dir, model_text, config_text);
}

Result<Tokenizer> Tokenizer::LoadFromContents(const std::string& location, const std::string& model_text,
                                              const std::string& config_text) {
  const std::string model_path = location + "/tiktoken.model";
  const std::string config_path = location + "/tokenizer_config.json";
  K3_ASSIGN_OR_RETURN(std::vector<std::string> ranks, ParseTiktokenModel(model_path, model_text));
  K3_ASSIGN_OR_RETURN(auto specials, ParseSpecialNames(config_path, config_text, ranks.size()));
  auto tokenizer = Create(std::move(ranks), std::move(specials));
  if (!tokenizer.ok()) return tokenizer.status().WithPrefix(location);
  return tokenizer;
}

}  // namespace k3::tokenizer
