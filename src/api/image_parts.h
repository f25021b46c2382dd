// Image parts of chat messages (vision.md §2 and §4; vLLM's multimodal chat inputs): which content parts
// are images, where their bytes come from, what the image processor makes of them, and what the XTML
// renderer and the engine need of them.
//
// Part shapes accepted (user, system and tool messages):
//   {"type": "image_url", "image_url": {"url": URL, "detail": ...}}   (OpenAI chat; "image_url": URL too)
//   {"type": "input_image", "image_url": URL, "detail": ...}          (OpenAI Responses)
// URL: a data: URL (base64 or percent-encoded bytes), or http(s):// and file:// where the server allows
// them (--allowed-media-domains, --allowed-local-media-path; MediaSettings::fetch). Video, audio and file
// parts are refused (K3 servers take images only). Every error is a 400 naming the part
// ("messages[0].content[1].image_url: ...").
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "src/base/status.h"
#include "src/chat/xtml_renderer.h"
#include "src/engine/engine.h"
#include "src/image/image.h"

namespace k3::api {

struct ApiError;
struct ServerContext;

// What the server allows and knows about images (ServerContext::media).
struct MediaSettings {
  bool model_has_vision = false;  // the checkpoint has a vision tower
  image::ProcessorConfig processor;
  image::DecodeLimits limits;
  int64_t max_images_per_prompt = 16;  // --limit-mm-per-prompt '{"image": N}'
  // Reads an http(s):// or file:// URL where the server's allowlists permit it (an error, a 400, names
  // why not); null: only data: URLs.
  std::function<Result<std::string>(const std::string& url)> fetch;
};

// One image of a request, loaded and processed.
struct LoadedImage {
  size_t message = 0;  // where it stands: messages[message].content[part]
  size_t part = 0;
  image::ImageGeometry geometry;
  std::string content_key;  // SHA-256 of the image's bytes (hex)
  std::shared_ptr<const engine::ImagePixels> pixels;
};

// True for the part types this server reads as images.
bool IsImagePart(const nlohmann::json& part);
// The part's URL (image_url.url, or image_url as a string), or nullopt when the part has none.
std::optional<std::string> ImagePartUrl(const nlohmann::json& part);

// Loads and processes every image part of `messages` into *images, in message and part order (none: it
// stays empty). False with *error set (a 400 naming the part; for a model without a tower, naming the
// model) when one cannot be used.
bool LoadImages(const nlohmann::json& messages, const ServerContext& ctx, std::vector<LoadedImage>* images,
                ApiError* error);

// What the renderer needs of them.
std::vector<chat::ImagePart> RenderImageParts(const std::vector<LoadedImage>& images);

// The engine's view once rendered: each image's pads (rendered.images) with its pixels and key.
std::vector<engine::PromptImage> PromptImages(const std::vector<LoadedImage>& images,
                                              const std::vector<chat::RenderedImage>& rendered);

}  // namespace k3::api
