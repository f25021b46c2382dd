// Images on the engine thread: the encoder cache, the prefix-cache keys of image prompts, and the
// embedding runs a prefill chunk carries (vision.md §4; design.md "A chat request, end to end").
//
// An image is encoded once, when the first prefill chunk that reaches its pads is scheduled (a prefix-cache
// hit past the image skips the tower altogether); its rows stay with the request (RequestState) until it
// ends, and in the EncoderCache, keyed by the image's content key, for later requests with the same image
// (n > 1 after a preemption, retries, the same picture in another chat).
//
// Prefix caching compares token ids, and every image's pads are the same id: the keys the prefix cache
// sees are the prompt with each image's pads replaced by a negative id that stands for its content key
// (ImageKeyIds), so the same image shares a prefix and a different one never does. Ids are handed out
// from a counter and never reused.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "src/base/status.h"
#include "src/engine/engine.h"
#include "src/model/image_encoder.h"
#include "src/model/step_plan.h"

namespace k3::engine {

using ImageRows = std::shared_ptr<const std::vector<uint16_t>>;  // [num_pads, D] bf16 bits

class EncoderCache {
 public:
  EncoderCache(model::ImageEncoder* encoder, int64_t max_bytes) : encoder_(encoder), max_bytes_(max_bytes) {}

  // The rows of `image`: from the cache, or encoded now (and cached when they fit the budget).
  Result<ImageRows> Rows(const PromptImage& image);

  int64_t encoded() const { return encoded_; }
  int64_t hits() const { return hits_; }
  int64_t bytes() const { return bytes_; }

 private:
  struct Entry {
    std::string key;
    ImageRows rows;
  };
  model::ImageEncoder* encoder_;
  int64_t max_bytes_;
  int64_t bytes_ = 0;
  int64_t encoded_ = 0;
  int64_t hits_ = 0;
  std::list<Entry> lru_;  // front: most recently used
  std::unordered_map<std::string, std::list<Entry>::iterator> by_key_;
};

// Negative ids standing for image contents in prefix-cache keys.
class ImageKeyIds {
 public:
  int32_t IdFor(const std::string& content_key);

 private:
  std::unordered_map<std::string, int32_t> ids_;
  int32_t next_ = 1;
};

// The prefix-cache keys of tokens[0, len): `tokens` itself when no image lies in that range, otherwise
// `scratch` filled with the tokens and each image's pads replaced by its content's id.
std::span<const int32_t> PrefixKeys(std::span<const int32_t> tokens, int64_t len,
                                    const std::vector<PromptImage>& images, ImageKeyIds& ids,
                                    std::vector<int32_t>* scratch);

// True when some image's pads fall in prompt positions [begin, begin + n).
bool ChunkHasImages(const std::vector<PromptImage>& images, int64_t begin, int64_t n);

// Appends to item.embeddings the rows of every image overlapping [begin, begin + n) (item rows are
// relative to begin). rows[i] holds image i's rows (already fetched).
void AddImageRuns(const std::vector<PromptImage>& images, const std::vector<ImageRows>& rows, int64_t begin,
                  int64_t n, int64_t width, model::StepItem* item);

// Checks a request's images against the prompt and the encoder (Submit): in prompt order, inside the
// prompt, not overlapping, pixels matching their grid, pads matching the encoder's output rows.
Status ValidatePromptImages(const std::vector<PromptImage>& images, int64_t prompt_len,
                            const model::ImageEncoder* encoder);

}  // namespace k3::engine
