// PromptForLog: --max-log-len cuts the logged prompt text to N characters and the ids to N ids.
#include "src/server/request_log.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "src/tokenizer/token_report.h"

namespace k3::server {
namespace {

using ::testing::HasSubstr;

const tokenizer::Tokenizer& Tok() {
  static const tokenizer::Tokenizer tokenizer = *tokenizer::LoadOrTrainTokenizer("", 256);
  return tokenizer;
}

std::vector<int32_t> Ids(const std::string& text) {
  std::vector<int32_t> out;
  for (auto id : Tok().Encode(text, tokenizer::SpecialTokens::kDisallowed))
    out.push_back(static_cast<int32_t>(id));
  return out;
}

TEST(PromptForLogTest, UnlimitedKeepsEverything) {
  const std::vector<int32_t> ids = Ids("caf\xC3\xA9 \"quoted\"\nline");
  const std::string line = PromptForLog(Tok(), ids, -1);
  EXPECT_THAT(line, HasSubstr("prompt: \"caf\xC3\xA9 \\\"quoted\\\"\\nline\""));
  EXPECT_THAT(line, ::testing::Not(HasSubstr("more")));
  EXPECT_THAT(line, HasSubstr(std::to_string(ids.back()) + "]"));
}

TEST(PromptForLogTest, CutsCharactersAndIds) {
  const std::vector<int32_t> ids = Ids("\xC3\xA9t\xC3\xA9 " + std::string(40, 'x'));
  ASSERT_GT(ids.size(), 3u);
  const std::string line = PromptForLog(Tok(), ids, 3);
  // Three characters: the two-byte \u00e9 counts once, and is never cut in half.
  EXPECT_THAT(line, HasSubstr("prompt: \"\xC3\xA9t\xC3\xA9\"(+41 more characters)"));
  EXPECT_THAT(line, HasSubstr(fmt::format("prompt_token_ids: [{}, {}, {}](+{} more)", ids[0], ids[1], ids[2],
                                          ids.size() - 3)));
  EXPECT_EQ(PromptForLog(Tok(), ids, 0).substr(0, 10), "prompt: \"\"");
}

}  // namespace
}  // namespace k3::server
