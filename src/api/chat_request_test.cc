// ParseChatCompletion: malformed requests (status, param, message), field mapping into the engine
// request, render options, context-length rules.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "src/api/api_test_util.h"
#include "src/api/openai.h"

namespace k3::api {
namespace {

using testing::TestContext;

const char kUser[] = R"("messages": [{"role": "user", "content": "hi"}])";

std::string WithUser(const std::string& fields) {
  return std::string("{\"model\": \"Kimi-K3\", ") + kUser + (fields.empty() ? "" : ", " + fields) + "}";
}

struct BadCase {
  std::string body;
  int status;
  std::string param;
  std::string message_part;
};

TEST(ChatRequestTest, MalformedRequestsNameTheField) {
  const std::string assistant_with = R"({"model": "Kimi-K3", "messages": [{"role": "user", "content": "hi"},
      {"role": "assistant", "content": null, )";
  const std::vector<BadCase> cases = {
      {"{", 400, "", "not valid JSON"},
      {"", 400, "", "not valid JSON"},
      {"[]", 400, "", "must be a JSON object"},
      {std::string(5000, '[') + std::string(5000, ']'), 400, "", "deeper than"},
      {"{\"model\": \"Kimi-K3\", \"messages\": [{\"role\": \"user\", \"content\": \"\xc3\x28\"}]}", 400, "",
       "not valid JSON"},
      {WithUser(R"("temperature": 1e999)"), 400, "", "not valid JSON"},
      {R"({"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]})", 404, "model",
       "The model `gpt-4o` does not exist"},
      {R"({"model": 5, "messages": []})", 400, "model", "expected a string, got number"},
      {R"({"model": "Kimi-K3"})", 400, "messages", "required"},
      {R"({"model": "Kimi-K3", "messages": "hi"})", 400, "messages", "expected an array, got string"},
      {R"({"model": "Kimi-K3", "messages": []})", 400, "messages", "non-empty"},
      {R"({"model": "Kimi-K3", "messages": [1]})", 400, "messages[0]", "expected a message object"},
      {R"({"model": "Kimi-K3", "messages": [{"content": "hi"}]})", 400, "messages[0].role", "required"},
      {R"({"model": "Kimi-K3", "messages": [{"role": "bot", "content": "hi"}]})", 400, "messages[0].role",
       "expected system, developer, user, assistant or tool"},
      {R"({"model": "Kimi-K3", "messages": [{"role": "user", "content": 5}]})", 400, "messages[0].content",
       "expected a string or an array of parts"},
      {R"({"model": "Kimi-K3", "messages": [{"role": "user"}]})", 400, "messages[0].content", "required"},
      {R"({"model": "Kimi-K3", "messages": [{"role": "user", "content": [{"type": "image_url",
          "image_url": {"url": "http://x"}}]}]})",
       400, "messages[0].content[0]", "has no vision tower"},
      {R"({"model": "Kimi-K3", "messages": [{"role": "user", "content": [{"type": "image_url"}]}]})", 400,
       "messages[0].content[0].image_url", "required"},
      {R"({"model": "Kimi-K3", "messages": [{"role": "user", "content": [{"type": "video_url",
          "video_url": {"url": "http://x"}}]}]})",
       400, "messages[0].content[0].type", "images only"},
      {R"({"model": "Kimi-K3", "messages": [{"role": "user", "content": [{"type": "input_audio"}]}]})", 400,
       "messages[0].content[0].type", "not supported"},
      {R"({"model": "Kimi-K3", "messages": [{"role": "user", "content": [{"type": "text"}]}]})", 400,
       "messages[0].content[0].text", "required"},
      {R"({"model": "Kimi-K3", "messages": [{"role": "user", "content": ["hi"]}]})", 400,
       "messages[0].content[0]", "expected a content part object"},
      {R"({"model": "Kimi-K3", "messages": [{"role": "user", "content": "hi", "name": 3}]})", 400,
       "messages[0].name", "expected a string"},
      {assistant_with + R"("tool_calls": "x"}]})", 400, "messages[1].tool_calls", "expected an array"},
      {assistant_with + R"("tool_calls": [{"id": "a"}]}]})", 400, "messages[1].tool_calls[0].function",
       "required"},
      {assistant_with + R"("tool_calls": [{"type": "code", "function": {"name": "f"}}]}]})", 400,
       "messages[1].tool_calls[0].type", "expected \"function\""},
      {assistant_with + R"("tool_calls": [{"function": {"name": ""}}]}]})", 400,
       "messages[1].tool_calls[0].function.name", "non-empty"},
      {assistant_with + R"("tool_calls": [{"function": {"name": "f", "arguments": 5}}]}]})", 400,
       "messages[1].tool_calls[0].function.arguments", "expected a JSON string"},
      {assistant_with + R"("reasoning_content": 5}]})", 400, "messages[1].reasoning_content",
       "expected a string"},
      {assistant_with + R"("reasoning": []}]})", 400, "messages[1].reasoning", "expected a string"},
      {R"({"model": "Kimi-K3", "messages": [{"role": "tool", "content": "x", "tool_call_id": 7}]})", 400,
       "messages[0].tool_call_id", "expected a string"},
      {R"({"model": "Kimi-K3", "messages": [{"role": "system", "content": "x", "tools": 7}]})", 400,
       "messages[0].tools", "expected an array"},
      {WithUser(R"("temperature": "hot")"), 400, "temperature", "expected a number, got string"},
      {WithUser(R"("temperature": -1)"), 400, "temperature", "must be a number in [0, 100]"},
      {WithUser(R"("temperature": true)"), 400, "temperature", "expected a number, got boolean"},
      {WithUser(R"("top_p": 0)"), 400, "top_p", "(0, 1]"},
      {WithUser(R"("top_p": 1.5)"), 400, "top_p", "(0, 1]"},
      {WithUser(R"("top_k": -2)"), 400, "top_k", "integer in [-1,"},
      {WithUser(R"("top_k": 1.5)"), 400, "top_k", "integer"},
      {WithUser(R"("min_p": 2)"), 400, "min_p", "[0, 1]"},
      {WithUser(R"("presence_penalty": 3)"), 400, "presence_penalty", "[-2, 2]"},
      {WithUser(R"("frequency_penalty": -2.5)"), 400, "frequency_penalty", "[-2, 2]"},
      {WithUser(R"("repetition_penalty": 0)"), 400, "repetition_penalty", "(0, 10]"},
      {WithUser(R"("seed": "x")"), 400, "seed", "expected an integer"},
      {WithUser(R"("seed": 1e30)"), 400, "seed", "must be an integer"},
      {WithUser(R"("stop": 5)"), 400, "stop", "a string or an array of strings"},
      {WithUser(R"("stop": ["a", 1])"), 400, "stop[1]", "expected a string"},
      {WithUser(R"("stop_token_ids": [-1])"), 400, "stop_token_ids[0]", "token id in [0, 511]"},
      {WithUser(R"("stop_token_ids": [1, 512])"), 400, "stop_token_ids[1]", "token id"},
      {WithUser(R"("stop_token_ids": 5)"), 400, "stop_token_ids", "expected an array"},
      {WithUser(R"("max_tokens": 0)"), 400, "max_tokens", "integer in [1,"},
      {WithUser(R"("max_tokens": "10")"), 400, "max_tokens", "expected an integer, got string"},
      {WithUser(R"("max_tokens": 1e30)"), 400, "max_tokens", "must be an integer"},
      {WithUser(R"("max_completion_tokens": -5)"), 400, "max_completion_tokens", "integer in [1,"},
      {WithUser(R"("ignore_eos": "yes")"), 400, "ignore_eos", "expected a boolean"},
      {WithUser(R"("min_tokens": -1)"), 400, "min_tokens", "integer in [0,"},
      {WithUser(R"("logprobs": 1)"), 400, "logprobs", "expected a boolean, got number"},
      {WithUser(R"("logprobs": true, "top_logprobs": 21)"), 400, "top_logprobs", "[0, 20]"},
      {WithUser(R"("top_logprobs": 5)"), 400, "top_logprobs", "requires `logprobs`"},
      {WithUser(R"("logit_bias": [])"), 400, "logit_bias", "expected an object"},
      {WithUser(R"("logit_bias": {"abc": 1})"), 400, "logit_bias.abc", "token id in [0, 511]"},
      {WithUser(R"("logit_bias": {"-3": 1})"), 400, "logit_bias.-3", "token id"},
      {WithUser(R"("logit_bias": {"99999999999999": 1})"), 400, "logit_bias.99999999999999", "token id"},
      {WithUser(R"("logit_bias": {"5": 200})"), 400, "logit_bias.5", "[-100, 100]"},
      {WithUser(R"("logit_bias": {"5": "x"})"), 400, "logit_bias.5", "[-100, 100]"},
      {WithUser(R"("n": 0)"), 400, "n", "[1, 16]"},
      {WithUser(R"("n": 17)"), 400, "n", "[1, 16]"},
      {WithUser(R"("stream": "true")"), 400, "stream", "expected a boolean"},
      {WithUser(R"("stream": true, "stream_options": 5)"), 400, "stream_options", "expected an object"},
      {WithUser(R"("stream": true, "stream_options": {"include_usage": 1})"), 400,
       "stream_options.include_usage", "expected a boolean"},
      {WithUser(R"("tools": "x")"), 400, "tools", "expected an array"},
      {WithUser(R"("tools": [1])"), 400, "tools[0]", "expected a tool object"},
      {WithUser(R"("tools": [{"type": "retrieval", "function": {"name": "f"}}])"), 400, "tools[0].type",
       "expected \"function\""},
      {WithUser(R"("tools": [{"type": "function"}])"), 400, "tools[0].function", "required"},
      {WithUser(R"("tools": [{"type": "function", "function": {"name": ""}}])"), 400,
       "tools[0].function.name", "non-empty"},
      {WithUser(R"("tools": [{"type": "function", "function": {"name": "f", "parameters": "x"}}])"), 400,
       "tools[0].function.parameters", "expected an object"},
      {WithUser(R"("tools": [{"type": "function", "function": {"name": "f"}}], "tool_choice": "sometimes")"),
       400, "tool_choice", "expected \"none\", \"auto\", \"required\""},
      {WithUser(R"("tools": [{"type": "function", "function": {"name": "f"}}], "tool_choice": 5)"), 400,
       "tool_choice", "expected a string or an object"},
      {WithUser(R"("tool_choice": "required")"), 400, "tool_choice", "`tools` must be set"},
      {WithUser(R"("tools": [{"type": "function", "function": {"name": "f"}}],
          "tool_choice": {"type": "function", "function": {"name": "g"}})"),
       400, "tool_choice.function.name", "no tool named \"g\""},
      {WithUser(R"("tools": [{"type": "function", "function": {"name": "f"}}],
          "tool_choice": {"type": "function"})"),
       400, "tool_choice.function.name", "required"},
      {WithUser(R"("tools": [{"type": "function", "function": {"name": "f"}}],
          "parallel_tool_calls": "no")"),
       400, "parallel_tool_calls", "expected a boolean"},
      {WithUser(R"("response_format": "json")"), 400, "response_format", "expected an object"},
      {WithUser(R"("response_format": {"type": "xml"})"), 400, "response_format.type",
       "expected \"text\", \"json_object\" or \"json_schema\""},
      {WithUser(R"("response_format": {"type": "json_schema"})"), 400, "response_format.json_schema",
       "required"},
      {WithUser(R"("response_format": {"type": "json_schema", "json_schema": {"schema": 5}})"), 400,
       "response_format.json_schema.schema", "expected a JSON schema object"},
      {WithUser(R"("tools": [{"type": "function", "function": {"name": "f"}}], "tool_choice": "required",
          "response_format": {"type": "json_object"})"),
       400, "response_format", "cannot be combined"},
      {WithUser(R"("reasoning_effort": "extreme")"), 400, "reasoning_effort",
       "expected one of none, minimal"},
      {WithUser(R"("chat_template_kwargs": 5)"), 400, "chat_template_kwargs", "expected an object"},
      {WithUser(R"("chat_template_kwargs": {"thinking": "yes"})"), 400, "chat_template_kwargs.thinking",
       "expected a boolean"},
      {WithUser(R"("chat_template_kwargs": {"thinking_effort": "huge"})"), 400,
       "chat_template_kwargs.thinking_effort", "expected one of"},
      {WithUser(R"("thinking": 5)"), 400, "thinking", "expected a boolean or an object"},
      {WithUser(R"("thinking": {"type": "maybe"})"), 400, "thinking.type", "\"enabled\" or \"disabled\""},
      {WithUser(R"("include_reasoning": 1)"), 400, "include_reasoning", "expected a boolean"},
      {WithUser(R"("max_tokens": 5000)"), 400, "max_tokens", "maximum context length is 4096"},
      {WithUser(R"("max_tokens": 10, "min_tokens": 11)"), 400, "min_tokens", "must not exceed max_tokens"},
      // vLLM's own fields: none is silently ignored.
      {WithUser(R"("guided_regex": "(?=a)b")"), 400, "guided_regex",
       "guided_regex: regex /(?=a)b/: lookahead"},
      {WithUser(R"("guided_regex": "")"), 400, "guided_regex", "non-empty regular expression"},
      {WithUser(R"("guided_choice": [])"), 400, "guided_choice", "non-empty array of strings"},
      {WithUser(R"("guided_choice": ["yes", 5])"), 400, "guided_choice[1]", "expected a string"},
      {WithUser(R"("guided_grammar": "root ::= \"a\"")"), 400, "guided_grammar", "is not supported"},
      {WithUser(R"("structured_outputs": {"grammar": "a+"})"), 400, "structured_outputs.grammar",
       "is not supported"},
      {WithUser(R"("guided_regex": "a+", "guided_choice": ["a"])"), 400, "guided_choice", "give one output"},
      {WithUser(R"("prompt_logprobs": 1, "stream": true)"), 400, "prompt_logprobs", "`stream` is true"},
      {WithUser(R"("prompt_logprobs": -1)"), 400, "prompt_logprobs", "[0, 20]"},
      {WithUser(R"("guided_json": 5)"), 400, "guided_json", "expected a JSON schema object"},
      {WithUser(R"("guided_json": "not json")"), 400, "guided_json", "the string is not one"},
      {WithUser(R"("guided_json": {"type": "object"}, "structured_outputs": {"json": {"type": "object"}})"),
       400, "structured_outputs.json", "guided_json is set too"},
      {WithUser(R"("guided_json": {"type": "object"}, "response_format": {"type": "json_object"})"), 400,
       "guided_json", "give one output format"},
      {WithUser(R"("guided_json": {"type": "string", "pattern": "("})"), 400, "guided_json", ""},
      {WithUser(R"("stream_options": {"include_usage": true})"), 400, "stream_options",
       "only be given when `stream` is true"},
      {WithUser(R"("stream": true, "stream_options": {"continuous_usage_stats": 1})"), 400,
       "stream_options.continuous_usage_stats", "expected a boolean"},
  };
  const ServerContext ctx = TestContext();
  for (const BadCase& c : cases) {
    ApiError error;
    EXPECT_FALSE(ParseChatCompletion(c.body, ctx, &error)) << c.body;
    EXPECT_EQ(error.http_status, c.status) << c.body;
    EXPECT_EQ(error.param, c.param) << c.body;
    EXPECT_NE(error.message.find(c.message_part), std::string::npos) << c.body << "\n-> " << error.message;
    // vLLM's context-length wording is kept as it is; every other 400 starts with its field.
    if (!c.param.empty() && c.status == 400 && c.message_part.find("context length") == std::string::npos) {
      EXPECT_EQ(error.message.rfind(c.param + ": ", 0), 0u) << error.message;
    }
  }
}

