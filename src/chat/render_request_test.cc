// Tests for the render-chat request reader.
#include "src/chat/render_request.h"

#include <gtest/gtest.h>

namespace k3::chat {
namespace {

TEST(RenderRequestTest, ReadsRequestsAndArrays) {
  auto array = ParseRenderRequest(R"([{"role": "user", "content": "x"}])");
  ASSERT_TRUE(array.ok());
  EXPECT_EQ(array->messages.size(), 1u);
  EXPECT_TRUE(array->options.thinking);

  auto request = ParseRenderRequest(R"({"messages": [], "reasoning_effort": "low", "tool_choice": "required",
      "tools": [{"type": "function", "function": {"name": "f"}}], "chat_template_kwargs": {"thinking": false},
      "response_format": {"type": "json_object"}})");
  ASSERT_TRUE(request.ok()) << request.status().ToString();
  EXPECT_FALSE(request->options.thinking);
  EXPECT_EQ(request->options.thinking_effort, "low");
  EXPECT_EQ(request->options.tool_choice, "required");
  EXPECT_EQ(request->options.tools.size(), 1u);
  EXPECT_EQ(request->options.response_format["type"], "json_object");
}

TEST(RenderRequestTest, RejectsBadRequests) {
  EXPECT_FALSE(ParseRenderRequest("{").ok());
  EXPECT_FALSE(ParseRenderRequest("5").ok());
  EXPECT_FALSE(ParseRenderRequest(R"({"messages": {}})").ok());
  EXPECT_FALSE(ParseRenderRequest(R"({"messages": [], "thinking": "yes"})").ok());
  EXPECT_FALSE(ParseRenderRequest(R"({"messages": [], "tool_choice": "sometimes"})").ok());
  EXPECT_EQ(ParseRenderRequest(R"({"messages": [], "tool_choice": {"type": "function"}})").status().code(),
            StatusCode::kUnimplemented);
}

TEST(RenderRequestTest, ReadsGenerationPromptAndContinueFinalMessage) {
  auto request = ParseRenderRequest(R"({"messages": [{"role": "user", "content": "x"},
      {"role": "assistant", "content": "y"}], "add_generation_prompt": false, "continue_final_message": true})");
  ASSERT_TRUE(request.ok()) << request.status().ToString();
  EXPECT_FALSE(request->options.add_generation_prompt);
  EXPECT_TRUE(request->options.continue_final_message);
  auto defaults = ParseRenderRequest(R"({"messages": []})");
  ASSERT_TRUE(defaults.ok());
  EXPECT_TRUE(defaults->options.add_generation_prompt);
  EXPECT_FALSE(defaults->options.continue_final_message);
  EXPECT_FALSE(ParseRenderRequest(R"({"messages": [], "continue_final_message": "yes"})").ok());
}

}  // namespace
}  // namespace k3::chat
