// The vision check of k3 verify: does the endpoint count an image's prompt tokens as K3's reference
// processor does (Moonshot's vendor verifier checks usage.prompt_tokens of vision requests against fixed
// numbers)? The client has no tokenizer, so it measures differences of usage.prompt_tokens:
//
//   A = chat with one text part T                         (max_tokens 1)
//   B = chat with an image part, then the same text part  (max_tokens 1)
//   expected B - A = 3 + N + t
//     3: <|media_begin|>, <|media_content|>, <|media_end|>; N: image tokens from image::PlanGeometry
//     (K3's resize / pad / merge rule, or --image-processor's config); t: tokens of the text
//     "image {W}x{H}" (W x H the upload size), from the endpoint's POST /tokenize (vLLM and k3 serve
//     have it) or, without one, from a third pair of requests: a user message of exactly that text
//     minus a user message with empty content (both bounded by the template's special tokens, as the
//     text is inside the image prompt).
// Two generated images: a PNG of 7300 x 30, downscaled by the one-side limit (7168 px) and padded, and
// a JPEG of 333 x 127 (odd sides, padded to multiples of 28). A 400 that says the model takes no images
// is a skip, not a failure.
#include <array>
#include <cctype>

#include <fmt/format.h>

#include "src/client/verify_internal.h"
#include "src/image/encode.h"
#include "src/image/geometry.h"

namespace k3::client::verify_internal {
namespace {

using nlohmann::json;

constexpr const char* kText = "Describe this picture in one word.";

struct VisionCase {
  image::EncodeFormat format;
  int width, height;
  const char* why;
};
constexpr std::array<VisionCase, 2> kCases = {{
    {image::EncodeFormat::kPng, 7300, 30, "downscaled by the one-side limit"},
    {image::EncodeFormat::kJpeg, 333, 127, "odd sides, padded"},
}};

json UserMessage(json content) { return json::array({{{"role", "user"}, {"content", std::move(content)}}}); }

json TextPart(const std::string& text) { return {{"type", "text"}, {"text", text}}; }

struct Counted {
  int64_t prompt_tokens = 0;
  HttpResponse response;
};

// POST one chat (max_tokens 1); the usage.prompt_tokens of its answer. An HTTP error keeps its response
// in *failed (for the skip rule).
Result<Counted> PromptTokens(Run& run, json messages, HttpResponse* failed = nullptr) {
  const json request = {{"messages", std::move(messages)}, {"max_tokens", 1}, {"temperature", 0}};
  K3_ASSIGN_OR_RETURN(HttpResponse response, run.Chat(request));
  auto body = ParseJsonAnswer(response, "POST /v1/chat/completions");
  if (!body.ok()) {
    if (failed != nullptr) *failed = response;
    return body.status();
  }
  auto result = ParseChatCompletion(*body);
  if (!result.ok()) return result.status();
  if (!result->usage || result->usage->prompt_tokens < 0) {
    return DataLoss("the answer has no usage.prompt_tokens [{}]", Evidence(response));
  }
  return Counted{result->usage->prompt_tokens, std::move(response)};
}

struct TextTokens {
  int64_t count = 0;
  std::string how;  // "/tokenize" or "a request pair"
};

// Tokens of `text` alone: /tokenize when the endpoint has it, else a request pair.
Result<TextTokens> CountTextTokens(Run& run, const std::string& text) {
  const json request = {{"model", run.model}, {"prompt", text}, {"add_special_tokens", false}};
  auto response = run.client.Post(run.options.endpoint.Url("/tokenize"), request.dump(),
                                  run.options.endpoint.JsonHeaders());
  if (response.ok() && response->status == 200) {
    const json body = json::parse(response->body, nullptr, false);
    if (body.is_object() && body.contains("tokens") && body["tokens"].is_array()) {
      return TextTokens{static_cast<int64_t>(body["tokens"].size()), "POST /tokenize"};
    }
    if (body.is_object() && body.contains("count") && body["count"].is_number_integer()) {
      return TextTokens{body["count"].get<int64_t>(), "POST /tokenize"};
    }
  }
  K3_ASSIGN_OR_RETURN(Counted with, PromptTokens(run, UserMessage(text)));
  K3_ASSIGN_OR_RETURN(Counted without, PromptTokens(run, UserMessage("")));
  return TextTokens{with.prompt_tokens - without.prompt_tokens, "a request pair (no /tokenize)"};
}

}  // namespace

std::vector<uint8_t> PatternImage(int width, int height) {
  std::vector<uint8_t> rgb(static_cast<size_t>(width) * height * 3);
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      uint8_t* p = &rgb[(static_cast<size_t>(y) * width + x) * 3];
      p[0] = static_cast<uint8_t>(x * 255 / std::max(1, width - 1));
      p[1] = static_cast<uint8_t>(y * 255 / std::max(1, height - 1));
      p[2] = static_cast<uint8_t>(((x / 16) + (y / 16)) % 2 ? 200 : 40);
    }
  }
  return rgb;
}

