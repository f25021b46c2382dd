// WriteTokenizerFiles: tiktoken.model, tokenizer_config.json (K3 special names) and merges.txt.
#include <filesystem>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "src/base/base64.h"
#include "src/base/file.h"
#include "src/tokenizer/bpe_trainer.h"
#include "src/tokenizer/byte_pair_merge.h"
#include "src/tokenizer/rank_table.h"
#include "src/tokenizer/readable_bytes.h"
#include "src/tokenizer/special_tokens.h"

namespace k3::tokenizer {
namespace {

constexpr size_t kModelMaxLength = 1'048'576;

// The two lower-rank tokens that rank r is a merge of: the BPE of its bytes with only ranks < r when
// that gives two parts (how tiktoken recovers merges), else the first split into two lower ranks.
Status FindMergePair(const std::vector<std::string>& ranks, const RankTable& table, Rank rank,
                     std::pair<Rank, Rank>& pair) {
  const std::string& token = ranks[rank];
  std::vector<Rank> parts;
  BytePairMerge(token, table, parts, rank);
  if (parts.size() == 2 && parts[0] != kNoRank && parts[1] != kNoRank) {
    pair = {parts[0], parts[1]};
    return OkStatus();
  }
  for (size_t split = 1; split < token.size(); ++split) {
    const Rank left = table.Find(std::string_view(token).substr(0, split));
    const Rank right = table.Find(std::string_view(token).substr(split));
    if (left < rank && right < rank) {
      pair = {left, right};
      return OkStatus();
    }
  }
  return InvalidArgument("rank {} ('{}') is not the merge of two lower ranks", rank, BytesToReadable(token));
}

Status CheckRanks(const std::vector<std::string>& ranks) {
  if (ranks.size() < 256)
    return InvalidArgument("a byte-level vocabulary needs >= 256 ranks, got {}", ranks.size());
  for (size_t b = 0; b < 256; ++b) {
    if (ranks[b] != std::string(1, static_cast<char>(b))) {
      return InvalidArgument("rank {} must be the single byte 0x{:02x}", b, b);
    }
  }
  for (size_t r = 256; r < ranks.size(); ++r) {
    if (ranks[r].size() < 2)
      return InvalidArgument("rank {} has {} bytes; merges have >= 2", r, ranks[r].size());
  }
  return OkStatus();
}

}  // namespace

Status WriteTokenizerFiles(const std::string& dir, const std::vector<std::string>& ranks) {
  K3_RETURN_IF_ERROR(CheckRanks(ranks));
  const RankTable table(ranks);
  if (table.size() != ranks.size()) return InvalidArgument("ranks contain duplicate byte strings");
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) return IoError("{}: cannot create directory: {}", dir, error.message());

  std::string model;
  for (size_t r = 0; r < ranks.size(); ++r) model += fmt::format("{} {}\n", Base64Encode(ranks[r]), r);

  std::string merges = "#version: k3stack byte-level BPE\n";
  for (size_t r = 256; r < ranks.size(); ++r) {
    std::pair<Rank, Rank> pair;
    K3_RETURN_IF_ERROR(FindMergePair(ranks, table, static_cast<Rank>(r), pair));
    merges += fmt::format("{} {}\n", BytesToReadable(ranks[pair.first]), BytesToReadable(ranks[pair.second]));
  }

  const size_t first_special = ranks.size();
  nlohmann::ordered_json decoder = nlohmann::ordered_json::object();
  for (size_t offset = 0; offset < kNumSpecialTokens; ++offset) {
    decoder[std::to_string(first_special + offset)] = {
        {"content", K3SpecialTokenName(offset, first_special)},
        {"lstrip", false},
        {"normalized", false},
        {"rstrip", false},
        {"single_word", false},
        {"special", true},
    };
  }
  nlohmann::ordered_json config = {
      {"added_tokens_decoder", decoder},
      {"bos_token", K3SpecialTokenName(kBosOffset, first_special)},
      {"eos_token", K3SpecialTokenName(kEosOffset, first_special)},
      {"pad_token", K3SpecialTokenName(kPadOffset, first_special)},
      {"unk_token", K3SpecialTokenName(kUnkOffset, first_special)},
      {"model_max_length", kModelMaxLength},
      {"tokenizer_class", "TikTokenTokenizer"},
  };

  const std::filesystem::path base(dir);
  K3_RETURN_IF_ERROR(WriteFileAtomic((base / "tiktoken.model").string(), model));
  K3_RETURN_IF_ERROR(WriteFileAtomic((base / "tokenizer_config.json").string(), config.dump(2) + "\n"));
  K3_RETURN_IF_ERROR(WriteFileAtomic((base / "merges.txt").string(), merges));
  return OkStatus();
}

}  // namespace k3::tokenizer
