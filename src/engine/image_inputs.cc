// Images on the engine thread (image_inputs.h): encoder cache, prefix-cache keys, embedding runs.
#include "src/engine/image_inputs.h"

#include <algorithm>

namespace k3::engine {

Result<ImageRows> EncoderCache::Rows(const PromptImage& image) {
  if (auto it = by_key_.find(image.content_key); it != by_key_.end()) {
    lru_.splice(lru_.begin(), lru_, it->second);
    ++hits_;
    return it->second->rows;
  }
  if (encoder_ == nullptr) return InvalidArgument("this model has no vision tower to encode images");
  auto rows = std::make_shared<std::vector<uint16_t>>();
  K3_RETURN_IF_ERROR(
      encoder_->Encode(image.pixels->patches, image.pixels->grid_h, image.pixels->grid_w, rows.get()));
  ++encoded_;
  const int64_t width = encoder_->output_width();
  if (static_cast<int64_t>(rows->size()) != image.num_pads * width) {
    return Internal("the vision tower returned {} values for {} rows of width {}", rows->size(),
                    image.num_pads, width);
  }
  const int64_t size = static_cast<int64_t>(rows->size() * sizeof(uint16_t));
  if (size <= max_bytes_) {
    while (bytes_ + size > max_bytes_ && !lru_.empty()) {
      bytes_ -= static_cast<int64_t>(lru_.back().rows->size() * sizeof(uint16_t));
      by_key_.erase(lru_.back().key);
      lru_.pop_back();
    }
    lru_.push_front(Entry{image.content_key, rows});
    by_key_[image.content_key] = lru_.begin();
    bytes_ += size;
  }
  return ImageRows(std::move(rows));
}

int32_t ImageKeyIds::IdFor(const std::string& content_key) {
  if (auto it = ids_.find(content_key); it != ids_.end()) return it->second;
  // Forgetting every id only costs prefix-cache hits (a known image gets a new id); ids are never reused,
  // so a stale snapshot can never match another image. The counter would need 2^31 distinct images to wrap.
  if (ids_.size() >= (size_t{1} << 20)) ids_.clear();
  const int32_t id = -next_;
  next_ = next_ == INT32_MAX ? 1 : next_ + 1;
  ids_.emplace(content_key, id);
  return id;
}

std::span<const int32_t> PrefixKeys(std::span<const int32_t> tokens, int64_t len,
                                    const std::vector<PromptImage>& images, ImageKeyIds& ids,
                                    std::vector<int32_t>* scratch) {
  const std::span<const int32_t> prefix = tokens.first(static_cast<size_t>(len));
  if (images.empty() || images.front().first_pad >= len) return prefix;
  scratch->assign(prefix.begin(), prefix.end());
  for (const PromptImage& image : images) {
    if (image.first_pad >= len) break;
    const int32_t id = ids.IdFor(image.content_key);
    const int64_t end = std::min(image.first_pad + image.num_pads, len);
    std::fill(scratch->begin() + image.first_pad, scratch->begin() + end, id);
  }
  return *scratch;
}

bool ChunkHasImages(const std::vector<PromptImage>& images, int64_t begin, int64_t n) {
  for (const PromptImage& image : images) {
    if (image.first_pad < begin + n && image.first_pad + image.num_pads > begin) return true;
  }
  return false;
}

void AddImageRuns(const std::vector<PromptImage>& images, const std::vector<ImageRows>& rows, int64_t begin,
                  int64_t n, int64_t width, model::StepItem* item) {
  for (size_t i = 0; i < images.size(); ++i) {
    const PromptImage& image = images[i];
    const int64_t first = std::max(image.first_pad, begin);
    const int64_t end = std::min(image.first_pad + image.num_pads, begin + n);
    if (first >= end) continue;
    model::EmbeddingRun run;
    run.first_row = static_cast<int32_t>(first - begin);
    run.rows = static_cast<int32_t>(end - first);
    run.width = static_cast<int32_t>(width);
    const auto from = rows[i]->begin() + (first - image.first_pad) * width;
    run.bf16.assign(from, from + (end - first) * width);
    item->embeddings.push_back(std::move(run));
  }
}

Status ValidatePromptImages(const std::vector<PromptImage>& images, int64_t prompt_len,
                            const model::ImageEncoder* encoder) {
  if (images.empty()) return OkStatus();
  if (encoder == nullptr) return InvalidArgument("this model has no vision tower; send text only");
  int64_t next_free = 0;
  for (size_t i = 0; i < images.size(); ++i) {
    const PromptImage& image = images[i];
    if (image.first_pad < next_free || image.num_pads < 1 || image.first_pad + image.num_pads > prompt_len) {
      return InvalidArgument("image {}: pads [{}, {}) are out of order or outside the prompt of {} tokens", i,
                             image.first_pad, image.first_pad + image.num_pads, prompt_len);
    }
    next_free = image.first_pad + image.num_pads;
    if (image.pixels == nullptr || image.pixels->grid_h < 1 || image.pixels->grid_w < 1 ||
        static_cast<int64_t>(image.pixels->patches.size()) !=
            image.pixels->grid_h * image.pixels->grid_w * encoder->patch_values()) {
      return InvalidArgument("image {}: its patches do not fill its grid", i);
    }
    const int64_t rows = encoder->OutputTokens(image.pixels->grid_h, image.pixels->grid_w);
    if (rows != image.num_pads) {
      return InvalidArgument("image {}: a {}x{} patch grid encodes to {} rows, not {} pads", i,
                             image.pixels->grid_h, image.pixels->grid_w, rows, image.num_pads);
    }
  }
  return OkStatus();
}

}  // namespace k3::engine