bool SaysNoImages(const HttpResponse& response) {
  if (response.status != 400 && response.status != 422 && response.status != 501) return false;
  std::string text = response.body;
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const char* phrase : {"no vision tower", "not a multimodal model", "not multimodal", "at most 0 image",
                             "does not support image", "image input is not supported",
                             "images are not supported", "multimodal input is not supported"}) {
    if (text.find(phrase) != std::string::npos) return true;
  }
  return false;
}

CheckResult CheckVision(Run& run) {
  auto text_only = PromptTokens(run, UserMessage(json::array({TextPart(kText)})));
  if (!text_only.ok()) return Fail("the text-only request failed: " + text_only.status().message());
  std::vector<std::string> found, evidence;
  bool all_match = true;
  for (const VisionCase& c : kCases) {
    auto encoded = image::EncodeImage(c.format, PatternImage(c.width, c.height), c.width, c.height);
    if (!encoded.ok()) return Fail("could not build the test image: " + encoded.status().message());
    const image::ImageGeometry g = image::PlanGeometry({c.width, c.height}, run.options.image_processor);
    const std::string label = fmt::format("image {}x{}", c.width, c.height);
    const std::string name =
        fmt::format("{} {}x{}", c.format == image::EncodeFormat::kPng ? "PNG" : "JPEG", c.width, c.height);
    json content =
        json::array({{{"type", "image_url"}, {"image_url", {{"url", image::ToDataUrl(c.format, *encoded)}}}},
                     TextPart(kText)});
    HttpResponse refused;
    auto with_image = PromptTokens(run, UserMessage(std::move(content)), &refused);
    if (!with_image.ok()) {
      if (SaysNoImages(refused)) {
        return Skip(fmt::format("the model takes no images: {} was refused with HTTP {}: {}", name,
                                refused.status, Snippet(refused.body, 200)));
      }
      return Fail(fmt::format("the {} request failed: {}", name, with_image.status().message()));
    }
    auto text_tokens = CountTextTokens(run, label);
    if (!text_tokens.ok()) {
      return Fail(
          fmt::format("counting the tokens of '{}' failed: {}", label, text_tokens.status().message()));
    }
    const int64_t measured = with_image->prompt_tokens - text_only->prompt_tokens;
    const int64_t expected = 3 + g.num_tokens + text_tokens->count;
    const bool match = measured == expected;
    all_match &= match;
    found.push_back(
        fmt::format("{} ({}: resized {}x{}, padded {}x{}, {} image tokens): {} prompt tokens more "
                    "than text alone, expected 3 + {} + {} ('{}', by {}) = {}{}",
                    name, c.why, g.resized_width, g.resized_height, g.padded_width, g.padded_height,
                    g.num_tokens, measured, g.num_tokens, text_tokens->count, label, text_tokens->how,
                    expected, match ? "" : " -- MISMATCH"));
    evidence.push_back(fmt::format("{}: prompt_tokens {} vs {} text only, HTTP {} in {:.0f} ms", name,
                                   with_image->prompt_tokens, text_only->prompt_tokens,
                                   with_image->response.status, with_image->response.elapsed_s * 1000));
  }
  const std::string detail = fmt::format("{}", fmt::join(found, "; "));
  const std::string ev = fmt::format("{}", fmt::join(evidence, " | "));
  if (!all_match) {
    return Fail(
        "image prompt tokens differ from the reference processor's count (does the server resize, "
        "pad and merge as K3's media_proc_cfg says, and name the upload size?): " +
            detail,
        ev);
  }
  return Pass(detail, ev);
}

}  // namespace k3::client::verify_internal
