// Image parts of chat requests (image_parts.h): where their pads land in the prompt and what the engine
// gets, counted as the reference processor counts; every bad image a 400 naming the part.
#include "src/api/image_parts.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "src/api/api_test_util.h"
#include "src/api/openai.h"
#include "src/api/responses.h"
#include "src/base/base64.h"
#include "src/image/image_test_files.h"

namespace k3::api {
namespace {

using image::testing::Bytes;

std::string DataUrl(const Bytes& bytes, const std::string& mime = "image/png") {
  return "data:" + mime + ";base64," +
         Base64Encode(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
}

Bytes PngOf(int width, int height, int seed) {
  return image::testing::Png(image::testing::Pattern(width, height, 3, seed), width, height, 2);
}

ServerContext VisionContext(int64_t max_images = 4) {
  ServerContext ctx = testing::TestContext();
  auto media = std::make_shared<MediaSettings>();
  media->model_has_vision = true;
  media->processor = image::K3ProcessorConfig();
  media->limits = image::DefaultDecodeLimits();
  media->max_images_per_prompt = max_images;
  ctx.media = std::move(media);
  return ctx;
}

std::string ImagePart(const std::string& url) {
  return R"({"type": "image_url", "image_url": {"url": ")" + url + R"("}})";
}

std::string ChatWith(const std::string& parts) {
  return R"({"model": "Kimi-K3", "max_tokens": 4, "messages": [{"role": "user", "content": [)" + parts +
         "]}]}";
}

TEST(ImagePartsTest, PadsLandWhereThePartsStandAndCountAsTheProcessorSays) {
  const ServerContext ctx = VisionContext();
  const std::string a = DataUrl(PngOf(100, 60, 1)), b = DataUrl(PngOf(29, 300, 2));
  ApiError error;
  auto plan = ParseChatCompletion(
      ChatWith(R"({"type": "text", "text": "look <|kimi_image_placeholder|>"}, )" + ImagePart(a) + ", " +
               R"({"type": "text", "text": "and"}, )" + ImagePart(b) + ", " + ImagePart(a)),
      ctx, &error);
  ASSERT_TRUE(plan.has_value()) << error.message;
  const auto& images = plan->request.images;
  ASSERT_EQ(images.size(), 3u);
  const int32_t pad = static_cast<int32_t>(*ctx.tokenizer->SpecialId("<|media_pad|>"));
  const int64_t expected[] = {image::PlanGeometry({100, 60}, ctx.media->processor).num_tokens,
                              image::PlanGeometry({29, 300}, ctx.media->processor).num_tokens,
                              image::PlanGeometry({100, 60}, ctx.media->processor).num_tokens};
  int64_t pads = 0;
  for (int32_t id : plan->request.prompt) pads += id == pad;
  EXPECT_EQ(pads, expected[0] + expected[1] + expected[2]);
  int64_t previous_end = 0;
  for (size_t i = 0; i < images.size(); ++i) {
    EXPECT_EQ(images[i].num_pads, expected[i]);
    EXPECT_GE(images[i].first_pad, previous_end);
    for (int64_t k = 0; k < images[i].num_pads; ++k)
      EXPECT_EQ(plan->request.prompt[images[i].first_pad + k], pad);
    previous_end = images[i].first_pad + images[i].num_pads;
    EXPECT_EQ(static_cast<int64_t>(images[i].pixels->patches.size()),
              images[i].pixels->grid_h * images[i].pixels->grid_w * 3 * 14 * 14);
  }
  EXPECT_EQ(images[0].content_key, images[2].content_key);  // the same bytes
  EXPECT_NE(images[0].content_key, images[1].content_key);
  EXPECT_EQ(plan->prompt_tokens, static_cast<int64_t>(plan->request.prompt.size()));
  // The typed placeholder is text; the upload's own size is named.
  const std::string text = *ctx.tokenizer->Decode(
      std::vector<tokenizer::TokenId>(plan->request.prompt.begin(), plan->request.prompt.end()));
  EXPECT_NE(
      text.find("look <|kimi_image_placeholder|><|media_begin|>image 100x60<|media_content|><|media_pad|>"),
      std::string::npos)
      << text;
  EXPECT_NE(text.find("and<|media_begin|>image 29x300<|media_content|>"), std::string::npos);
}

TEST(ImagePartsTest, ImagesInToolResultsAndResponsesStyleParts) {
  const ServerContext ctx = VisionContext();
  const std::string url = DataUrl(PngOf(28, 28, 3));
  ApiError error;
  auto plan = ParseChatCompletion(
      R"({"model": "Kimi-K3", "messages": [{"role": "user", "content": "get it"},
          {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "function": {"name": "shot", "arguments": "{}"}}]},
          {"role": "tool", "tool_call_id": "c1", "content": [{"type": "input_image", "image_url": ")" +
          url + R"("}]}]})",
      ctx, &error);
  ASSERT_TRUE(plan.has_value()) << error.message;
  ASSERT_EQ(plan->request.images.size(), 1u);
  EXPECT_EQ(plan->request.images[0].num_pads, 1);
}