// guided_json (object or JSON text) and structured_outputs.json constrain the output as response_format
// json_schema does; null vLLM fields are "not given".
TEST(ChatRequestTest, GuidedJsonConstrainsTheOutput) {
  for (const char* fields :
       {R"("guided_json": {"type": "object", "properties": {"a": {"type": "integer"}}})",
        R"("guided_json": "{\"type\": \"object\"}")",
        R"("structured_outputs": {"json": {"type": "object"}, "regex": null})",
        R"("guided_regex": null, "prompt_logprobs": null, "guided_json": {"type": "array"})",
        R"("guided_regex": "[a-z]+ [0-9]{2}")", R"("guided_choice": ["yes", "no"])",
        R"("structured_outputs": {"regex": "a|b"})", R"("structured_outputs": {"choice": ["x"]})"}) {
    ApiError error;
    auto plan = ParseChatCompletion(WithUser(fields), TestContext(), &error);
    ASSERT_TRUE(plan.has_value()) << fields << " -> " << error.message;
    EXPECT_NE(plan->request.constraint, nullptr) << fields;
  }
  ApiError error;
  auto plan = ParseChatCompletion(WithUser(R"("stream": true, "stream_options": {"include_usage": true})"),
                                  TestContext(), &error);
  ASSERT_TRUE(plan.has_value()) << error.message;
  EXPECT_TRUE(plan->include_usage);
  EXPECT_FALSE(plan->continuous_usage);
  EXPECT_EQ(plan->request.constraint, nullptr);
  EXPECT_EQ(plan->schema_check, nullptr);
}

