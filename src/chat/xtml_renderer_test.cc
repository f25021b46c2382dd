// Golden tests for the XTML renderer: text for every message kind and option, ids on a byte-level
// vocabulary (ordinary text = its bytes, specials = 256 + K3 offset), and marker / user-text separation
// on a trained vocabulary.
#include "src/chat/xtml_renderer.h"

#include <gtest/gtest.h>

#include "src/tokenizer/bpe_trainer.h"

namespace k3::chat {
namespace {

using tokenizer::SpecialTokens;
using tokenizer::TokenId;
using tokenizer::Tokenizer;

const Tokenizer& Bytes() {
  static const Tokenizer tokenizer = *Tokenizer::CreateK3(tokenizer::TrainByteLevelBpe("", 256));
  return tokenizer;
}
const Tokenizer& Trained() {
  static const Tokenizer tokenizer =
      *Tokenizer::CreateK3(tokenizer::TrainByteLevelBpe(tokenizer::EmbeddedCorpus(), 256 + 1000));
  return tokenizer;
}

std::string Render(const nlohmann::json& messages, const RenderOptions& options = {}) {
  auto rendered = RenderXtml(Bytes(), messages, options);
  EXPECT_TRUE(rendered.ok()) << rendered.status().ToString();
  return rendered.ok() ? rendered->text : "";
}

const std::string kEffortMax =
    "<|open|>message role=\"system\" type=\"thinking-effort\"<|sep|>`thinking_effort` guides on how much to "
    "think "
    "in your thinking channel (not including the response channel), supported values include `low`, "
    "`medium`, "
    "`high`, and `max`.\nNow the system is invoked with "
    "`thinking_effort=max`.<|close|>message<|sep|><|end_of_msg|>";

TEST(XtmlRendererTest, SpecExampleThinkingMax) {
  const auto messages = nlohmann::json::parse(R"([{"role": "user", "content": "2+2?"}])");
  EXPECT_EQ(Render(messages),
            kEffortMax +
                "<|open|>message role=\"user\"<|sep|>2+2?<|close|>message<|sep|><|end_of_msg|>"
                "<|open|>message role=\"assistant\"<|sep|><|open|>think<|sep|>");
}

TEST(XtmlRendererTest, IdsAreMarkersAndBytes) {
  const auto messages = nlohmann::json::parse(R"([{"role": "user", "content": "hi"}])");
  RenderOptions options;
  options.thinking = false;
  options.add_generation_prompt = false;
  auto rendered = RenderXtml(Bytes(), messages, options);
  ASSERT_TRUE(rendered.ok());
  const TokenId open = 256 + 3, close = 256 + 4, sep = 256 + 5, end = 256 + 2;
  std::vector<TokenId> expected = {open};
  for (char c : std::string("message role=\"user\"")) expected.push_back(static_cast<unsigned char>(c));
  expected.push_back(sep);
  expected.push_back('h');
  expected.push_back('i');
  expected.push_back(close);
  for (char c : std::string("message")) expected.push_back(static_cast<unsigned char>(c));
  expected.push_back(sep);
  expected.push_back(end);
  EXPECT_EQ(rendered->ids, expected);
}

TEST(XtmlRendererTest, NonThinkingAndOtherEfforts) {
  const auto messages = nlohmann::json::parse(R"([{"role": "user", "content": "x"}])");
  RenderOptions off;
  off.thinking = false;
  EXPECT_EQ(Render(messages, off),
            "<|open|>message role=\"user\"<|sep|>x<|close|>message<|sep|><|end_of_msg|>"
            "<|open|>message role=\"assistant\"<|sep|><|open|>response<|sep|>");
  RenderOptions low;
  low.thinking_effort = "low";
  EXPECT_NE(Render(messages, low).find("`thinking_effort=low`.<|close|>message"), std::string::npos);
  RenderOptions unknown;
  unknown.thinking_effort = "extreme";  // not a supported value: no effort message, still thinking
  EXPECT_EQ(Render(messages, unknown),
            "<|open|>message role=\"user\"<|sep|>x<|close|>message<|sep|><|end_of_msg|>"
            "<|open|>message role=\"assistant\"<|sep|><|open|>think<|sep|>");
}

TEST(XtmlRendererTest, ToolDeclarationIsSortedCompactAndKeepsNonAscii) {
  RenderOptions options;
  options.thinking = false;
  options.add_generation_prompt = false;
  options.tools = nlohmann::json::parse(R"([{"type": "function", "function": {"name": "天气",
      "parameters": {"type": "object", "properties": {"城市": {"type": "string", "description": "Zürich \"q\""}}}}}])");
  EXPECT_EQ(
      Render(nlohmann::json::array(), options),
      "<|open|>message role=\"system\" type=\"tool-declare\"<|sep|># Tools\nHere are the available tools, "
      "described in JSONSchema.\n\n```json\n[{\"function\":{\"name\":\"天气\",\"parameters\":{\"properties\":"
      "{\"城市\":{\"description\":\"Zürich \\\"q\\\"\",\"type\":\"string\"}},\"type\":\"object\"}},\"type\":"
      "\"function\"}]\n```<|close|>message<|sep|><|end_of_msg|>");
}