// Responses input_image parts reach the same path; errors name the Responses input, not the chat message.
TEST(ImagePartsTest, ResponsesInputImages) {
  const ServerContext ctx = VisionContext();
  ApiError error;
  auto plan = ParseResponses(
      R"({"model": "Kimi-K3", "instructions": "be brief", "input": [{"role": "user", "content": [
      {"type": "input_text", "text": "what is it"}, {"type": "input_image", "image_url": ")" +
          DataUrl(PngOf(60, 30, 6)) + R"("}]}]})",
      ctx, &error);
  ASSERT_TRUE(plan.has_value()) << error.message;
  ASSERT_EQ(plan->chat.request.images.size(), 1u);
  EXPECT_EQ(plan->chat.request.images[0].num_pads,
            image::PlanGeometry({60, 30}, ctx.media->processor).num_tokens);
  auto bad =
      ParseResponses(R"({"model": "Kimi-K3", "instructions": "x", "input": [{"role": "user", "content": [
      {"type": "input_text", "text": "what"}, {"type": "input_image", "image_url": "data:image/png;base64,AAAA"}]}]})",
                     ctx, &error);
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(error.param, "input[0].content[1].image_url") << error.message;
  EXPECT_EQ(error.message.rfind("input[0].content[1].image_url", 0), 0u) << error.message;
}

// /tokenize with messages counts an image as chat completions' usage does.
TEST(ImagePartsTest, TokenizeCountsImagesAsTheChatPrompt) {
  const ServerContext ctx = VisionContext();
  const std::string parts = R"({"type": "text", "text": "see"}, )" + ImagePart(DataUrl(PngOf(300, 200, 7)));
  ApiError error;
  auto plan = ParseChatCompletion(ChatWith(parts), ctx, &error);
  ASSERT_TRUE(plan.has_value()) << error.message;
  auto body = Tokenize(R"({"model": "Kimi-K3", "messages": [{"role": "user", "content": [)" + parts + "]}]}",
                       ctx, &error);
  ASSERT_TRUE(body.has_value()) << error.message;
  EXPECT_EQ(nlohmann::json::parse(*body)["count"].get<int64_t>(), plan->prompt_tokens);
  auto bad = Tokenize(
      R"({"messages": [{"role": "user", "content": [)" + ImagePart("data:image/png;base64,AAAA") + "]}]}",
      ctx, &error);
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(error.param, "messages[0].content[0].image_url");
  EXPECT_EQ(error.message.find("messages[0].content[0].image_url: messages"), std::string::npos)
      << error.message;
}

struct BadImage {
  std::string parts;
  std::string param;
  std::string says;
};

TEST(ImagePartsTest, BadImagesAreA400NamingThePart) {
  const ServerContext ctx = VisionContext(2);
  const Bytes png = PngOf(40, 40, 4);
  const Bytes truncated(png.begin(), png.begin() + static_cast<long>(png.size() / 2));
  const Bytes huge = image::testing::PngWithHeader(100000, 100000, 8, 2, image::testing::Deflate("x"));
  const std::string svg = "<svg xmlns='http://www.w3.org/2000/svg' width='10' height='10'/>";
  const Bytes svg_bytes(svg.begin(), svg.end());
  const std::string path = "messages[0].content[1].image_url";
  const std::string text = R"({"type": "text", "text": "x"}, )";
  const std::vector<BadImage> cases = {
      {text + ImagePart("data:image/png;base64,@@@not base64"), path, "base64"},
      {text + ImagePart(DataUrl(truncated)), path, ""},
      {text + ImagePart(DataUrl(huge)), path, "100000"},
      {text + ImagePart(DataUrl(svg_bytes, "image/svg+xml")), path, ""},
      {text + ImagePart(DataUrl(png, "image/jpeg")), path, ""},
      {text + ImagePart(DataUrl(png, "text/plain")), path, ""},
      {text + ImagePart("http://127.0.0.1:1/a.png"), path, "--allowed-media-domains"},
      {text + ImagePart("file:///etc/passwd"), path, "--allowed-local-media-path"},
      {text + ImagePart("ftp://x/a.png"), path, "data:"},
      {ImagePart(DataUrl(png)) + ", " + ImagePart(DataUrl(png)) + ", " + ImagePart(DataUrl(png)), "messages",
       "at most 2"},
  };
  for (const BadImage& bad : cases) {
    ApiError error;
    auto plan = ParseChatCompletion(ChatWith(bad.parts), ctx, &error);
    ASSERT_FALSE(plan.has_value()) << bad.parts.substr(0, 120);
    EXPECT_EQ(error.http_status, 400);
    EXPECT_EQ(error.param, bad.param) << error.message;
    EXPECT_NE(error.message.find(bad.says), std::string::npos) << error.message;
  }
}

TEST(ImagePartsTest, UrlsGoThroughTheServersFetcherOnly) {
  ServerContext ctx = VisionContext();
  auto media = std::make_shared<MediaSettings>(*ctx.media);
  std::vector<std::string> asked;
  const Bytes png = PngOf(56, 28, 5);
  media->fetch = [&](const std::string& url) -> Result<std::string> {
    asked.push_back(url);
    if (url == "https://img.example/ok.png") return std::string(png.begin(), png.end());
    return InvalidArgument("the host 'other.example' is not in --allowed-media-domains");
  };
  ctx.media = media;
  ApiError error;
  auto plan = ParseChatCompletion(ChatWith(ImagePart("https://img.example/ok.png")), ctx, &error);
  ASSERT_TRUE(plan.has_value()) << error.message;
  EXPECT_EQ(plan->request.images.at(0).num_pads, 2);
  auto refused = ParseChatCompletion(ChatWith(ImagePart("https://other.example/x.png")), ctx, &error);
  EXPECT_FALSE(refused.has_value());
  EXPECT_NE(error.message.find("not in --allowed-media-domains"), std::string::npos);
  EXPECT_EQ(asked.size(), 2u);
}

}  // namespace
}  // namespace k3::api
