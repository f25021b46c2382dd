// Tokenizer: K3's tiktoken byte-level BPE (spec §4.1) with special tokens, for encoding prompts and
// decoding model output.
//
// Encoding follows the reference exactly: the long-input guard cuts the text first (pretokenizer.h);
// within each segment, special-token names are matched when allowed (leftmost, longest); the text
// between them is split by the K3 pre-tokeniser, and each piece is either one rank (when the whole piece
// is a token) or byte-pair merged (byte_pair_merge.h). With specials disallowed, a name such as
// `<|open|>` in user text is ordinary bytes. No BOS is ever prepended.
//
// Any byte string is accepted: invalid UTF-8 is encoded bytewise (its own pieces), so
// Decode(Encode(s)) == s for every s. Decode renders special ids by name, without spaces.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "src/base/status.h"
#include "src/tokenizer/rank_table.h"

namespace k3::tokenizer {

using TokenId = uint32_t;

enum class SpecialTokens {
  kAllowed,     // special names in the text become special ids (structural markup)
  kDisallowed,  // special names are ordinary text (user, tool and attribute text)
};

class Tokenizer {
 public:
  // ranks[r] = bytes of rank r (ranks 0..255 need not be single bytes, but every single byte must be a
  // rank); specials = (id, name) with ids >= ranks.size() and unique non-empty names.
  static Result<Tokenizer> Create(std::vector<std::string> ranks,
                                  std::vector<std::pair<TokenId, std::string>> specials);
  // The K3 layout: ranks followed by the 256 K3 specials (special_tokens.h).
  static Result<Tokenizer> CreateK3(std::vector<std::string> ranks);
  // Reads dir/tiktoken.model and dir/tokenizer_config.json (added_tokens_decoder); the 256 ids after the
  // ranks that the config does not name are <|reserved_token_ID|>.
  static Result<Tokenizer> LoadFromDirectory(const std::string& dir);
  // The same from the two files' contents (read from object storage); `location` prefixes messages.
  static Result<Tokenizer> LoadFromContents(const std::string& location, const std::string& model_text,
                                            const std::string& config_text);

  std::vector<TokenId> Encode(std::string_view text, SpecialTokens specials) const;
  // Appends to out.
  void EncodeAppend(std::string_view text, SpecialTokens specials, std::vector<TokenId>& out) const;

  // Raw bytes of the ids concatenated (specials as their names); error on an unknown id.
  Result<std::string> Decode(std::span<const TokenId> ids) const;
  // Bytes of one token (a special's name); error on an unknown id.
  Result<std::string_view> TokenBytes(TokenId id) const;

  std::optional<TokenId> FindSpecial(std::string_view name) const;
  // FindSpecial as a Result (NotFound names the missing token).
  Result<TokenId> SpecialId(std::string_view name) const;
  bool IsSpecial(TokenId id) const {
    return id >= ranks_.size() && id < vocab_size_ && !id_to_special_[id - ranks_.size()].empty();
  }

  size_t num_ranks() const { return ranks_.size(); }
  // One past the largest id (ranks + specials, gaps included).
  size_t vocab_size() const { return vocab_size_; }
  const std::vector<std::string>& ranks() const { return ranks_; }

 private:
  Tokenizer() = default;
  void EncodeOrdinary(std::string_view text, std::vector<TokenId>& out) const;
  // Leftmost-longest special name in text[from..]: (position, id), or position npos.
  std::pair<size_t, TokenId> FindSpecialIn(std::string_view text, size_t from) const;

  std::vector<std::string> ranks_;
  std::shared_ptr<const RankTable> table_;  // shared: Tokenizer is cheap to copy
  std::vector<std::string> id_to_special_;  // index id - num_ranks; empty = no such id
  struct NameHash {
    using is_transparent = void;
    size_t operator()(std::string_view name) const { return std::hash<std::string_view>()(name); }
  };
  std::unordered_map<std::string, TokenId, NameHash, std::equal_to<>> special_to_id_;
  std::vector<size_t> special_lengths_;  // distinct name lengths, longest first
  bool special_first_byte_[256] = {};
  size_t vocab_size_ = 0;
};

}  // namespace k3::tokenizer