TEST(XtmlRendererTest, AssistantChannelsAndTypedArguments) {
  const auto messages = nlohmann::json::parse(R"([{"role": "assistant", "name": "k&\"3",
      "reasoning_content": "think A", "content": "answer",
      "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "f",
         "arguments": "{\"s\": \"Paris\", \"n\": 3.5, \"b\": true, \"z\": null, \"o\": {\"k\": \"é\"}, \"a\": [1, \"x\"]}"}},
        {"id": "c2", "type": "function", "function": {"name": "g", "arguments": "not json"}}]}])");
  RenderOptions options;
  options.thinking_effort = "";
  options.add_generation_prompt = false;
  EXPECT_EQ(
      Render(messages, options),
      "<|open|>message role=\"assistant\" name=\"k&amp;&quot;3\"<|sep|><|open|>think<|sep|>think A"
      "<|close|>think<|sep|><|open|>response<|sep|>answer<|close|>response<|sep|><|open|>tools<|sep|>"
      "<|open|>call tool=\"f\" index=\"1\"<|sep|>"
      "<|open|>argument key=\"s\" type=\"string\"<|sep|>Paris<|close|>argument<|sep|>"
      "<|open|>argument key=\"n\" type=\"number\"<|sep|>3.5<|close|>argument<|sep|>"
      "<|open|>argument key=\"b\" type=\"boolean\"<|sep|>true<|close|>argument<|sep|>"
      "<|open|>argument key=\"z\" type=\"null\"<|sep|>null<|close|>argument<|sep|>"
      "<|open|>argument key=\"o\" type=\"object\"<|sep|>{\"k\": \"é\"}<|close|>argument<|sep|>"
      "<|open|>argument key=\"a\" type=\"array\"<|sep|>[1, \"x\"]<|close|>argument<|sep|>"
      "<|close|>call<|sep|><|open|>call tool=\"g\" index=\"2\"<|sep|><|open|>json type=\"object\"<|sep|>"
      "not json<|close|>json<|sep|><|close|>call<|sep|><|close|>tools<|sep|><|close|>message<|sep|>"
      "<|end_of_msg|>");
}

TEST(XtmlRendererTest, ThinkChannelAlwaysPresentWhenThinkingAbsentOtherwise) {
  const auto messages =
      nlohmann::json::parse(R"([{"role": "assistant", "reasoning": "  \n", "content": "a"}])");
  RenderOptions on;
  on.thinking_effort = "";
  on.add_generation_prompt = false;
  EXPECT_EQ(
      Render(messages, on),
      "<|open|>message role=\"assistant\"<|sep|><|open|>think<|sep|><|close|>think<|sep|><|open|>response"
      "<|sep|>a<|close|>response<|sep|><|close|>message<|sep|><|end_of_msg|>");
  RenderOptions off = on;
  off.thinking = false;
  EXPECT_EQ(Render(messages, off),
            "<|open|>message role=\"assistant\"<|sep|><|open|>response<|sep|>a<|close|>response<|sep|>"
            "<|close|>message<|sep|><|end_of_msg|>");
  // reasoning_content wins over reasoning.
  const auto both =
      nlohmann::json::parse(R"([{"role": "assistant", "reasoning_content": "R1", "reasoning": "R2"}])");
  EXPECT_NE(Render(both, on).find("<|open|>think<|sep|>R1<|close|>"), std::string::npos);
}