// stream_options.continuous_usage_stats counts only beside include_usage (vLLM).
TEST(ChatRequestTest, ContinuousUsageStatsNeedsIncludeUsage) {
  for (const auto& [options, continuous] : std::vector<std::pair<std::string, bool>>{
           {R"({"include_usage": true, "continuous_usage_stats": true})", true},
           {R"({"include_usage": false, "continuous_usage_stats": true})", false},
           {R"({"continuous_usage_stats": true})", false},
           {R"({"include_usage": true, "continuous_usage_stats": false})", false}}) {
    ApiError error;
    auto plan = ParseChatCompletion(WithUser(R"("stream": true, "stream_options": )" + options),
                                    TestContext(), &error);
    ASSERT_TRUE(plan.has_value()) << options << " -> " << error.message;
    EXPECT_EQ(plan->continuous_usage, continuous) << options;
  }
}

// Schemas with `not` or `uniqueItems` (any subschema, any items) compile; their plan carries the end
// check. Response formats, guided_json and forced tool calls alike; the others have none.
TEST(ChatRequestTest, NotAndUniqueItemsGetAnEndCheck) {
  for (
      const std::string fields : {
          R"("response_format": {"type": "json_schema", "json_schema": {"name": "t", "schema": {"type": "array",
               "items": {"type": "object"}, "uniqueItems": true}}})",
          R"("guided_json": {"type": "object", "properties": {"name": {"type": "string",
               "not": {"pattern": "^admin"}}}})",
          R"("tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object",
               "properties": {"ids": {"type": "array", "items": {"type": "integer"}, "uniqueItems": true}}}}}],
               "tool_choice": "required")"}) {
    ApiError error;
    auto plan = ParseChatCompletion(WithUser(fields), TestContext(), &error);
    ASSERT_TRUE(plan.has_value()) << fields << " -> " << error.message;
    EXPECT_NE(plan->request.constraint, nullptr) << fields;
    EXPECT_NE(plan->schema_check, nullptr) << fields;
  }
  for (const std::string fields : {R"("guided_json": {"type": "array", "items": {"enum": [1, 2]},
                                       "uniqueItems": true}, "guided_regex": null)",
                                   R"("guided_regex": "a+")"}) {
    ApiError error;
    auto plan = ParseChatCompletion(WithUser(fields), TestContext(), &error);
    ASSERT_TRUE(plan.has_value()) << fields << " -> " << error.message;
    // Unique enum items are the grammar's; the end check still runs (it finds nothing there).
    EXPECT_EQ(plan->schema_check != nullptr, fields.find("uniqueItems") != std::string::npos) << fields;
  }
  // A `not` subschema is held to the keywords constrained output knows.
  ApiError error;
  EXPECT_FALSE(ParseChatCompletion(WithUser(R"("guided_json": {"not": {"if": {"type": "null"}}})"),
                                   TestContext(), &error));
  EXPECT_EQ(error.param, "guided_json");
  EXPECT_NE(error.message.find("'if'"), std::string::npos) << error.message;
}

