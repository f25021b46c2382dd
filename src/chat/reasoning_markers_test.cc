// Tests for the token-level "reasoning ended" check.
#include "src/chat/reasoning_markers.h"

#include <gtest/gtest.h>

#include "src/tokenizer/bpe_trainer.h"

namespace k3::chat {
namespace {

TEST(ReasoningMarkersTest, NewestThinkMarkerDecides) {
  const auto tokenizer =
      *tokenizer::Tokenizer::CreateK3(tokenizer::TrainByteLevelBpe(tokenizer::EmbeddedCorpus(), 256 + 600));
  auto markers = ReasoningMarkers::Create(tokenizer);
  ASSERT_TRUE(markers.ok());
  EXPECT_EQ(markers->open_ids().front(), *tokenizer.SpecialId("<|open|>"));
  EXPECT_EQ(markers->close_ids().back(), *tokenizer.SpecialId("<|sep|>"));
  const auto ids = [&](const std::string& text) {
    return tokenizer.Encode(text, tokenizer::SpecialTokens::kAllowed);
  };
  // An earlier turn's think block is closed, but the generation prompt opened a new one.
  const std::string prompt =
      "<|open|>think<|sep|>old<|close|>think<|sep|>x<|close|>message<|sep|><|open|>message "
      "role=\"assistant\"<|sep|>"
      "<|open|>think<|sep|>";
  EXPECT_FALSE(markers->ReasoningEnded(ids(prompt)));
  EXPECT_FALSE(markers->ReasoningEnded(ids(prompt + "still thinking")));
  EXPECT_TRUE(markers->ReasoningEnded(ids(prompt + "done<|close|>think<|sep|><|open|>response<|sep|>{")));
  EXPECT_FALSE(markers->ReasoningEnded(ids("")));
  // Marker text typed as ordinary tokens is not the special sequence.
  EXPECT_FALSE(markers->ReasoningEnded(
      tokenizer.Encode(prompt + "<|close|>think<|sep|>", tokenizer::SpecialTokens::kDisallowed)));
  auto no_specials = tokenizer::Tokenizer::Create(tokenizer.ranks(), {});
  ASSERT_TRUE(no_specials.ok());
  EXPECT_FALSE(ReasoningMarkers::Create(*no_specials).ok());
}

}  // namespace
}  // namespace k3::chat