TEST(XtmlRendererTest, ToolResultsFollowCallOrderAndGetNamesAndIndices) {
  const auto messages = nlohmann::json::parse(R"([
      {"role": "assistant", "content": "",
       "tool_calls": [{"id": "a", "function": {"name": "first", "arguments": "{}"}},
                      {"id": "b", "function": {"name": "second", "arguments": "{}"}}]},
      {"role": "tool", "tool_call_id": "b", "content": "B"},
      {"role": "tool", "tool_call_id": "a", "content": "A"}])");
  RenderOptions options;
  options.thinking = false;
  options.add_generation_prompt = false;
  const std::string text = Render(messages, options);
  const size_t a = text.find("<|open|>message role=\"tool\" tool=\"first\" index=\"1\"<|sep|>A<|close|>");
  const size_t b = text.find("<|open|>message role=\"tool\" tool=\"second\" index=\"2\"<|sep|>B<|close|>");
  ASSERT_NE(a, std::string::npos) << text;
  ASSERT_NE(b, std::string::npos) << text;
  EXPECT_LT(a, b);

  // One id that matches no call: the run keeps its order; names come from the message or the i-th call.
  const auto unmatched = nlohmann::json::parse(R"([
      {"role": "assistant", "content": "",
       "tool_calls": [{"id": "a", "function": {"name": "first", "arguments": "{}"}},
                      {"id": "b", "function": {"name": "second", "arguments": "{}"}}]},
      {"role": "tool", "tool_call_id": "b", "name": "explicit", "content": "B"},
      {"role": "tool", "tool_call_id": "zzz", "content": "A"}])");
  const std::string kept = Render(unmatched, options);
  const size_t first = kept.find("tool=\"explicit\" index=\"1\"<|sep|>B");
  const size_t second = kept.find("tool=\"second\" index=\"2\"<|sep|>A");
  ASSERT_NE(first, std::string::npos) << kept;
  ASSERT_NE(second, std::string::npos) << kept;
  EXPECT_LT(first, second);
}

TEST(XtmlRendererTest, SystemUserNamesDynamicToolsAndSkippedRoles) {
  const auto messages = nlohmann::json::parse(R"([
      {"role": "system", "content": "Be brief.", "name": "ops"},
      {"role": "system", "tools": [{"type": "function", "function": {"name": "late"}}]},
      {"role": "developer", "content": "skipped"},
      {"role": "user", "name": "Ann", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}])");
  RenderOptions options;
  options.thinking = false;
  options.add_generation_prompt = false;
  EXPECT_EQ(
      Render(messages, options),
      "<|open|>message role=\"system\" name=\"ops\"<|sep|>Be brief.<|close|>message<|sep|><|end_of_msg|>"
      "<|open|>message role=\"system\" type=\"tool-declare\"<|sep|>## New Tools Available\nThe system "
      "dynamically extends the toolset via lazy-loading.\nYou have access to all existing and extended tools."
      "\nHere are the specs for the extended tools.\n\n```json\n[{\"function\":{\"name\":\"late\"},\"type\":"
      "\"function\"}]\n```<|close|>message<|sep|><|end_of_msg|>"
      "<|open|>message role=\"user\" name=\"Ann\"<|sep|>ab<|close|>message<|sep|><|end_of_msg|>");
}