TEST(ChatRequestTest, SeedExampleOfTheGuideIsAccepted) {
  const std::string body = R"({
    "model": "Kimi-K3",
    "messages": [
      {"role": "system", "content": "You are a helpful assistant."},
      {"role": "user", "content": "Explain the benefits of mixture of experts architectures."}
    ],
    "temperature": 0.7,
    "max_tokens": 1024
  })";
  ApiError error;
  auto plan = ParseChatCompletion(body, TestContext(), &error);
  ASSERT_TRUE(plan) << error.message;
  EXPECT_EQ(plan->model, "Kimi-K3");
  EXPECT_FLOAT_EQ(plan->request.sampling.temperature, 0.7f);
  EXPECT_EQ(plan->request.sampling.max_tokens, 1024);
  EXPECT_FALSE(plan->stream);
  EXPECT_TRUE(plan->parser.thinking);
  EXPECT_FALSE(plan->parser.tools_enabled);
  EXPECT_EQ(plan->request.eos_token_ids, std::vector<int32_t>{testing::kEndOfMsg});
  EXPECT_EQ(plan->prompt_tokens, static_cast<int64_t>(plan->request.prompt.size()));
  EXPECT_EQ(plan->request.constraint, nullptr);
  std::vector<tokenizer::TokenId> ids(plan->request.prompt.begin(), plan->request.prompt.end());
  const std::string text = *testing::ByteTokenizer().Decode(ids);
  EXPECT_NE(text.find("<|open|>message role=\"system\"<|sep|>You are a helpful assistant."),
            std::string::npos);
  EXPECT_NE(text.find("thinking_effort=max"), std::string::npos);  // spec default: thinking on, effort max
  EXPECT_TRUE(text.ends_with("<|open|>message role=\"assistant\"<|sep|><|open|>think<|sep|>")) << text;
}

