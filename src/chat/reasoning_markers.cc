// Think-marker search on token ids.
#include "src/chat/reasoning_markers.h"

#include <algorithm>

namespace k3::chat {
namespace {

// Start of the last occurrence of needle in ids, or -1.
std::ptrdiff_t LastOccurrence(std::span<const tokenizer::TokenId> ids,
                              const std::vector<tokenizer::TokenId>& needle) {
  if (needle.empty() || ids.size() < needle.size()) return -1;
  for (size_t start = ids.size() - needle.size() + 1; start-- > 0;) {
    if (std::equal(needle.begin(), needle.end(), ids.begin() + static_cast<std::ptrdiff_t>(start))) {
      return static_cast<std::ptrdiff_t>(start);
    }
  }
  return -1;
}

}  // namespace

Result<ReasoningMarkers> ReasoningMarkers::Create(const tokenizer::Tokenizer& tokenizer) {
  K3_RETURN_IF_ERROR(tokenizer.SpecialId("<|open|>").status());
  K3_RETURN_IF_ERROR(tokenizer.SpecialId("<|close|>").status());
  K3_RETURN_IF_ERROR(tokenizer.SpecialId("<|sep|>").status());
  ReasoningMarkers markers;
  markers.open_ = tokenizer.Encode("<|open|>think<|sep|>", tokenizer::SpecialTokens::kAllowed);
  markers.close_ = tokenizer.Encode("<|close|>think<|sep|>", tokenizer::SpecialTokens::kAllowed);
  return markers;
}

bool ReasoningMarkers::ReasoningEnded(std::span<const tokenizer::TokenId> ids) const {
  const std::ptrdiff_t close = LastOccurrence(ids, close_);
  return close >= 0 && close > LastOccurrence(ids, open_);
}

}  // namespace k3::chat
