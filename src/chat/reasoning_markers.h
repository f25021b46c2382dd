// "Has reasoning ended?" on token ids (spec §4.4), for gating structured output: true when the most
// recent think-close marker sequence (<|close|> think <|sep|>) comes after the most recent think-open
// sequence (<|open|> think <|sep|>) in prompt + output ids. The sequences are whatever the tokenizer
// encodes the marker texts to (3 ids with the real vocabulary).
#pragma once

#include <span>
#include <vector>

#include "src/base/status.h"
#include "src/tokenizer/tokenizer.h"

namespace k3::chat {

class ReasoningMarkers {
 public:
  static Result<ReasoningMarkers> Create(const tokenizer::Tokenizer& tokenizer);

  bool ReasoningEnded(std::span<const tokenizer::TokenId> ids) const;

  const std::vector<tokenizer::TokenId>& open_ids() const { return open_; }
  const std::vector<tokenizer::TokenId>& close_ids() const { return close_; }

 private:
  std::vector<tokenizer::TokenId> open_;
  std::vector<tokenizer::TokenId> close_;
};

}  // namespace k3::chat