TEST(ChatRequestTest, EverySamplingFieldIsMapped) {
  const std::string body = WithUser(R"(
      "temperature": 0.5, "top_p": 0.9, "top_k": 40, "min_p": 0.05, "presence_penalty": 0.5,
      "frequency_penalty": -0.5, "repetition_penalty": 1.1, "seed": -7, "stop": ["END", "", "STOP"],
      "stop_token_ids": [300, 301], "max_completion_tokens": 100, "max_tokens": 50, "ignore_eos": true,
      "min_tokens": 3, "logprobs": true, "top_logprobs": 5, "logit_bias": {"65": -100, "66": 2.5},
      "n": 3, "stream": true, "stream_options": {"include_usage": true}, "user": "ignored",
      "unknown_field": {"deep": [1, 2]})");
  ApiError error;
  auto plan = ParseChatCompletion(body, TestContext(), &error);
  ASSERT_TRUE(plan) << error.message;
  const engine::SamplingParams& s = plan->request.sampling;
  EXPECT_FLOAT_EQ(s.temperature, 0.5f);
  EXPECT_FLOAT_EQ(s.top_p, 0.9f);
  EXPECT_EQ(s.top_k, 40);
  EXPECT_FLOAT_EQ(s.min_p, 0.05f);
  EXPECT_FLOAT_EQ(s.presence_penalty, 0.5f);
  EXPECT_FLOAT_EQ(s.frequency_penalty, -0.5f);
  EXPECT_FLOAT_EQ(s.repetition_penalty, 1.1f);
  ASSERT_TRUE(s.seed);
  EXPECT_EQ(*s.seed, static_cast<uint64_t>(int64_t{-7}));
  EXPECT_EQ(s.stop, (std::vector<std::string>{"END", "STOP"}));
  EXPECT_EQ(s.stop_token_ids, (std::vector<int32_t>{300, 301}));
  EXPECT_EQ(s.max_tokens, 100);  // max_completion_tokens wins
  EXPECT_TRUE(s.ignore_eos);
  EXPECT_TRUE(plan->parser.ignore_end);  // the text past the message's end is content
  EXPECT_TRUE(s.skip_special_tokens);    // vLLM's defaults
  EXPECT_TRUE(s.spaces_between_special_tokens);
  EXPECT_FALSE(plan->request.keep_special_ids.empty());  // the XTML markup stays for the parser
  EXPECT_EQ(s.min_tokens, 3);
  EXPECT_EQ(s.logprobs, 5);
  ASSERT_EQ(s.logit_bias.size(), 2u);
  EXPECT_EQ(s.logit_bias[0], (std::pair<int32_t, float>(65, -100.0f)));
  EXPECT_EQ(s.logit_bias[1], (std::pair<int32_t, float>(66, 2.5f)));
  EXPECT_EQ(s.n, 3);
  EXPECT_EQ(plan->n, 3);
  EXPECT_TRUE(plan->stream);
  EXPECT_TRUE(plan->include_usage);
  EXPECT_TRUE(plan->logprobs);
  EXPECT_EQ(plan->top_logprobs, 5);
  EXPECT_EQ(plan->stop, s.stop);
  EXPECT_EQ(plan->stop_token_ids, s.stop_token_ids);
}