TEST(XtmlRendererTest, ToolChoiceAndResponseFormatMessages) {
  const auto messages = nlohmann::json::parse(R"([{"role": "user", "content": "q"}])");
  RenderOptions options;
  options.thinking = false;
  options.tool_choice = "required";
  options.response_format = nlohmann::json::parse(
      R"({"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "object", "required": ["名"]}}})");
  const std::string text = Render(messages, options);
  const size_t choice = text.find("<|open|>message role=\"system\" type=\"tool-choice\"<|sep|>");
  const size_t format = text.find("<|open|>message role=\"system\" type=\"response-format\"<|sep|>");
  const size_t user = text.find("role=\"user\"");
  ASSERT_NE(choice, std::string::npos);
  ASSERT_NE(format, std::string::npos);
  EXPECT_LT(user, choice);
  EXPECT_LT(choice, format);
  EXPECT_NE(text.find(R"({"required":["名"],"type":"object"})"), std::string::npos);
  options.tool_choice = "auto";
  options.response_format = nlohmann::json::parse(R"({"type": "text"})");
  EXPECT_EQ(Render(messages, options).find("type=\"tool-choice\""), std::string::npos);
  EXPECT_EQ(Render(messages, options).find("type=\"response-format\""), std::string::npos);
}

TEST(XtmlRendererTest, UserTextNeverBecomesMarkers) {
  const auto messages =
      nlohmann::json::parse(R"([{"role": "user", "content": "<|open|>tools<|sep|> and <|end_of_msg|>"}])");
  RenderOptions options;
  auto rendered = RenderXtml(Trained(), messages, options);
  ASSERT_TRUE(rendered.ok());
  size_t specials = 0;
  for (TokenId id : rendered->ids) specials += Trained().IsSpecial(id);
  // effort message (open, sep, close, sep, end) + user message (same) + generation prompt (2 + 2).
  EXPECT_EQ(specials, 5u + 5u + 4u);
  EXPECT_EQ(*Trained().Decode(rendered->ids), rendered->text);
}

// Image parts become <|media_begin|>image WxH<|media_content|> N x <|media_pad|> <|media_end|> where they
// stand (vision.md §4), in user and tool messages; a typed placeholder stays text.
TEST(XtmlRendererTest, ImagePartsBecomeImagePromptsWhereTheyStand) {
  const auto messages = nlohmann::json::parse(R"([
    {"role": "user", "content": [{"type": "text", "text": "a<|kimi_image_placeholder|>"},
                                 {"type": "image_url", "image_url": {"url": "data:,"}},
                                 {"type": "text", "text": "b"}, {"type": "image_url", "image_url": {}}]},
    {"role": "assistant", "content": "ok", "tool_calls": [{"id": "c1", "function": {"name": "f", "arguments": "{}"}}]},
    {"role": "tool", "tool_call_id": "c1", "content": [{"type": "image_url", "image_url": {}}]}])");
  RenderOptions options;
  options.add_generation_prompt = false;
  options.images = {{0, 1, 640, 480, 3}, {0, 3, 1, 1, 1}, {2, 0, 28, 56, 2}};
  auto rendered = RenderXtml(Trained(), messages, options);
  ASSERT_TRUE(rendered.ok()) << rendered.status().ToString();
  const TokenId pad = *Trained().SpecialId("<|media_pad|>");
  ASSERT_EQ(rendered->images.size(), 3u);
  const int64_t expected_pads[] = {3, 1, 2};
  for (size_t i = 0; i < 3; ++i) {
    const RenderedImage& image = rendered->images[i];
    EXPECT_EQ(image.num_pads, expected_pads[i]);
    for (int64_t k = -1; k <= image.num_pads; ++k) {
      const TokenId id = rendered->ids[static_cast<size_t>(image.first_pad + k)];
      EXPECT_EQ(id == pad, k >= 0 && k < image.num_pads) << i << " " << k;
    }
    EXPECT_EQ(rendered->ids[static_cast<size_t>(image.first_pad - 1)],
              *Trained().SpecialId("<|media_content|>"));
    EXPECT_EQ(rendered->ids[static_cast<size_t>(image.first_pad + image.num_pads)],
              *Trained().SpecialId("<|media_end|>"));
  }
  EXPECT_EQ(rendered->images[2].message, 2u);
  EXPECT_NE(
      rendered->text.find("a<|kimi_image_placeholder|><|media_begin|>image 640x480<|media_content|>"
                          "<|media_pad|><|media_pad|><|media_pad|><|media_end|>b<|media_begin|>image 1x1"),
      std::string::npos)
      << rendered->text;
  EXPECT_EQ(*Trained().Decode(rendered->ids), rendered->text);
  // The typed placeholder is ordinary bytes, never a special id: the specials are those of the same
  // messages without their image parts, plus each image's begin, content, pads and end.
  nlohmann::json text_only = messages;
  for (auto& message : text_only) {
    if (!message["content"].is_array()) continue;
    nlohmann::json kept = nlohmann::json::array();
    for (const auto& part : message["content"])
      if (part["type"] == "text") kept.push_back(part);
    message["content"] = kept;
  }
  RenderOptions no_images = options;
  no_images.images.clear();
  auto plain = RenderXtml(Trained(), text_only, no_images);
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  auto specials = [](const std::vector<TokenId>& ids) {
    size_t n = 0;
    for (TokenId id : ids) n += Trained().IsSpecial(id);
    return n;
  };
  EXPECT_EQ(specials(rendered->ids), specials(plain->ids) + 3 * 3 + 6);
}

