// Tests for the BPE trainer and tokenizer-file writer.
#include "src/tokenizer/bpe_trainer.h"

#include <chrono>
#include <filesystem>
#include <set>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "src/base/base64.h"
#include "src/base/file.h"
#include "src/tokenizer/pretokenizer.h"
#include "src/tokenizer/rank_table.h"

namespace k3::tokenizer {
namespace {

TEST(BpeTrainerTest, BytesFirstThenMostFrequentPairs) {
  const auto ranks = TrainByteLevelBpe("low low low lower lowest", 260);
  ASSERT_EQ(ranks.size(), 260u);
  for (int b = 0; b < 256; ++b) EXPECT_EQ(ranks[b], std::string(1, static_cast<char>(b)));
  // Pieces: "low" x1, " low" x2, " lower", " lowest": "lo" and "ow" occur 5 times; ("l","o") < ("o","w").
  EXPECT_EQ(ranks[256], "lo");
  EXPECT_EQ(ranks[257], "low");
  EXPECT_EQ(ranks[258], " low");
}

TEST(BpeTrainerTest, DeterministicUniqueAndPieceBounded) {
  const std::string_view corpus = EmbeddedCorpus().substr(0, 150'000);
  const auto a = TrainByteLevelBpe(corpus, 1500);
  const auto b = TrainByteLevelBpe(corpus, 1500);
  EXPECT_EQ(a, b);
  ASSERT_EQ(a.size(), 1500u);
  EXPECT_EQ(std::set<std::string>(a.begin(), a.end()).size(), a.size());
  const RankTable table(a);
  // Unique pieces joined by a byte the corpus never contains.
  std::vector<std::string_view> pieces;
  PreTokenizer::Shared().Split(corpus, pieces);
  std::set<std::string_view> unique(pieces.begin(), pieces.end());
  std::string joined;
  for (std::string_view piece : unique) (joined += piece) += '\0';
  for (size_t r = 256; r < a.size(); ++r) {
    // Each token lies inside one pre-tokeniser piece (never crosses a boundary) ...
    EXPECT_NE(joined.find(a[r]), std::string::npos) << a[r];
    // ... and is the concatenation of two lower ranks.
    bool found = false;
    for (size_t split = 1; split < a[r].size() && !found; ++split) {
      found = table.Find(a[r].substr(0, split)) < r && table.Find(a[r].substr(split)) < r;
    }
    EXPECT_TRUE(found) << r;
  }
}

TEST(BpeTrainerTest, StopsWhenPairsRunOut) {
  const auto ranks = TrainByteLevelBpe("abc", 1000);
  EXPECT_EQ(ranks.size(), 258u);  // "ab"/"bc" then "abc"
  EXPECT_EQ(TrainByteLevelBpe("", 1000).size(), 256u);
  EXPECT_EQ(TrainByteLevelBpe("abc", 10).size(), 256u);  // never fewer than the 256 bytes
}

TEST(BpeTrainerTest, EmbeddedCorpusIsLargeMixedAndTrainsFast) {
  const std::string_view corpus = EmbeddedCorpus();
  EXPECT_GT(corpus.size(), 300'000u);
  EXPECT_NE(corpus.find("中国"), std::string_view::npos);
  EXPECT_NE(corpus.find("\xF0\x9F"), std::string_view::npos);  // emoji
  EXPECT_NE(corpus.find("<|open|>message"), std::string_view::npos);
  const auto start = std::chrono::steady_clock::now();
  const auto ranks = TrainByteLevelBpe(corpus, 256 + 512);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(ranks.size(), 768u);
  EXPECT_LT(seconds, 20.0);  // sanitizer builds included
}

TEST(BpeTrainerTest, WritesTokenizerFiles) {
  const auto ranks = TrainByteLevelBpe(EmbeddedCorpus().substr(0, 50'000), 300);
  const std::string dir = testing::TempDir() + "/k3_tokenizer_files";
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(WriteTokenizerFiles(dir, ranks).ok());

  auto model = ReadFileToString(dir + "/tiktoken.model");
  ASSERT_TRUE(model.ok());
  size_t line_start = 0, rank = 0;
  while (line_start < model->size()) {
    const size_t line_end = model->find('\n', line_start);
    const std::string line = model->substr(line_start, line_end - line_start);
    const size_t space = line.find(' ');
    auto bytes = Base64Decode(line.substr(0, space));
    ASSERT_TRUE(bytes.ok());
    EXPECT_EQ(*bytes, ranks[rank]);
    EXPECT_EQ(line.substr(space + 1), std::to_string(rank));
    ++rank;
    line_start = line_end + 1;
  }
  EXPECT_EQ(rank, ranks.size());

  auto config_text = ReadFileToString(dir + "/tokenizer_config.json");
  ASSERT_TRUE(config_text.ok());
  const auto config = nlohmann::json::parse(*config_text);
  const auto& decoder = config["added_tokens_decoder"];
  EXPECT_EQ(decoder.size(), 256u);
  const auto name = [&](size_t offset) {
    return decoder[std::to_string(300 + offset)]["content"].get<std::string>();
  };
  EXPECT_EQ(name(0), "[BOS]");
  EXPECT_EQ(name(1), "[EOS]");
  EXPECT_EQ(name(2), "<|end_of_msg|>");
  EXPECT_EQ(name(3), "<|open|>");
  EXPECT_EQ(name(4), "<|close|>");
  EXPECT_EQ(name(5), "<|sep|>");
  EXPECT_EQ(name(6), "[start_header_id]");
  EXPECT_EQ(name(7), "[end_header_id]");
  EXPECT_EQ(name(8), "<|reserved_token_308|>");
  EXPECT_EQ(name(9), "[EOT]");
  EXPECT_EQ(name(18), "<|media_begin|>");
  EXPECT_EQ(name(21), "<|media_pad|>");
  EXPECT_EQ(name(65), "<osagent_mode>");
  EXPECT_EQ(name(254), "[UNK]");
  EXPECT_EQ(name(255), "[PAD]");
  EXPECT_TRUE(decoder["300"]["special"].get<bool>());
  EXPECT_EQ(config["bos_token"], "[BOS]");
  EXPECT_EQ(config["eos_token"], "[EOS]");
  EXPECT_EQ(config["model_max_length"], 1048576);

  auto merges = ReadFileToString(dir + "/merges.txt");
  ASSERT_TRUE(merges.ok());
  EXPECT_EQ(static_cast<size_t>(std::count(merges->begin(), merges->end(), '\n')), 1 + ranks.size() - 256);
}

TEST(BpeTrainerTest, WriteRejectsBadVocabularies) {
  std::vector<std::string> ranks = {"a", "b"};
  EXPECT_FALSE(WriteTokenizerFiles(testing::TempDir() + "/k3_bad_vocab", ranks).ok());
  ranks.clear();
  for (int b = 0; b < 256; ++b) ranks.emplace_back(1, static_cast<char>(b));
  ranks.push_back("ab");
  ranks.push_back("ab");
  EXPECT_FALSE(WriteTokenizerFiles(testing::TempDir() + "/k3_bad_vocab", ranks).ok());
}

}  // namespace
}  // namespace k3::tokenizer