TEST(ChatRequestTest, DefaultsAndNulls) {
  const std::string body = WithUser(R"("temperature": null, "max_tokens": null, "stop": null, "n": null,
      "tools": null, "tool_choice": null, "response_format": null, "seed": null, "top_k": 2.0)");
  ApiError error;
  auto plan = ParseChatCompletion(body, TestContext(), &error);
  ASSERT_TRUE(plan) << error.message;
  const engine::SamplingParams& s = plan->request.sampling;
  EXPECT_FLOAT_EQ(s.temperature, 1.0f);
  EXPECT_EQ(s.max_tokens, 0);  // engine: up to max_model_len - prompt
  EXPECT_TRUE(s.stop.empty());
  EXPECT_FALSE(s.seed);
  EXPECT_EQ(s.top_k, 2);
  EXPECT_EQ(s.logprobs, -1);
  EXPECT_EQ(s.n, 1);
}

TEST(ChatRequestTest, MissingModelMeansTheServedModel) {
  ApiError error;
  auto plan = ParseChatCompletion(std::string("{") + kUser + "}", TestContext(), &error);
  ASSERT_TRUE(plan) << error.message;
  EXPECT_EQ(plan->model, "Kimi-K3");
}

std::string PromptText(const ChatPlan& plan) {
  std::vector<tokenizer::TokenId> ids(plan.request.prompt.begin(), plan.request.prompt.end());
  return *testing::ByteTokenizer().Decode(ids);
}

TEST(ChatRequestTest, ThinkingSwitchesAndEffort) {
  struct Case {
    std::string fields;
    bool thinking;
    std::string effort_text;  // empty: no effort message
  };
  const std::vector<Case> cases = {
      {"", true, "thinking_effort=max"},
      {R"("reasoning_effort": "low")", true, "thinking_effort=low"},
      {R"("reasoning_effort": "minimal")", true, "thinking_effort=low"},
      {R"("reasoning_effort": "medium")", true, "thinking_effort=medium"},
      {R"("reasoning_effort": "none")", false, ""},
      {R"("chat_template_kwargs": {"thinking": false})", false, ""},
      {R"("chat_template_kwargs": {"enable_thinking": false})", false, ""},
      {R"("chat_template_kwargs": {"thinking_effort": "high"})", true, "thinking_effort=high"},
      {R"("thinking": {"type": "disabled"})", false, ""},
      {R"("thinking": false, "chat_template_kwargs": {"thinking": true})", true, "thinking_effort=max"},
  };
  for (const Case& c : cases) {
    ApiError error;
    auto plan = ParseChatCompletion(WithUser(c.fields), TestContext(), &error);
    ASSERT_TRUE(plan) << c.fields << ": " << error.message;
    EXPECT_EQ(plan->parser.thinking, c.thinking) << c.fields;
    const std::string text = PromptText(*plan);
    if (c.effort_text.empty()) {
      EXPECT_EQ(text.find("thinking_effort="), std::string::npos) << c.fields;
    } else {
      EXPECT_NE(text.find(c.effort_text), std::string::npos) << c.fields;
    }
    EXPECT_TRUE(text.ends_with(c.thinking ? "<|open|>think<|sep|>" : "<|open|>response<|sep|>")) << c.fields;
  }
}