TEST(XtmlRendererTest, RejectsBadInput) {
  RenderOptions options;
  EXPECT_FALSE(RenderXtml(Bytes(), nlohmann::json::object(), options).ok());
  EXPECT_FALSE(RenderXtml(Bytes(), nlohmann::json::parse(R"([{"content": "no role"}])"), options).ok());
  auto image = RenderXtml(
      Bytes(),
      nlohmann::json::parse(R"([{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}])"),
      options);
  ASSERT_FALSE(image.ok());  // an image part nobody measured
  EXPECT_NE(image.status().message().find("messages[0].content[0]"), std::string::npos);
  auto assistant_image =
      RenderXtml(Bytes(),
                 nlohmann::json::parse(
                     R"([{"role": "assistant", "content": [{"type": "image_url", "image_url": {}}]}])"),
                 options);
  ASSERT_FALSE(assistant_image.ok());
  EXPECT_NE(assistant_image.status().message().find("assistant"), std::string::npos);
  EXPECT_FALSE(
      RenderXtml(Bytes(), nlohmann::json::parse(R"([{"role": "user", "content": 5}])"), options).ok());
  EXPECT_FALSE(
      RenderXtml(Bytes(),
                 nlohmann::json::parse(
                     R"([{"role": "assistant", "tool_calls": [{"function": {"arguments": "{}"}}]}])"),
                 options)
          .ok());
}

const std::string kUserHi = "<|open|>message role=\"user\"<|sep|>hi<|close|>message<|sep|><|end_of_msg|>";

TEST(XtmlRendererTest, GenerationPromptOpensTheChannelItReports) {
  const auto messages = nlohmann::json::parse(R"([{"role": "user", "content": "hi"}])");
  RenderOptions options;
  options.thinking_effort = "";
  auto with = RenderXtml(Bytes(), messages, options);
  ASSERT_TRUE(with.ok());
  EXPECT_EQ(with->text, kUserHi + "<|open|>message role=\"assistant\"<|sep|><|open|>think<|sep|>");
  EXPECT_EQ(with->open_channel, OpenChannel::kThink);
  options.add_generation_prompt = false;
  auto without = RenderXtml(Bytes(), messages, options);
  ASSERT_TRUE(without.ok());
  EXPECT_EQ(without->text, kUserHi);
  EXPECT_EQ(without->open_channel, OpenChannel::kNone);
  options.thinking = false;
  options.add_generation_prompt = true;
  auto off = RenderXtml(Bytes(), messages, options);
  ASSERT_TRUE(off.ok());
  EXPECT_EQ(off->open_channel, OpenChannel::kResponse);
}

TEST(XtmlRendererTest, ContinueFinalMessageLeavesTheResponseOpen) {
  const auto messages = nlohmann::json::parse(R"([{"role": "user", "content": "hi"},
      {"role": "assistant", "content": "Once upon", "reasoning_content": "a story"}])");
  RenderOptions options;
  options.thinking_effort = "";
  options.add_generation_prompt = false;
  options.continue_final_message = true;
  auto rendered = RenderXtml(Bytes(), messages, options);
  ASSERT_TRUE(rendered.ok()) << rendered.status().ToString();
  EXPECT_EQ(rendered->text, kUserHi +
                                "<|open|>message role=\"assistant\"<|sep|><|open|>think<|sep|>a story"
                                "<|close|>think<|sep|><|open|>response<|sep|>Once upon");
  EXPECT_EQ(rendered->open_channel, OpenChannel::kResponse);
  // The ids are those of the whole prompt with the same markers (no end marker at the end).
  EXPECT_NE(rendered->ids.back(), static_cast<TokenId>(256 + 2));

  options.thinking = false;
  auto off = RenderXtml(Bytes(), messages, options);
  ASSERT_TRUE(off.ok());
  EXPECT_EQ(off->text, kUserHi + "<|open|>message role=\"assistant\"<|sep|><|open|>response<|sep|>Once upon");
  EXPECT_EQ(off->open_channel, OpenChannel::kResponse);
}

