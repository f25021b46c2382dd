// Tests for the token report and the command input helpers.
#include "src/tokenizer/token_report.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace k3::tokenizer {
namespace {

const Tokenizer& BytesTokenizer() {
  static const Tokenizer tokenizer = *LoadOrTrainTokenizer("", 256);
  return tokenizer;
}

TEST(TokenReportTest, DisplaysTokensReadably) {
  const Tokenizer& tokenizer = BytesTokenizer();
  EXPECT_EQ(DisplayToken(tokenizer, 'a'), "a");
  EXPECT_EQ(DisplayToken(tokenizer, '\n'), "\\n");
  EXPECT_EQ(DisplayToken(tokenizer, '\\'), "\\\\");
  EXPECT_EQ(DisplayToken(tokenizer, 0x01), "\\x01");
  EXPECT_EQ(DisplayToken(tokenizer, 0xE4), "\\xe4");
  EXPECT_EQ(DisplayToken(tokenizer, 256 + 3), "<|open|>");
  EXPECT_EQ(DisplayToken(tokenizer, 9999), "<unknown id 9999>");
}

TEST(TokenReportTest, FormatsTextAndJson) {
  const Tokenizer& tokenizer = BytesTokenizer();
  const std::vector<TokenId> ids = {'h', 'i', 256 + 2};
  EXPECT_EQ(*FormatTokenReport(tokenizer, ids, ReportFormat::kText),
            "ids: [104, 105, 258]\ncount: 3\n104\th\n105\ti\n258\t<|end_of_msg|>\n");
  const auto json = nlohmann::json::parse(*FormatTokenReport(tokenizer, ids, ReportFormat::kJson));
  EXPECT_EQ(json["count"], 3);
  EXPECT_EQ(json["text"], "hi<|end_of_msg|>");
  EXPECT_EQ(json["tokens"][2], "<|end_of_msg|>");
  EXPECT_FALSE(FormatTokenReport(tokenizer, std::vector<TokenId>{100000}, ReportFormat::kText).ok());
  EXPECT_FALSE(ParseReportFormat("yaml").ok());
}

TEST(TokenReportTest, ParsesInputs) {
  EXPECT_EQ(*ParseJsonStringInput(R"("caf\u00e9\n")"), "caf\xC3\xA9\n");
  EXPECT_FALSE(ParseJsonStringInput("[1]").ok());
  EXPECT_FALSE(ParseJsonStringInput("\"unterminated").ok());
  EXPECT_EQ(*ParseIdList("[1, 2,3]\n 4"), (std::vector<TokenId>{1, 2, 3, 4}));
  EXPECT_FALSE(ParseIdList("1 x").ok());
  EXPECT_FALSE(ParseIdList("1-2").ok());
  EXPECT_FALSE(ParseIdList("99999999999").ok());
  EXPECT_FALSE(LoadOrTrainTokenizer("", 12).ok());
  EXPECT_FALSE(LoadOrTrainTokenizer("/nonexistent/dir", 0).ok());
}

}  // namespace
}  // namespace k3::tokenizer
