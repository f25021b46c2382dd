// Tokenizer construction, encoding (guard -> specials -> pre-tokeniser -> BPE) and decoding.
#include "src/tokenizer/tokenizer.h"

#include <algorithm>

#include "src/tokenizer/byte_pair_merge.h"
#include "src/tokenizer/pretokenizer.h"
#include "src/tokenizer/special_tokens.h"

namespace k3::tokenizer {

Result<Tokenizer> Tokenizer::Create(std::vector<std::string> ranks,
                                    std::vector<std::pair<TokenId, std::string>> specials) {
  if (ranks.size() >= kNoRank) return InvalidArgument("too many ranks: {}", ranks.size());
  Tokenizer tokenizer;
  tokenizer.table_ = std::make_shared<RankTable>(ranks);
  if (tokenizer.table_->size() != ranks.size()) {
    return InvalidArgument("the vocabulary has duplicate tokens ({} ranks, {} distinct)", ranks.size(),
                           tokenizer.table_->size());
  }
  for (int b = 0; b < 256; ++b) {
    if (tokenizer.table_->Find(std::string(1, static_cast<char>(b))) == kNoRank) {
      return InvalidArgument("the vocabulary lacks the single byte 0x{:02x}; byte-level BPE needs all 256",
                             b);
    }
  }
  for (size_t r = 0; r < ranks.size(); ++r) {
    if (ranks[r].empty()) return InvalidArgument("rank {} is empty", r);
  }
  size_t vocab_size = ranks.size();
  for (const auto& [id, name] : specials) {
    if (id < ranks.size())
      return InvalidArgument("special token '{}' has id {}, which is a BPE rank", name, id);
    if (name.empty()) return InvalidArgument("special token {} has an empty name", id);
    if (id >= (1u << 30)) return InvalidArgument("special token '{}' has an implausible id {}", name, id);
    vocab_size = std::max<size_t>(vocab_size, size_t{id} + 1);
  }
  tokenizer.id_to_special_.assign(vocab_size - ranks.size(), std::string());
  for (auto& [id, name] : specials) {
    std::string& slot = tokenizer.id_to_special_[id - ranks.size()];
    if (!slot.empty()) return InvalidArgument("special id {} is named twice ('{}', '{}')", id, slot, name);
    if (!tokenizer.special_to_id_.emplace(name, id).second) {
      return InvalidArgument("special token name '{}' is used twice", name);
    }
    slot = name;
    tokenizer.special_first_byte_[static_cast<unsigned char>(name[0])] = true;
    if (std::find(tokenizer.special_lengths_.begin(), tokenizer.special_lengths_.end(), name.size()) ==
        tokenizer.special_lengths_.end()) {
      tokenizer.special_lengths_.push_back(name.size());
    }
  }
  std::sort(tokenizer.special_lengths_.rbegin(), tokenizer.special_lengths_.rend());
  tokenizer.ranks_ = std::move(ranks);
  tokenizer.vocab_size_ = vocab_size;
  return tokenizer;
}

Result<Tokenizer> Tokenizer::CreateK3(std::vector<std::string> ranks) {
  std::vector<std::pair<TokenId, std::string>> specials;
  const size_t first = ranks.size();
  for (size_t offset = 0; offset < kNumSpecialTokens; ++offset) {
    specials.emplace_back(static_cast<TokenId>(first + offset), K3SpecialTokenName(offset, first));
  }
  return Create(std::move(ranks), std::move(specials));
}

std::pair<size_t, TokenId> Tokenizer::FindSpecialIn(std::string_view text, size_t from) const {
  if (special_to_id_.empty()) return {std::string_view::npos, 0};
  for (size_t pos = from; pos < text.size(); ++pos) {
    if (!special_first_byte_[static_cast<unsigned char>(text[pos])]) continue;
    for (size_t length : special_lengths_) {
      if (pos + length > text.size()) continue;
      auto it = special_to_id_.find(text.substr(pos, length));
      if (it != special_to_id_.end()) return {pos, it->second};
    }
  }
  return {std::string_view::npos, 0};
}

void Tokenizer::EncodeOrdinary(std::string_view text, std::vector<TokenId>& out) const {
  std::vector<std::string_view> pieces;
  PreTokenizer::Shared().SplitSegment(text, pieces);
  for (std::string_view piece : pieces) {
    const Rank whole = table_->Find(piece);
    if (whole != kNoRank) {
      out.push_back(whole);
    } else {
      BytePairMerge(piece, *table_, out);
    }
  }
}

void Tokenizer::EncodeAppend(std::string_view text, SpecialTokens specials, std::vector<TokenId>& out) const {
  std::vector<std::string_view> segments;
  PreTokenizer::SplitLongInput(text, segments);
  for (std::string_view segment : segments) {
    size_t start = 0;
    if (specials == SpecialTokens::kAllowed) {
      while (true) {
        const auto [pos, id] = FindSpecialIn(segment, start);
        if (pos == std::string_view::npos) break;
        if (pos > start) EncodeOrdinary(segment.substr(start, pos - start), out);
        out.push_back(id);
        start = pos + id_to_special_[id - ranks_.size()].size();
      }
    }
    if (start < segment.size()) EncodeOrdinary(segment.substr(start), out);
  }
}

std::vector<TokenId> Tokenizer::Encode(std::string_view text, SpecialTokens specials) const {
  std::vector<TokenId> out;
  out.reserve(text.size() / 3 + 1);
  EncodeAppend(text, specials, out);
  return out;
}

Result<std::string_view> Tokenizer::TokenBytes(TokenId id) const {
  if (id < ranks_.size()) return std::string_view(ranks_[id]);
  if (id < vocab_size_ && !id_to_special_[id - ranks_.size()].empty()) {
    return std::string_view(id_to_special_[id - ranks_.size()]);
  }
  return InvalidArgument("token id {} is not in the vocabulary (size {})", id, vocab_size_);
}

Result<std::string> Tokenizer::Decode(std::span<const TokenId> ids) const {
  std::string out;
  for (TokenId id : ids) {
    K3_ASSIGN_OR_RETURN(std::string_view bytes, TokenBytes(id));
    out.append(bytes);
  }
  return out;
}

std::optional<TokenId> Tokenizer::FindSpecial(std::string_view name) const {
  auto it = special_to_id_.find(name);
  if (it == special_to_id_.end()) return std::nullopt;
  return it->second;
}

Result<TokenId> Tokenizer::SpecialId(std::string_view name) const {
  if (auto id = FindSpecial(name)) return *id;
  return NotFound("the tokenizer has no special token '{}'", name);
}

}  // namespace k3::tokenizer