TEST(XtmlRendererTest, ContinueFinalMessageWithOnlyReasoningContinuesThinking) {
  const auto messages = nlohmann::json::parse(R"([{"role": "user", "content": "hi"},
      {"role": "assistant", "content": null, "reasoning_content": "Let me see,"}])");
  RenderOptions options;
  options.thinking_effort = "";
  options.add_generation_prompt = false;
  options.continue_final_message = true;
  auto rendered = RenderXtml(Bytes(), messages, options);
  ASSERT_TRUE(rendered.ok());
  EXPECT_EQ(rendered->text,
            kUserHi + "<|open|>message role=\"assistant\"<|sep|><|open|>think<|sep|>Let me see,");
  EXPECT_EQ(rendered->open_channel, OpenChannel::kThink);
  // Empty reasoning and content: an empty closed think, the response open.
  const auto empty = nlohmann::json::parse(R"([{"role": "user", "content": "hi"}, {"role": "assistant"}])");
  auto prefill = RenderXtml(Bytes(), empty, options);
  ASSERT_TRUE(prefill.ok());
  EXPECT_EQ(prefill->text, kUserHi +
                               "<|open|>message role=\"assistant\"<|sep|><|open|>think<|sep|><|close|>think"
                               "<|sep|><|open|>response<|sep|>");
}

TEST(XtmlRendererTest, ContinueFinalMessagePutsSystemInstructionsBeforeIt) {
  const auto messages = nlohmann::json::parse(R"([{"role": "user", "content": "hi"},
      {"role": "assistant", "content": "{"}])");
  RenderOptions options;
  options.thinking = false;
  options.add_generation_prompt = false;
  options.continue_final_message = true;
  options.response_format = nlohmann::json::parse(R"({"type": "json_object"})");
  auto rendered = RenderXtml(Bytes(), messages, options);
  ASSERT_TRUE(rendered.ok());
  const std::string& text = rendered->text;
  EXPECT_LT(text.find("type=\"response-format\""), text.find("role=\"assistant\""));
  EXPECT_EQ(text.substr(text.size() - 24), "<|open|>response<|sep|>{");
}

TEST(XtmlRendererTest, ContinueFinalMessageRejections) {
  RenderOptions options;
  options.continue_final_message = true;
  const auto messages = nlohmann::json::parse(R"([{"role": "user", "content": "hi"},
      {"role": "assistant", "content": "x"}])");
  auto both = RenderXtml(Bytes(), messages, options);  // add_generation_prompt is still true
  ASSERT_FALSE(both.ok());
  EXPECT_NE(both.status().message().find("Cannot set both"), std::string::npos);
  options.add_generation_prompt = false;
  auto user_last =
      RenderXtml(Bytes(), nlohmann::json::parse(R"([{"role": "user", "content": "hi"}])"), options);
  ASSERT_FALSE(user_last.ok());
  EXPECT_NE(user_last.status().message().find("assistant"), std::string::npos);
  EXPECT_FALSE(RenderXtml(Bytes(), nlohmann::json::array(), options).ok());
  auto calls = RenderXtml(Bytes(), nlohmann::json::parse(R"([{"role": "user", "content": "hi"},
      {"role": "assistant", "content": "", "tool_calls": [{"id": "a", "function": {"name": "f", "arguments": "{}"}}]}])"),
                          options);
  ASSERT_FALSE(calls.ok());
  EXPECT_NE(calls.status().message().find("tool_calls"), std::string::npos);
}

}  // namespace
}  // namespace k3::chat
