// BuildWorkload: synthetic prompts (with random images when asked) and JSONL datasets into chat request
// bodies.
#include "src/client/workload.h"

#include <algorithm>
#include <fstream>
#include <random>

#include <nlohmann/json.hpp>

namespace k3::client {
namespace {

using nlohmann::json;

constexpr const char* kVocabulary[] = {
    "time",     "year",    "people",   "way",    "day",        "man",    "thing",   "woman",
    "life",     "child",   "world",    "school", "state",      "family", "student", "group",
    "country",  "problem", "hand",     "part",   "place",      "case",   "week",    "company",
    "system",   "program", "question", "work",   "government", "number", "night",   "point",
    "home",     "water",   "room",     "mother", "area",       "money",  "story",   "fact",
    "month",    "lot",     "right",    "study",  "book",       "eye",    "job",     "word",
    "business", "issue",   "side",     "kind",   "head",       "house",  "service", "friend"};

json Body(const WorkloadOptions& options, json messages, int64_t max_tokens) {
  json body = {{"model", options.model},
               {"messages", std::move(messages)},
               {"max_tokens", max_tokens},
               {"stream", true},
               {"stream_options", {{"include_usage", true}}}};
  if (options.ignore_eos) body["ignore_eos"] = true;
  return body;
}

Result<std::vector<json>> ReadDataset(const WorkloadOptions& options) {
  std::ifstream in(options.dataset);
  if (!in) return NotFound("--dataset {}: cannot open", options.dataset);
  std::vector<json> out;
  std::string line;
  int line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    json row = json::parse(line, nullptr, false);
    if (row.is_discarded() || !row.is_object()) {
      return InvalidArgument("{}:{}: not a JSON object", options.dataset, line_no);
    }
    json messages;
    if (row.contains("messages") && row["messages"].is_array()) {
      messages = row["messages"];
    } else if (row.contains("prompt") && row["prompt"].is_string()) {
      messages = json::array({{{"role", "user"}, {"content", row["prompt"]}}});
    } else {
      return InvalidArgument("{}:{}: expected a \"prompt\" string or a \"messages\" array", options.dataset,
                             line_no);
    }
    int64_t max_tokens = options.output_len;
    for (const char* key : {"max_tokens", "output_len"}) {
      if (row.contains(key) && row[key].is_number_integer()) max_tokens = row[key].get<int64_t>();
    }
    out.push_back(Body(options, std::move(messages), max_tokens));
  }
  if (out.empty()) return InvalidArgument("--dataset {}: no requests in the file", options.dataset);
  return out;
}

// The image parts of synthetic request `index`: random pixels, encoded, as data: URLs.
Result<json> ImageParts(const WorkloadOptions& options, int index) {
  json parts = json::array();
  for (int k = 0; k < options.images; ++k) {
    const uint64_t seed =
        (options.seed * 1000003 + static_cast<uint64_t>(index)) * 1009 + static_cast<uint64_t>(k);
    K3_ASSIGN_OR_RETURN(std::string encoded,
                        image::EncodeImage(options.image_format,
                                           image::RandomRgb(options.image_width, options.image_height, seed),
                                           options.image_width, options.image_height));
    parts.push_back(
        {{"type", "image_url"}, {"image_url", {{"url", image::ToDataUrl(options.image_format, encoded)}}}});
  }
  return parts;
}

constexpr int kMaxImageSide = 16384;

}  // namespace

Result<std::pair<int, int>> ParseImageSize(const std::string& text) {
  const size_t x = text.find_first_of("xX");
  auto side = [&](const std::string& s) -> int {
    if (s.empty() || s.size() > 6 || s.find_first_not_of("0123456789") != std::string::npos) return -1;
    return std::stoi(s);
  };
  const int w = x == std::string::npos ? -1 : side(text.substr(0, x));
  const int h = x == std::string::npos ? -1 : side(text.substr(x + 1));
  if (w < 1 || h < 1 || w > kMaxImageSide || h > kMaxImageSide) {
    return InvalidArgument("--image-size '{}': expected WIDTHxHEIGHT, each side 1..{} (e.g. 640x480)", text,
                           kMaxImageSide);
  }
  return std::pair<int, int>{w, h};
}

Result<image::EncodeFormat> ParseImageFormat(const std::string& text) {
  if (text == "jpeg" || text == "jpg") return image::EncodeFormat::kJpeg;
  if (text == "png") return image::EncodeFormat::kPng;
  return InvalidArgument("--image-format '{}': one of jpeg, png", text);
}

std::string FillerWords(int64_t words, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<size_t> pick(0, sizeof(kVocabulary) / sizeof(kVocabulary[0]) - 1);
  std::string out;
  for (int64_t i = 0; i < words; ++i) {
    if (i > 0) out += ' ';
    out += kVocabulary[pick(rng)];
  }
  return out;
}

Result<std::vector<std::string>> BuildWorkload(const WorkloadOptions& options) {
  if (options.num_prompts <= 0) return InvalidArgument("--num-prompts must be positive");
  if (options.prefix_share < 0 || options.prefix_share > 1) {
    return InvalidArgument("--prefix-share {} is not in [0, 1]", options.prefix_share);
  }
  if (options.images < 0) return InvalidArgument("--images must not be negative");
  if (options.images > 0 && !options.dataset.empty()) {
    return InvalidArgument(
        "--images adds random images to synthetic prompts; it cannot be combined with "
        "--dataset (put image_url parts in the dataset's messages instead)");
  }
  if (options.images > 0 && (options.image_width < 1 || options.image_height < 1)) {
    return InvalidArgument("--images {} needs --image-size WIDTHxHEIGHT", options.images);
  }
  std::vector<std::string> bodies;
  if (!options.dataset.empty()) {
    K3_ASSIGN_OR_RETURN(std::vector<json> rows, ReadDataset(options));
    for (int i = 0; i < options.num_prompts; ++i) bodies.push_back(rows[i % rows.size()].dump());
    return bodies;
  }
  if (options.input_len <= 0 || options.output_len <= 0) {
    return InvalidArgument("--input-len and --output-len must be positive");
  }
  const int64_t shared = static_cast<int64_t>(options.prefix_share * options.input_len);
  const std::string prefix = FillerWords(shared, options.seed);
  for (int i = 0; i < options.num_prompts; ++i) {
    // Each prompt's own part starts with its index, so no two prompts share more than the prefix.
    std::string text = prefix;
    const int64_t own = options.input_len - shared;
    if (own > 0) {
      if (!text.empty()) text += ' ';
      text += std::to_string(i);
      if (own > 1) text += ' ' + FillerWords(own - 1, options.seed * 1000003 + i + 1);
    }
    json content = text;
    if (options.images > 0) {
      K3_ASSIGN_OR_RETURN(content, ImageParts(options, i));
      content.push_back({{"type", "text"}, {"text", text}});
    }
    bodies.push_back(
        Body(options, json::array({{{"role", "user"}, {"content", std::move(content)}}}), options.output_len)
            .dump());
  }
  return bodies;
}

}  // namespace k3::client
