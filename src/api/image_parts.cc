// Image parts of chat messages (image_parts.h): find, load, process; hand the renderer and engine theirs.
#include "src/api/image_parts.h"

#include <fmt/format.h>

#include "src/api/json_fields.h"
#include "src/api/openai.h"
#include "src/base/sha256.h"

namespace k3::api {
namespace {

bool HoldsParts(const nlohmann::json& message) {
  if (!message.is_object()) return false;
  const auto content = message.find("content");
  return content != message.end() && content->is_array();
}

// An image's bytes and the MIME type its URL declared ("" when none).
struct ImageSource {
  std::string bytes;
  std::string mime_type;
};

// The bytes behind `url`: a data: URL decoded here, anything else through the server's fetcher.
Result<ImageSource> ImageBytes(const std::string& url, const MediaSettings& media) {
  if (url.rfind("data:", 0) == 0) {
    K3_ASSIGN_OR_RETURN(image::DataUrl data, image::ParseDataUrl(url));
    return ImageSource{std::move(data.bytes), std::move(data.mime_type)};
  }
  if (url.rfind("http://", 0) == 0 || url.rfind("https://", 0) == 0 || url.rfind("file:", 0) == 0) {
    if (!media.fetch) {
      return InvalidArgument(
          "this server reads images from data: URLs only (start it with --allowed-media-domains for http(s) "
          "URLs or --allowed-local-media-path for file: URLs)");
    }
    K3_ASSIGN_OR_RETURN(std::string bytes, media.fetch(url));
    return ImageSource{std::move(bytes), ""};
  }
  return InvalidArgument("expected a data:, http(s):// or file: URL");
}

}  // namespace

bool IsImagePart(const nlohmann::json& part) {
  if (!part.is_object()) return false;
  const auto type = part.find("type");
  return type != part.end() && type->is_string() && (*type == "image_url" || *type == "input_image");
}

std::optional<std::string> ImagePartUrl(const nlohmann::json& part) {
  const auto image_url = part.find("image_url");
  if (image_url == part.end()) return std::nullopt;
  if (image_url->is_string()) return image_url->get<std::string>();
  if (image_url->is_object()) {
    const auto url = image_url->find("url");
    if (url != image_url->end() && url->is_string()) return url->get<std::string>();
  }
  return std::nullopt;
}

bool LoadImages(const nlohmann::json& messages, const ServerContext& ctx, std::vector<LoadedImage>* images,
                ApiError* error) {
  images->clear();
  std::vector<std::pair<size_t, size_t>> parts;
  for (size_t m = 0; m < messages.size(); ++m) {
    if (!HoldsParts(messages[m])) continue;
    const nlohmann::json& content = messages[m]["content"];
    for (size_t p = 0; p < content.size(); ++p) {
      if (IsImagePart(content[p])) parts.emplace_back(m, p);
    }
  }
  if (parts.empty()) return true;
  const std::string first = fmt::format("messages[{}].content[{}]", parts[0].first, parts[0].second);
  const MediaSettings* media = ctx.media.get();
  if (media == nullptr || !media->model_has_vision) {
    *error =
        FieldError(first, fmt::format("the model '{}' has no vision tower: it takes text only (send \"text\" "
                                      "parts, or serve a checkpoint with vision_config)",
                                      ctx.served_model_name));
    return false;
  }
  if (static_cast<int64_t>(parts.size()) > media->max_images_per_prompt) {
    *error = FieldError("messages", fmt::format("{} images in one prompt; at most {} are allowed "
                                                "(--limit-mm-per-prompt '{{\"image\": N}}')",
                                                parts.size(), media->max_images_per_prompt));
    return false;
  }
  for (const auto& [m, p] : parts) {
    const nlohmann::json& part = messages[m]["content"][p];
    const std::string path = fmt::format("messages[{}].content[{}].image_url", m, p);
    const std::optional<std::string> url = ImagePartUrl(part);
    if (!url) {
      *error = FieldError(path, "required: a URL string, or an object with a string \"url\"");
      return false;
    }
    Result<ImageSource> source = ImageBytes(*url, *media);
    if (!source.ok()) {
      *error = FieldError(path, std::string(source.status().message()));
      return false;
    }
    const std::string& bytes = source->bytes;
    const std::span<const uint8_t> view(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
    Result<image::ProcessedImage> processed =
        image::ProcessImage(view, media->processor, media->limits, source->mime_type);
    if (!processed.ok()) {
      *error = FieldError(path, std::string(processed.status().message()));
      return false;
    }
    LoadedImage loaded;
    loaded.message = m;
    loaded.part = p;
    loaded.geometry = processed->geometry;
    loaded.content_key = Sha256Hex(bytes);
    auto pixels = std::make_shared<engine::ImagePixels>();
    pixels->patches = std::move(processed->patches);
    pixels->grid_h = processed->geometry.grid_h;
    pixels->grid_w = processed->geometry.grid_w;
    loaded.pixels = std::move(pixels);
    images->push_back(std::move(loaded));
  }
  return true;
}

std::vector<chat::ImagePart> RenderImageParts(const std::vector<LoadedImage>& images) {
  std::vector<chat::ImagePart> parts;
  for (const LoadedImage& image : images) {
    parts.push_back(chat::ImagePart{image.message, image.part, image.geometry.width, image.geometry.height,
                                    image.geometry.num_tokens});
  }
  return parts;
}

std::vector<engine::PromptImage> PromptImages(const std::vector<LoadedImage>& images,
                                              const std::vector<chat::RenderedImage>& rendered) {
  std::vector<engine::PromptImage> out;
  for (const chat::RenderedImage& placed : rendered) {
    for (const LoadedImage& image : images) {
      if (image.message != placed.message || image.part != placed.part) continue;
      out.push_back(engine::PromptImage{placed.first_pad, placed.num_pads, image.content_key, image.pixels});
      break;
    }
  }
  return out;
}

}  // namespace k3::api
