// Streaming parity (anchors.md §4 #10): for every output, the deltas of StreamParser concatenate to the
// non-streaming ParseOutput result whether the text arrives whole, character by character, token by
// token (through the incremental detokeniser) or in random pieces; and no delta contains marker text.
#include "src/chat/stream_parser.h"

#include <random>

#include <gtest/gtest.h>

#include "src/tokenizer/bpe_trainer.h"
#include "src/tokenizer/incremental_decoder.h"

namespace k3::chat {
namespace {

struct Collected {
  ParsedOutput result;
  bool marker_leak = false;
};

Collected Stream(const std::vector<std::string>& chunks, const ParserOptions& options) {
  StreamParser parser(options);
  Collected collected;
  const auto add = [&](const OutputDelta& delta) {
    collected.result.reasoning += delta.reasoning;
    collected.result.content += delta.content;
    for (const auto& call : delta.tool_calls) collected.result.tool_calls.push_back(call);
    for (const std::string* text : {&delta.reasoning, &delta.content}) {
      for (const char* marker : {"<|open|>", "<|close|>", "<|sep|>", "<|end_of_msg|>"}) {
        if (text->find(marker) != std::string::npos) collected.marker_leak = true;
      }
    }
  };
  for (const std::string& chunk : chunks) add(parser.Push(chunk));
  add(parser.Finish());
  return collected;
}

const std::vector<std::string>& Outputs() {
  static const std::vector<std::string> outputs = {
      "Let me "
      "think.<|close|>think<|sep|><|open|>response<|sep|>Hello!<|close|>response<|sep|><|close|>message<|sep|"
      ">",
      "R<|close|> think <|sep|><|open|> response<|sep|>Answer<|close|> response <|sep|><|close|> "
      "message<|sep|>",
      "R<|close|>think<|open|>response<|sep|>A<|close|>response<|sep|>",
      "reasoning only, cut off <x> <|clo",
      "Hello<|close|>message<|sep|><|end_of_msg|>",
      "R<|close|>think<|sep|>\n<|open|>response<|sep|>Checking 你好 👋🏽.<|close|>response<|sep|>"
      "<|open|>tools<|sep|><|open|>call tool=\"a\" index=\"1\"<|sep|><|open|>argument key=\"x\" "
      "type=\"string\"<|sep|>"
      "1 < 2<|close|>argument<|sep|><|close|>call<|sep|><|open|>call tool=\"b&amp;\" index=\"2\"<|sep|>"
      "<|open|>argument key=\"n\" type=\"number\"<|sep|>4<|close|>argument<|sep|><|close|>call<|sep|>"
      "<|close|>tools<|sep|><|close|>message<|sep|>",
      "thinking<|open|>tools<|sep|><|open|>call tool=\"f\" index=\"1\"<|sep|><|open|>json "
      "type=\"object\"<|sep|>"
      "{\"q\": [1]}<|close|>json<|sep|><|close|>call<|sep|><|close|>tools<|sep|>",
      "<|open|>think<|sep|>a<|sep|>b<|close|>think<|sep|>c [EOS] d",
  };
  return outputs;
}

void ExpectParity(const std::string& text, const ParserOptions& options,
                  const std::vector<std::string>& chunks, const std::string& how) {
  const ParsedOutput whole = ParseOutput(text, options);
  const Collected streamed = Stream(chunks, options);
  EXPECT_EQ(streamed.result.reasoning, whole.reasoning) << how << ": " << text;
  EXPECT_EQ(streamed.result.content, whole.content) << how << ": " << text;
  EXPECT_EQ(streamed.result.tool_calls, whole.tool_calls) << how << ": " << text;
  EXPECT_FALSE(streamed.marker_leak) << how << ": " << text;
}

TEST(StreamParserTest, EveryChunkingMatchesTheWholeParse) {
  std::mt19937 rng(3);
  for (const std::string& text : Outputs()) {
    for (const ParserOptions options :
         {ParserOptions{true, true}, ParserOptions{false, true}, ParserOptions{true, false}}) {
      ExpectParity(text, options, {text}, "one chunk");
      std::vector<std::string> chars;
      for (char c : text) chars.emplace_back(1, c);
      ExpectParity(text, options, chars, "byte by byte");
      for (int trial = 0; trial < 20; ++trial) {
        std::vector<std::string> pieces;
        for (size_t pos = 0; pos < text.size();) {
          const size_t length = 1 + rng() % 12;
          pieces.push_back(text.substr(pos, length));
          pos += length;
        }
        ExpectParity(text, options, pieces, "random pieces");
      }
    }
  }
}

TEST(StreamParserTest, TokenByTokenThroughTheDetokeniser) {
  const auto tokenizer =
      *tokenizer::Tokenizer::CreateK3(tokenizer::TrainByteLevelBpe(tokenizer::EmbeddedCorpus(), 256 + 800));
  for (const std::string& text : Outputs()) {
    for (auto specials : {tokenizer::SpecialTokens::kAllowed, tokenizer::SpecialTokens::kDisallowed}) {
      tokenizer::IncrementalDecoder decoder(tokenizer);
      std::vector<std::string> chunks;
      for (tokenizer::TokenId id : tokenizer.Encode(text, specials)) chunks.push_back(*decoder.Push(id));
      chunks.push_back(decoder.Flush());
      ExpectParity(text, {true, true}, chunks, "token by token");
    }
  }
}

TEST(StreamParserTest, SeveralCallsInOneDeltaKeepTheirOrderAndArguments) {
  const std::string& text = Outputs()[5];
  const auto first_call_end = text.find("<|close|>call<|sep|>") + 1;
  StreamParser parser({true, true});
  const OutputDelta before = parser.Push(text.substr(0, first_call_end));
  EXPECT_TRUE(before.tool_calls.empty());
  const OutputDelta rest = parser.Push(text.substr(first_call_end));
  ASSERT_EQ(rest.tool_calls.size(), 2u);
  EXPECT_EQ(rest.tool_calls[0].arguments, R"({"x":"1 < 2"})");
  EXPECT_EQ(rest.tool_calls[1].name, "b&");
  EXPECT_EQ(rest.tool_calls[1].arguments, R"({"n":4})");
  EXPECT_TRUE(parser.Finish().empty());
}

// continue_final_message (xtml_renderer.h): a prompt that ends inside the response channel is parsed with
// thinking off, so the continuation is content from its first character, chunked or whole.
TEST(StreamParserTest, ContinuedResponseIsContentFromTheStart) {
  ParserOptions options;
  options.thinking = false;
  const std::string text = " upon a time.<|close|>response<|sep|><|close|>message<|sep|>";
  std::vector<std::string> chars;
  for (char c : text) chars.emplace_back(1, c);
  const Collected streamed = Stream(chars, options);
  EXPECT_EQ(streamed.result.content, " upon a time.");
  EXPECT_EQ(streamed.result.reasoning, "");
  EXPECT_FALSE(streamed.marker_leak);
  EXPECT_EQ(ParseOutput(text, options).content, " upon a time.");
}

// add_generation_prompt false: the model may write the assistant message open itself; like every marker it
// is dropped from the text, so reasoning and content come out as after a generation prompt, in streaming as
// in the whole parse, with thinking on and off.
TEST(StreamParserTest, MessageOpenWrittenByTheModelIsDropped) {
  for (bool thinking : {true, false}) {
    ParserOptions options;
    options.thinking = thinking;
    const std::string text = std::string("<|open|>message role=\"assistant\"<|sep|>") +
                             (thinking ? "<|open|>think<|sep|>R<|close|>think<|sep|>" : "") +
                             "<|open|>response<|sep|>C<|close|>response<|sep|><|close|>message<|sep|>";
    const ParsedOutput whole = ParseOutput(text, options);
    EXPECT_EQ(whole.reasoning, thinking ? "R" : "");
    EXPECT_EQ(whole.content, "C");
    std::vector<std::string> chars;
    for (char c : text) chars.emplace_back(1, c);
    ExpectParity(text, options, chars, "char by char");
  }
}

}  // namespace
}  // namespace k3::chat
