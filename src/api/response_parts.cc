// Usage, finish / stop reasons, logprobs and tool-call ids for response bodies.
#include "src/api/response_parts.h"

#include <algorithm>
#include <cmath>
#include <functional>

#include "src/api/json_dump.h"

namespace k3::api {

nlohmann::json UsageJson(const engine::Usage& usage) {
  return {{"prompt_tokens", usage.prompt_tokens},
          {"completion_tokens", usage.completion_tokens},
          {"total_tokens", usage.prompt_tokens + usage.completion_tokens},
          {"prompt_tokens_details", {{"cached_tokens", usage.cached_prompt_tokens}}}};
}

nlohmann::json FinishReasonJson(engine::FinishReason reason, bool called_tools) {
  switch (reason) {
    case engine::FinishReason::kStop:
      return called_tools ? "tool_calls" : "stop";
    case engine::FinishReason::kLength:
      return "length";
    case engine::FinishReason::kAbort:
      return "abort";
    case engine::FinishReason::kError:
      return "error";
    case engine::FinishReason::kNone:
      break;
  }
  return nullptr;
}

nlohmann::json StopReasonJson(const std::string& stop_reason, const std::vector<int32_t>& stop_token_ids,
                              const std::vector<std::string>& stop) {
  if (stop_reason.empty()) return nullptr;
  if (std::find(stop.begin(), stop.end(), stop_reason) != stop.end()) return stop_reason;
  if (stop_reason.size() <= 10 && stop_reason.find_first_not_of("0123456789") == std::string::npos) {
    const int64_t id = std::stoll(stop_reason);
    if (std::find(stop_token_ids.begin(), stop_token_ids.end(), id) != stop_token_ids.end()) return id;
  }
  return nullptr;
}

double JsonLogprob(float logprob) { return std::isfinite(logprob) ? static_cast<double>(logprob) : -9999.0; }

TokenText DescribeToken(const tokenizer::Tokenizer& tokenizer, int32_t id, bool as_token_id) {
  TokenText out;
  if (as_token_id) {
    out.text = "token_id:" + std::to_string(id);
    for (unsigned char c : out.text) out.bytes.push_back(c);
    return out;
  }
  Result<std::string_view> bytes = tokenizer.TokenBytes(static_cast<tokenizer::TokenId>(id));
  const std::string raw = bytes.ok() ? std::string(*bytes) : std::string();
  out.text = ValidUtf8(raw);
  for (unsigned char c : raw) out.bytes.push_back(c);
  return out;
}

nlohmann::json ChatLogprobEntries(const tokenizer::Tokenizer& tokenizer,
                                  const std::vector<engine::TokenLogprob>& logprobs, bool as_token_ids) {
  nlohmann::json entries = nlohmann::json::array();
  for (const engine::TokenLogprob& entry : logprobs) {
    TokenText token = DescribeToken(tokenizer, entry.token, as_token_ids);
    nlohmann::json top = nlohmann::json::array();
    for (const engine::TopLogprob& candidate : entry.top) {
      TokenText text = DescribeToken(tokenizer, candidate.token, as_token_ids);
      top.push_back({{"token", std::move(text.text)},
                     {"logprob", JsonLogprob(candidate.logprob)},
                     {"bytes", text.bytes}});
    }
    entries.push_back({{"token", std::move(token.text)},
                       {"logprob", JsonLogprob(entry.logprob)},
                       {"bytes", token.bytes},
                       {"top_logprobs", std::move(top)}});
  }
  return entries;
}

nlohmann::json PromptLogprobsJson(const tokenizer::Tokenizer& tokenizer,
                                  const std::vector<engine::TokenLogprob>& prompt_logprobs) {
  nlohmann::json out = nlohmann::json::array({nullptr});
  for (const engine::TokenLogprob& entry : prompt_logprobs) {
    nlohmann::json position = nlohmann::json::object();
    auto add = [&](int32_t token, float logprob, int32_t rank) {
      position[std::to_string(token)] = {{"logprob", JsonLogprob(logprob)},
                                         {"rank", rank},
                                         {"decoded_token", DescribeToken(tokenizer, token).text}};
    };
    add(entry.token, entry.logprob, entry.rank);
    for (size_t i = 0; i < entry.top.size(); ++i) {
      if (entry.top[i].token != entry.token)
        add(entry.top[i].token, entry.top[i].logprob, static_cast<int32_t>(i) + 1);
    }
    out.push_back(std::move(position));
  }
  return out;
}

nlohmann::json LegacyLogprobs(const tokenizer::Tokenizer& tokenizer,
                              const std::vector<engine::TokenLogprob>& logprobs, int64_t* text_offset_start,
                              bool as_token_ids) {
  nlohmann::json out = {{"tokens", nlohmann::json::array()},
                        {"token_logprobs", nlohmann::json::array()},
                        {"top_logprobs", nlohmann::json::array()},
                        {"text_offset", nlohmann::json::array()}};
  for (const engine::TokenLogprob& entry : logprobs) {
    TokenText token = DescribeToken(tokenizer, entry.token, as_token_ids);
    nlohmann::json top = nlohmann::json::object();
    for (const engine::TopLogprob& candidate : entry.top)
      top[DescribeToken(tokenizer, candidate.token, as_token_ids).text] = JsonLogprob(candidate.logprob);
    out["text_offset"].push_back(*text_offset_start);
    *text_offset_start += static_cast<int64_t>(token.text.size());
    out["tokens"].push_back(std::move(token.text));
    out["token_logprobs"].push_back(JsonLogprob(entry.logprob));
    out["top_logprobs"].push_back(std::move(top));
  }
  return out;
}

void AppendLegacyLogprobs(nlohmann::json* into, const nlohmann::json& more) {
  for (const char* key : {"tokens", "token_logprobs", "top_logprobs", "text_offset"}) {
    for (const auto& item : more[key]) (*into)[key].push_back(item);
  }
}

std::string ToolCallId(const std::string& response_id, int32_t choice, size_t call) {
  static constexpr char kAlphabet[] = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
  const std::string key = response_id + "/" + std::to_string(choice) + "/" + std::to_string(call);
  uint64_t state = std::hash<std::string>()(key);
  std::string id = "call_";
  for (int i = 0; i < 24; ++i) {
    // splitmix64 steps spread the key's hash over the 24 characters.
    state += 0x9e3779b97f4a7c15ULL;
    uint64_t z = state;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    id += kAlphabet[z % 62];
  }
  return id;
}

}  // namespace k3::api