TEST(ChatRequestTest, HistoryWithReasoningToolCallsAndDeveloperRole) {
  const std::string body = R"({"model": "Kimi-K3", "messages": [
      {"role": "developer", "content": "Be brief."},
      {"role": "user", "content": [{"type": "text", "text": "Weather in "}, {"type": "text", "text": "Paris?"}]},
      {"role": "assistant", "content": null, "reasoning": "Need the tool.",
       "tool_calls": [{"id": "call_1", "type": "function",
                       "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
      {"role": "tool", "tool_call_id": "call_1", "content": "sunny"}],
    "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]})";
  ApiError error;
  auto plan = ParseChatCompletion(body, TestContext(), &error);
  ASSERT_TRUE(plan) << error.message;
  EXPECT_TRUE(plan->parser.tools_enabled);
  const std::string text = PromptText(*plan);
  EXPECT_NE(text.find("<|open|>message role=\"system\"<|sep|>Be brief."), std::string::npos) << text;
  EXPECT_NE(text.find("Weather in Paris?"), std::string::npos);
  EXPECT_NE(text.find("<|open|>think<|sep|>Need the tool.<|close|>think<|sep|>"), std::string::npos);
  EXPECT_NE(text.find("<|open|>call tool=\"get_weather\" index=\"1\"<|sep|><|open|>argument key=\"city\" "
                      "type=\"string\"<|sep|>Paris<|close|>argument<|sep|>"),
            std::string::npos);
  EXPECT_NE(text.find("<|open|>message role=\"tool\" tool=\"get_weather\" index=\"1\"<|sep|>sunny"),
            std::string::npos);
  EXPECT_NE(text.find("type=\"tool-declare\""), std::string::npos);
}

TEST(ChatRequestTest, ToolChoiceModes) {
  const std::string tools = R"("tools": [{"type": "function", "function": {"name": "f"}}])";
  ApiError error;
  auto automatic = ParseChatCompletion(WithUser(tools), TestContext(), &error);
  ASSERT_TRUE(automatic) << error.message;
  EXPECT_TRUE(automatic->parser.tools_enabled);
  EXPECT_EQ(automatic->request.constraint, nullptr);

  auto none = ParseChatCompletion(WithUser(tools + R"(, "tool_choice": "none")"), TestContext(), &error);
  ASSERT_TRUE(none) << error.message;
  EXPECT_FALSE(none->parser.tools_enabled);
  EXPECT_NE(PromptText(*none).find("type=\"tool-choice\""), std::string::npos);

  auto no_tools_auto = ParseChatCompletion(WithUser(R"("tool_choice": "auto")"), TestContext(), &error);
  ASSERT_TRUE(no_tools_auto) << error.message;
  EXPECT_FALSE(no_tools_auto->parser.tools_enabled);

  ServerContext no_auto = TestContext();
  no_auto.enable_auto_tool_choice = false;
  EXPECT_FALSE(ParseChatCompletion(WithUser(tools), no_auto, &error));
  EXPECT_EQ(error.param, "tool_choice");
  EXPECT_NE(error.message.find("--enable-auto-tool-choice"), std::string::npos);
  EXPECT_TRUE(ParseChatCompletion(WithUser(tools + R"(, "tool_choice": "none")"), no_auto, &error));
}

TEST(ChatRequestTest, StructuredOutputAndForcedToolsGetAConstraint) {
  const std::string tools = R"("tools": [{"type": "function", "function": {"name": "f", "parameters":
      {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}}}])";
  for (const std::string& fields :
       {std::string(R"("response_format": {"type": "json_object"})"),
        std::string(R"("response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema":
            {"type": "object", "properties": {"a": {"type": "string"}}}}})"),
        tools + R"(, "tool_choice": "required")",
        tools + R"(, "tool_choice": {"type": "function", "function": {"name": "f"}})"}) {
    ApiError error;
    auto plan = ParseChatCompletion(WithUser(fields), TestContext(), &error);
    ASSERT_TRUE(plan) << fields << ": " << error.message;
    EXPECT_NE(plan->request.constraint, nullptr) << fields;
  }
  ApiError error;
  auto text = ParseChatCompletion(WithUser(R"("response_format": {"type": "text"})"), TestContext(), &error);
  ASSERT_TRUE(text) << error.message;
  EXPECT_EQ(text->request.constraint, nullptr);
}

// A model that never wants to stop (always a plain byte that keeps text and strings going while one is
// allowed): with thinking on, the forced call still completes within max_tokens, end id included, or
// within the context when max_tokens is absent.
size_t TokensOfForcedCall(const ChatPlan& plan) {
  chat::TokenConstraint& c = *plan.request.constraint;
  std::vector<uint64_t> mask((testing::ByteTokenizer().vocab_size() + 63) / 64);
  for (size_t step = 0; step < 100000; ++step) {
    const bool complete = c.IsComplete();
    c.FillAllowed(mask);
    int32_t pick = -1;
    for (int32_t id : {int32_t{'a'}, int32_t{'7'}}) {
      if ((mask[static_cast<size_t>(id) / 64] >> (id % 64)) & 1) pick = id;
    }
    for (size_t id = 0; pick < 0 && id < mask.size() * 64; ++id) {
      if ((mask[id / 64] >> (id % 64)) & 1) pick = static_cast<int32_t>(id);
    }
    if (pick < 0 || !c.Accept(pick)) return 0;
    if (complete) return step + 1;
  }
  return 0;
}

TEST(ChatRequestTest, ForcedToolCallsFitTheirTokenBudgetWithThinking) {
  const std::string tools = R"("tools": [{"type": "function", "function": {"name": "f", "parameters":
      {"type": "object", "properties": {"s": {"type": "string"}, "n": {"type": "array", "items":
      {"type": "integer"}}}, "required": ["s", "n"]}}}], "chat_template_kwargs": {"thinking": true})";
  for (const std::string& choice :
       {std::string(R"("tool_choice": "required")"),
        std::string(R"("tool_choice": {"type": "function", "function": {"name": "f"}})")}) {
    ApiError error;
    auto plan = ParseChatCompletion(WithUser(tools + ", " + choice + R"(, "max_tokens": 300)"), TestContext(),
                                    &error);
    ASSERT_TRUE(plan) << error.message;
    const size_t used = TokensOfForcedCall(*plan);
    EXPECT_GT(used, 150u);  // the reasoning took its half
    EXPECT_LE(used, 300u);
    auto unbounded = ParseChatCompletion(WithUser(tools + ", " + choice), TestContext(), &error);
    ASSERT_TRUE(unbounded) << error.message;
    const auto context_used = static_cast<int64_t>(TokensOfForcedCall(*unbounded));
    EXPECT_GT(context_used, 0);
    EXPECT_LE(context_used, TestContext().max_model_len - unbounded->prompt_tokens);
  }
}

