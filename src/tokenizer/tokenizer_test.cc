// Tests for Tokenizer (encode / decode / specials / loading) and IncrementalDecoder.
#include "src/tokenizer/tokenizer.h"

#include <filesystem>
#include <random>

#include <gtest/gtest.h>

#include "src/base/base64.h"
#include "src/base/file.h"
#include "src/tokenizer/bpe_trainer.h"
#include "src/tokenizer/incremental_decoder.h"
#include "src/tokenizer/special_tokens.h"

namespace k3::tokenizer {
namespace {

const Tokenizer& Trained() {
  static const Tokenizer tokenizer = [] {
    auto created = Tokenizer::CreateK3(TrainByteLevelBpe(EmbeddedCorpus(), 256 + 3000));
    EXPECT_TRUE(created.ok());
    return std::move(created).value();
  }();
  return tokenizer;
}

std::string Base64Line(int byte) {
  return Base64Encode(std::string(1, static_cast<char>(byte))) + " " + std::to_string(byte) + "\n";
}

std::string DecodeOrDie(const Tokenizer& tokenizer, const std::vector<TokenId>& ids) {
  auto text = tokenizer.Decode(ids);
  EXPECT_TRUE(text.ok()) << text.status().ToString();
  return text.ok() ? *text : std::string();
}

TEST(TokenizerTest, RoundTripsTheCorpusAndRandomBytes) {
  const Tokenizer& tokenizer = Trained();
  const std::string corpus(EmbeddedCorpus());
  const auto ids = tokenizer.Encode(corpus, SpecialTokens::kDisallowed);
  EXPECT_LT(ids.size(), corpus.size() / 2);  // the merges compress
  EXPECT_EQ(DecodeOrDie(tokenizer, ids), corpus);

  std::mt19937 rng(1);
  for (int trial = 0; trial < 300; ++trial) {
    std::string bytes(rng() % 64, '\0');
    for (char& c : bytes) c = static_cast<char>(rng());
    EXPECT_EQ(DecodeOrDie(tokenizer, tokenizer.Encode(bytes, SpecialTokens::kAllowed)), bytes);
  }
}

TEST(TokenizerTest, WholePieceRanksWinOverMerges) {
  std::vector<std::string> ranks;
  for (int b = 0; b < 256; ++b) ranks.emplace_back(1, static_cast<char>(b));
  ranks.push_back("ab");   // 256
  ranks.push_back("bcd");  // 257: "bcd" alone is found whole, though no merge path builds it from "ab"
  auto tokenizer = Tokenizer::Create(ranks, {});
  ASSERT_TRUE(tokenizer.ok());
  EXPECT_EQ(tokenizer->Encode("bcd", SpecialTokens::kDisallowed), (std::vector<TokenId>{257}));
  EXPECT_EQ(tokenizer->Encode("abcd", SpecialTokens::kDisallowed), (std::vector<TokenId>{256, 'c', 'd'}));
}

TEST(TokenizerTest, SpecialTokensAllowedOrDisallowed) {
  const Tokenizer& tokenizer = Trained();
  const TokenId first = static_cast<TokenId>(tokenizer.num_ranks());
  EXPECT_EQ(tokenizer.vocab_size(), tokenizer.num_ranks() + 256);
  EXPECT_EQ(*tokenizer.SpecialId("<|open|>"), first + kOpenOffset);
  EXPECT_EQ(*tokenizer.SpecialId("<|end_of_msg|>"), first + kEndOfMsgOffset);
  EXPECT_FALSE(tokenizer.SpecialId("<|nope|>").ok());

  const std::string text = "<|open|>message<|sep|>hi<|close|>message<|sep|>[EOS]";
  const auto allowed = tokenizer.Encode(text, SpecialTokens::kAllowed);
  ASSERT_GE(allowed.size(), 6u);
  EXPECT_EQ(allowed.front(), first + kOpenOffset);
  EXPECT_EQ(allowed.back(), first + kEosOffset);
  EXPECT_EQ(DecodeOrDie(tokenizer, allowed), text);  // names, no spaces
  const auto disallowed = tokenizer.Encode(text, SpecialTokens::kDisallowed);
  for (TokenId id : disallowed) EXPECT_FALSE(tokenizer.IsSpecial(id));
  EXPECT_EQ(DecodeOrDie(tokenizer, disallowed), text);

  // A reserved id is a special too, and its name is recognised.
  const std::string reserved = fmt::format("<|reserved_token_{}|>", first + 8);
  EXPECT_EQ(tokenizer.Encode(reserved, SpecialTokens::kAllowed), (std::vector<TokenId>{first + 8}));
  EXPECT_FALSE(tokenizer.Decode(std::vector<TokenId>{first + 256}).ok());
}

TEST(TokenizerTest, MatchesTheBytePiecesOfAnUntrainedVocabulary) {
  auto bytes_only = Tokenizer::CreateK3(TrainByteLevelBpe("", 256));
  ASSERT_TRUE(bytes_only.ok());
  const auto ids = bytes_only->Encode("h\xC3\xA9", SpecialTokens::kDisallowed);
  EXPECT_EQ(ids, (std::vector<TokenId>{'h', 0xC3, 0xA9}));
}

TEST(TokenizerTest, LongInputGuardSplitsRuns) {
  const Tokenizer& tokenizer = Trained();
  const std::string run(60'000, 'x');
  const auto whole = tokenizer.Encode(run, SpecialTokens::kDisallowed);
  // Same as encoding the three guard segments separately.
  std::vector<TokenId> parts;
  for (size_t length : {25'000, 25'000, 10'000})
    tokenizer.EncodeAppend(std::string(length, 'x'), SpecialTokens::kDisallowed, parts);
  EXPECT_EQ(whole, parts);
  EXPECT_EQ(DecodeOrDie(tokenizer, whole), run);
}

TEST(TokenizerTest, LoadsWhatTheWriterWrites) {
  const auto ranks = TrainByteLevelBpe(EmbeddedCorpus().substr(0, 100'000), 600);
  const std::string dir = testing::TempDir() + "/k3_tokenizer_load";
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(WriteTokenizerFiles(dir, ranks).ok());
  auto loaded = Tokenizer::LoadFromDirectory(dir);
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  auto direct = Tokenizer::CreateK3(ranks);
  ASSERT_TRUE(direct.ok());
  EXPECT_EQ(loaded->vocab_size(), 600u + 256u);
  const std::string text = "<|open|>user<|sep|>Hello, 世界! 👋🏽 it's 2026.\n<|end_of_msg|>";
  EXPECT_EQ(loaded->Encode(text, SpecialTokens::kAllowed), direct->Encode(text, SpecialTokens::kAllowed));
  EXPECT_EQ(*loaded->SpecialId("[PAD]"), 600u + 255u);
  EXPECT_EQ(*loaded->SpecialId("<|reserved_token_608|>"), 608u);
}

TEST(TokenizerTest, RejectsMalformedFiles) {
  const std::string dir = testing::TempDir() + "/k3_tokenizer_bad";
  std::filesystem::create_directories(dir);
  std::string bytes_model;
  for (int b = 0; b < 256; ++b) bytes_model += Base64Line(b);
  const auto write = [&](const std::string& model, const std::string& config) {
    EXPECT_TRUE(WriteFileAtomic(dir + "/tiktoken.model", model).ok());
    EXPECT_TRUE(WriteFileAtomic(dir + "/tokenizer_config.json", config).ok());
    return Tokenizer::LoadFromDirectory(dir);
  };
  EXPECT_TRUE(write(bytes_model, "{}").ok());
  EXPECT_FALSE(write(bytes_model + "!!!! 256\n", "{}").ok());            // bad base64
  EXPECT_FALSE(write(bytes_model + "YWI= 300\n", "{}").ok());            // gap in ranks
  EXPECT_FALSE(write(bytes_model + "YWI= 255\n", "{}").ok());            // rank twice
  EXPECT_FALSE(write(bytes_model + "YWI= 256\nYWI= 257\n", "{}").ok());  // duplicate bytes
  EXPECT_FALSE(write(bytes_model + "YWI=\n", "{}").ok());                // no rank
  EXPECT_FALSE(write("YWI= 0\n", "{}").ok());                            // single bytes missing
  EXPECT_FALSE(write(bytes_model, "{not json").ok());
  EXPECT_FALSE(write(bytes_model, R"({"added_tokens_decoder": {"12": {"content": "x"}}})").ok());
  EXPECT_FALSE(write(bytes_model, R"({"added_tokens_decoder": {"256": {"content": 5}}})").ok());
  EXPECT_FALSE(
      write(bytes_model, R"({"added_tokens_decoder": {"256": {"content": "<|reserved_token_257|>"}}})").ok());
  auto named = write(
      bytes_model, R"({"added_tokens_decoder": {"258": {"content": "<|open|>"}, "600": {"content": "X"}}})");
  ASSERT_TRUE(named.ok()) << named.status().ToString();
  EXPECT_EQ(*named->SpecialId("<|open|>"), 258u);
  EXPECT_EQ(*named->SpecialId("X"), 600u);
  EXPECT_EQ(named->vocab_size(), 601u);
  std::filesystem::remove(dir + "/tokenizer_config.json");
  EXPECT_FALSE(Tokenizer::LoadFromDirectory(dir).ok());
}

TEST(IncrementalDecoderTest, HoldsBackSplitCharacters) {
  const Tokenizer& tokenizer = Trained();
  // Byte tokens of "é👋" arrive one at a time: nothing is emitted until each character is complete.
  IncrementalDecoder decoder(tokenizer);
  const std::string text = "\xC3\xA9\xF0\x9F\x91\x8B!";
  std::vector<std::string> chunks;
  for (unsigned char byte : text) chunks.push_back(*decoder.Push(byte));
  EXPECT_EQ(chunks, (std::vector<std::string>{"", "\xC3\xA9", "", "", "", "\xF0\x9F\x91\x8B", "!"}));
  EXPECT_EQ(decoder.Flush(), "");

  // An incomplete character at the end, or one interrupted by a special, becomes U+FFFD.
  IncrementalDecoder cut(tokenizer);
  EXPECT_EQ(*cut.Push(0xE4), "");
  EXPECT_EQ(*cut.Push(*tokenizer.SpecialId("<|sep|>")), "\xEF\xBF\xBD<|sep|>");
  EXPECT_EQ(*cut.Push(0xE4), "");
  EXPECT_EQ(cut.Flush(), "\xEF\xBF\xBD");
  EXPECT_FALSE(cut.Push(static_cast<TokenId>(tokenizer.vocab_size())).ok());
}

// vLLM's skip_special_tokens (specials add no text, except the markup a parser needs) and
// spaces_between_special_tokens (a rendered special is set apart by spaces, as Hugging Face decodes).
TEST(IncrementalDecoderTest, SkipsOrSpacesSpecialTokens) {
  const Tokenizer& tokenizer = Trained();
  const TokenId media = *tokenizer.SpecialId("<|media_begin|>");
  const TokenId sep = *tokenizer.SpecialId("<|sep|>");
  auto decode = [&](const DecodeOptions& options, const std::vector<TokenId>& ids) {
    IncrementalDecoder decoder(tokenizer, options);
    std::string text;
    for (TokenId id : ids) text += *decoder.Push(id);
    return text + decoder.Flush();
  };
  const std::vector<TokenId> ids = {'a', media, 'b', sep, media, media, 'c'};
  EXPECT_EQ(decode({}, ids), "a<|media_begin|>b<|sep|><|media_begin|><|media_begin|>c");
  EXPECT_EQ(decode({.skip_special_tokens = true}, ids), "abc");
  EXPECT_EQ(decode({.skip_special_tokens = true, .keep = {sep}}, ids), "ab<|sep|>c");
  EXPECT_EQ(decode({.spaces_between_special_tokens = true, .keep = {sep}}, ids),
            "a <|media_begin|> b<|sep|> <|media_begin|> <|media_begin|> c");
  EXPECT_EQ(decode({.spaces_between_special_tokens = true}, {media, 'x'}), "<|media_begin|> x");
  // A character split around a skipped special is still whole.
  EXPECT_EQ(decode({.skip_special_tokens = true}, {0xC3, media, 0xA9}), "\xC3\xA9");
}

TEST(IncrementalDecoderTest, ChunksConcatenateToTheText) {
  const Tokenizer& tokenizer = Trained();
  const std::string_view corpus = EmbeddedCorpus();
  const size_t start = corpus.find('\n', 300'000) + 1;  // whole lines: valid UTF-8
  const std::string text(corpus.substr(start, corpus.find('\n', start + 60'000) - start));
  IncrementalDecoder decoder(tokenizer);
  std::string streamed;
  for (TokenId id : tokenizer.Encode(text, SpecialTokens::kDisallowed)) {
    auto chunk = decoder.Push(id);
    ASSERT_TRUE(chunk.ok());
    streamed += *chunk;
  }
  streamed += decoder.Flush();
  EXPECT_TRUE(streamed == text);
}

}  // namespace
}  // namespace k3::tokenizer
