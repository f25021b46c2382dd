// The request bodies of a k3 bench run: synthetic prompts (input length in words, a shared prefix
// fraction, a fixed output length, optionally N random images per request as data: URLs, like vLLM's
// random-mm dataset) or a JSONL dataset. The client has no tokenizer (it works against
// any server), so synthetic lengths are counted in filler words and the token counts reported come from
// the server's usage.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "src/base/status.h"
#include "src/image/encode.h"

namespace k3::client {

struct WorkloadOptions {
  std::string model;
  int num_prompts = 100;
  int input_len = 256;      // filler words per synthetic prompt
  int output_len = 128;     // max_tokens
  double prefix_share = 0;  // fraction of input_len shared by every prompt (0..1)
  std::string dataset;  // JSONL: {"prompt": "..."} or {"messages": [...]}, optional "max_tokens"/"output_len"
  bool ignore_eos = false;  // send vLLM's ignore_eos so every request yields output_len tokens
  uint64_t seed = 0;
  // Synthetic prompts only: images per request, each of image_width x image_height random pixels
  // (seeded by seed, request and image index), encoded as image_format, sent as image_url data: URLs
  // ahead of the text part.
  int images = 0;
  int image_width = 0, image_height = 0;
  image::EncodeFormat image_format = image::EncodeFormat::kJpeg;
};

// "640x480" -> {640, 480}; errors name --image-size and the bad text. Each side 1..16384.
Result<std::pair<int, int>> ParseImageSize(const std::string& text);
// "jpeg" | "png"; errors name --image-format.
Result<image::EncodeFormat> ParseImageFormat(const std::string& text);

// num_prompts JSON bodies for /v1/chat/completions with stream + include_usage. A dataset shorter than
// num_prompts is cycled; bad lines are errors naming the line.
Result<std::vector<std::string>> BuildWorkload(const WorkloadOptions& options);

// Deterministic filler text of `words` words (what synthetic prompts are made of).
std::string FillerWords(int64_t words, uint64_t seed);

}  // namespace k3::client