TEST(ChatRequestTest, ContextLimits) {
  ServerContext ctx = TestContext();
  ApiError error;
  auto plan = ParseChatCompletion(WithUser(""), ctx, &error);
  ASSERT_TRUE(plan);
  const int64_t prompt = plan->prompt_tokens;

  ctx.max_model_len = prompt + 10;
  EXPECT_TRUE(ParseChatCompletion(WithUser(R"("max_tokens": 10)"), ctx, &error));
  EXPECT_FALSE(ParseChatCompletion(WithUser(R"("max_tokens": 11)"), ctx, &error));
  EXPECT_EQ(error.param, "max_tokens");
  EXPECT_NE(error.message.find("(11 > " + std::to_string(prompt + 10) + " - " + std::to_string(prompt) + ")"),
            std::string::npos)
      << error.message;

  ctx.max_model_len = prompt;
  EXPECT_FALSE(ParseChatCompletion(WithUser(""), ctx, &error));
  EXPECT_EQ(error.param, "messages");
  EXPECT_NE(error.message.find("your request has " + std::to_string(prompt) + " input tokens"),
            std::string::npos);

  ctx = TestContext();
  ctx.max_messages = 2;
  const std::string three = R"({"messages": [{"role": "user", "content": "a"}, {"role": "assistant",
      "content": "b"}, {"role": "user", "content": "c"}]})";
  EXPECT_FALSE(ParseChatCompletion(three, ctx, &error));
  EXPECT_EQ(error.param, "messages");
  EXPECT_NE(error.message.find("at most 2 messages"), std::string::npos);
}

TEST(ChatRequestTest, ContinueFinalMessageParsesTheContinuationAsContent) {
  ApiError error;
  const std::string body = R"({"messages": [{"role": "user", "content": "hi"},
      {"role": "assistant", "content": "Once upon"}], "add_generation_prompt": false,
      "continue_final_message": true})";
  auto plan = ParseChatCompletion(body, TestContext(), &error);
  ASSERT_TRUE(plan) << error.message;
  const std::string text = PromptText(*plan);
  EXPECT_EQ(text.substr(text.size() - 32), "<|open|>response<|sep|>Once upon");
  EXPECT_EQ(plan->prompt_text, text);
  EXPECT_FALSE(plan->parser.thinking);  // the output starts in the response channel
  const chat::ParsedOutput parsed =
      chat::ParseOutput(" a time.<|close|>response<|sep|><|close|>message<|sep|>", plan->parser);
  EXPECT_EQ(parsed.content, " a time.");
  EXPECT_EQ(parsed.reasoning, "");

  auto reasoning_only = ParseChatCompletion(R"({"messages": [{"role": "user", "content": "hi"},
      {"role": "assistant", "reasoning_content": "Hmm,"}], "add_generation_prompt": false,
      "continue_final_message": true})",
                                            TestContext(), &error);
  ASSERT_TRUE(reasoning_only) << error.message;
  EXPECT_TRUE(reasoning_only->parser.thinking);  // the think channel is still open

  EXPECT_FALSE(ParseChatCompletion(R"({"messages": [{"role": "user", "content": "hi"},
      {"role": "assistant", "content": "x"}], "continue_final_message": true})",
                                   TestContext(), &error));
  EXPECT_EQ(error.http_status, 400);
  EXPECT_EQ(error.param, "continue_final_message");
  EXPECT_FALSE(ParseChatCompletion(R"({"messages": [{"role": "user", "content": "hi"}],
      "add_generation_prompt": false, "continue_final_message": true})",
                                   TestContext(), &error));
  EXPECT_EQ(error.param, "messages");

  auto no_prompt = ParseChatCompletion(R"({"messages": [{"role": "user", "content": "hi"}],
      "add_generation_prompt": false})",
                                       TestContext(), &error);
  ASSERT_TRUE(no_prompt) << error.message;
  const std::string bare = PromptText(*no_prompt);
  EXPECT_EQ(bare.substr(bare.size() - 14), "<|end_of_msg|>");
}

TEST(ChatRequestTest, ForceIncludeUsageStreamsUsage) {
  ServerContext ctx = TestContext();
  ApiError error;
  auto plain = ParseChatCompletion(WithUser(R"("stream": true)"), ctx, &error);
  ASSERT_TRUE(plain) << error.message;
  EXPECT_FALSE(plain->include_usage);
  ctx.force_include_usage = true;
  auto forced = ParseChatCompletion(WithUser(R"("stream": true)"), ctx, &error);
  ASSERT_TRUE(forced) << error.message;
  EXPECT_TRUE(forced->include_usage);
  auto whole = ParseChatCompletion(WithUser(""), ctx, &error);
  ASSERT_TRUE(whole);
  EXPECT_FALSE(whole->include_usage);  // non-streaming bodies carry usage anyway
}

}  // namespace
}  // namespace k3::api
