// BuildWorkload: synthetic prompts and JSONL datasets into chat request bodies.
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

}  // namespace

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
    bodies.push_back(
        Body(options, json::array({{{"role", "user"}, {"content", text}}}), options.output_len).dump());
  }
  return bodies;
}

}  // namespace k3::client
