// Table tests for the output parser: spec §4.3/§4.4 and each K3 parser bug of anchors.md §4.
#include "src/chat/output_parser.h"
#include "src/chat/stream_parser.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace k3::chat {
namespace {

ParserOptions Thinking(bool tools = false) { return {.thinking = true, .tools_enabled = tools}; }
ParserOptions NoThinking(bool tools = false) { return {.thinking = false, .tools_enabled = tools}; }

const char kCall[] =
    "<|open|>tools<|sep|><|open|>call tool=\"get_weather\" index=\"1\"<|sep|><|open|>argument key=\"city\" "
    "type=\"string\"<|sep|>Paris<|close|>argument<|sep|><|open|>argument key=\"days\" type=\"number\"<|sep|>3"
    "<|close|>argument<|sep|><|close|>call<|sep|><|close|>tools<|sep|>";

TEST(OutputParserTest, ThinkingResponseAndMessageClose) {
  const auto out = ParseOutput(
      "Let me "
      "think.<|close|>think<|sep|><|open|>response<|sep|>Hello!<|close|>response<|sep|><|close|>message<|sep|"
      ">",
      Thinking());
  EXPECT_EQ(out.reasoning, "Let me think.");
  EXPECT_EQ(out.content, "Hello!");
  EXPECT_TRUE(out.reasoning_ended);
  EXPECT_TRUE(out.tool_calls.empty());
}

// ignore_eos: the content runs past the end of the message to the end of the output (markers dropped),
// streamed or whole.
TEST(OutputParserTest, IgnoreEndKeepsTheTextAfterTheMessage) {
  ParserOptions options = Thinking();
  options.ignore_end = true;
  const std::string text =
      "R<|close|>think<|sep|><|open|>response<|sep|>Hello<|close|>response<|sep|><|close|>message<|sep|>"
      "<|end_of_msg|> and more<|open|>assistant<|sep|> text";
  const auto out = ParseOutput(text, options);
  EXPECT_EQ(out.reasoning, "R");
  EXPECT_EQ(out.content, "Hello and more text");
  StreamParser stream(options);
  std::string content;
  for (char c : text) content += stream.Push(std::string(1, c)).content;
  content += stream.Finish().content;
  EXPECT_EQ(content, out.content);
  EXPECT_EQ(ParseOutput(text, Thinking()).content, "Hello");  // without it: the message's end ends it
}

TEST(OutputParserTest, PrintedThinkOpenAndNonThinkingMode) {
  EXPECT_EQ(ParseOutput("<|open|>think<|sep|>R<|close|>think<|sep|>C", Thinking()).reasoning, "R");
  const auto off = ParseOutput("Just text<|close|>response<|sep|><|close|>message<|sep|>", NoThinking());
  EXPECT_EQ(off.reasoning, "");
  EXPECT_EQ(off.content, "Just text");
}

TEST(OutputParserTest, ToolCallsWithTypedArguments) {
  const auto out = ParseOutput(
      std::string("R<|close|>think<|sep|><|open|>response<|sep|>Checking.<|close|>response<|sep|>") + kCall +
          "<|close|>message<|sep|>",
      Thinking(/*tools=*/true));
  EXPECT_EQ(out.content, "Checking.");
  ASSERT_EQ(out.tool_calls.size(), 1u);
  EXPECT_EQ(out.tool_calls[0].name, "get_weather");
  EXPECT_EQ(out.tool_calls[0].index, 1);
  EXPECT_EQ(out.tool_calls[0].arguments, R"({"city":"Paris","days":3})");
  EXPECT_FALSE(out.tool_calls[0].used_fallback);
  // Tools not enabled (no tools in the request, or tool_choice none): no calls, and no markup in content.
  const auto disabled = ParseOutput(std::string("R<|close|>think<|sep|>") + kCall, Thinking(false));
  EXPECT_TRUE(disabled.tool_calls.empty());
  EXPECT_EQ(disabled.content, "");
}

// anchors §4 #1: the think close is missing before the tools channel.
TEST(OutputParserTest, Anchor1MissingThinkCloseBeforeTools) {
  const auto out =
      ParseOutput(std::string("reasoning here") + kCall + "<|close|>message<|sep|>", Thinking(true));
  EXPECT_EQ(out.reasoning, "reasoning here");
  ASSERT_EQ(out.tool_calls.size(), 1u);
  EXPECT_EQ(out.tool_calls[0].name, "get_weather");
}

// anchors §4 #2: markers with interior spaces never leak.
TEST(OutputParserTest, Anchor2SpacedMarkers) {
  const auto out = ParseOutput(
      "R<|close|> think <|sep|><|open|> response<|sep|>Answer<|close|> response <|sep|><|close|> "
      "message<|sep|>",
      Thinking());
  EXPECT_EQ(out.reasoning, "R");
  EXPECT_EQ(out.content, "Answer");
}

// anchors §4 #3: no response close; the message close must not leak into content.
TEST(OutputParserTest, Anchor3MessageCloseWithoutResponseClose) {
  EXPECT_EQ(ParseOutput("Hello<|close|>message<|sep|>", NoThinking()).content, "Hello");
  EXPECT_EQ(ParseOutput("Hello<|close|>message<|sep|><|end_of_msg|>", NoThinking()).content, "Hello");
}

// anchors §4 #4: think markers spelled with ordinary tokens are the same text: still split.
TEST(OutputParserTest, Anchor4MarkersAsPlainText) {
  const std::string spelled = std::string("<|open|>think<|se") + "p|>R<|clo" + "se|>think<|sep|>C";
  const auto out = ParseOutput(spelled, Thinking());
  EXPECT_EQ(out.reasoning, "R");
  EXPECT_EQ(out.content, "C");
}

// anchors §4 #5: elided <|sep|> after the think close.
TEST(OutputParserTest, Anchor5ElidedThinkCloseSep) {
  const auto out = ParseOutput("R<|close|>think<|open|>response<|sep|>A<|close|>response<|sep|>", Thinking());
  EXPECT_EQ(out.reasoning, "R");
  EXPECT_EQ(out.content, "A");
}

// anchors §4 #6: cut off inside think: all reasoning, no content, nothing reclassified.
TEST(OutputParserTest, Anchor6TruncatedInsideThink) {
  const auto out = ParseOutput("still thinking about <b> and", Thinking());
  EXPECT_EQ(out.reasoning, "still thinking about <b> and");
  EXPECT_EQ(out.content, "");
  EXPECT_FALSE(out.reasoning_ended);
  // Cut off inside a marker: the fragment is dropped, not shown.
  EXPECT_EQ(ParseOutput("thinking<|clo", Thinking()).reasoning, "thinking");
  EXPECT_EQ(ParseOutput("thinking<|close|>thi", Thinking()).reasoning, "thinking");
}

// anchors §4 #7: bad typed values fall back to raw text (flagged); strings keep quotes, newlines,
// entities and marker-like text.
TEST(OutputParserTest, Anchor7BadArgumentValues) {
  const std::string text =
      "<|open|>tools<|sep|><|open|>call tool=\"f&quot;x&amp;\" index=\"2\"<|sep|>"
      "<|open|>argument key=\"n\" type=\"number\"<|sep|>12abc<|close|>argument<|sep|>"
      "<|open|>argument key=\"b\" type=\"boolean\"<|sep|>yes<|close|>argument<|sep|>"
      "<|open|>argument key=\"s\" type=\"string\"<|sep|>say \"hi\"\nline &quot; "
      "<|open<|close|>argument<|sep|>"
      "<|open|>argument key=\"o\" type=\"object\"<|sep|>{\"k\": [1, 2]}<|close|>argument<|sep|>"
      "<|close|>call<|sep|><|close|>tools<|sep|>";
  const auto out = ParseOutput(text, NoThinking(true));
  ASSERT_EQ(out.tool_calls.size(), 1u);
  EXPECT_EQ(out.tool_calls[0].name, "f\"x&");
  EXPECT_EQ(out.tool_calls[0].index, 2);
  EXPECT_TRUE(out.tool_calls[0].used_fallback);
  const auto arguments = nlohmann::json::parse(out.tool_calls[0].arguments);
  EXPECT_EQ(arguments["n"], "12abc");
  EXPECT_EQ(arguments["b"], "yes");
  EXPECT_EQ(arguments["s"], "say \"hi\"\nline &quot; <|open");
  EXPECT_EQ(arguments["o"]["k"][1], 2);
}

TEST(OutputParserTest, JsonBlockArgumentsAndNamelessCalls) {
  const std::string text =
      "<|open|>tools<|sep|><|open|>call tool=\"g\" index=\"1\"<|sep|><|open|>json type=\"object\"<|sep|>"
      "{\"a\": 1}<|close|>json<|sep|><|close|>call<|sep|><|open|>call index=\"2\"<|sep|><|close|>call<|sep|>"
      "<|open|>call tool=\"h\" index=\"3\"<|sep|><|open|>json "
      "type=\"object\"<|sep|>{broken<|close|>json<|sep|>"
      "<|close|>call<|sep|><|close|>tools<|sep|>";
  const auto out = ParseOutput(text, NoThinking(true));
  ASSERT_EQ(out.tool_calls.size(), 2u);  // the nameless call is dropped
  EXPECT_EQ(out.tool_calls[0].arguments, R"({"a":1})");
  EXPECT_EQ(out.tool_calls[1].name, "h");
  EXPECT_EQ(out.tool_calls[1].arguments, "{}");  // always valid JSON
  EXPECT_TRUE(out.tool_calls[1].used_fallback);
}

// anchors §4 #8: structured output with thinking on: reasoning and the JSON body both come back.
TEST(OutputParserTest, Anchor8JsonResponseWithThinking) {
  const auto out = ParseOutput(
      "plan<|close|>think<|sep|><|open|>response<|sep|>{\"a\": "
      "1}<|close|>response<|sep|><|close|>message<|sep|>",
      Thinking());
  EXPECT_EQ(out.reasoning, "plan");
  EXPECT_EQ(out.content, "{\"a\": 1}");
}

// anchors §4 #13/#14: nothing marker-like reaches content; stray markers are dropped.
TEST(OutputParserTest, Anchor13NoRawMarkers) {
  const auto out = ParseOutput(
      "R<|close|>think<|sep|><|sep|>\n<|open|>response<|sep|>A<|sep|>B<|open|>weird<|sep|>C", Thinking());
  EXPECT_EQ(out.content, "ABC");
  // Literal text that is not a marker stays.
  EXPECT_EQ(ParseOutput("a <|open|>! b < c [E", NoThinking()).content, "a <|open|>! b < c [E");
}

// A dropped stray marker must not join the text around it into a marker (fuzz_output_parser found
// "<|end_of_msg|<|sep|>>"): a space takes its place there, in partial mode too.
TEST(OutputParserTest, DroppedMarkersNeverJoinIntoAMarker) {
  EXPECT_EQ(ParseOutput("a<|end_of_msg|<|sep|>>b", NoThinking()).content, "a<|end_of_msg| >b");
  EXPECT_EQ(ParseOutput("a<|se<|sep|>p|>b", NoThinking()).content, "a<|se p|>b");
  EXPECT_EQ(ParseOutput("a<|end_of_msg|<|sep|>", NoThinking(), true).content, "a<|end_of_msg| ");
  EXPECT_EQ(ParseOutput("x<|sep|>y", NoThinking()).content, "xy");  // no prefix before it: just dropped
}

TEST(OutputParserTest, PartialModeHoldsBackPossibleMarkers) {
  EXPECT_EQ(ParseOutput("Reason<|clo", Thinking(), true).reasoning, "Reason");
  EXPECT_EQ(ParseOutput("Reason<|close|> thi", Thinking(), true).reasoning, "Reason");
  EXPECT_EQ(ParseOutput("R<|close|>think<|sep|>\n", Thinking(), true).content,
            "");  // response open may follow
  EXPECT_EQ(ParseOutput("R<|close|>think<|sep|>\n", Thinking(), false).content, "\n");
  const std::string partial_call = std::string(kCall).substr(0, std::string(kCall).find("<|close|>call"));
  EXPECT_TRUE(ParseOutput(partial_call, NoThinking(true), true).tool_calls.empty());
}

}  // namespace
}  // namespace k3::chat
