// ReadPromptList (prompt_list.h): one element reader, the batch form around it.
#include "src/api/prompt_list.h"

#include <optional>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "src/api/errors.h"

namespace k3::api {
namespace {

// One prompt: a string or an array of token ids. `path` names it in errors.
std::optional<CompletionPrompt> ReadOnePrompt(FieldReader& fields, const nlohmann::json& prompt,
                                              const std::string& path, const tokenizer::Tokenizer& tokenizer,
                                              bool keep_text) {
  CompletionPrompt out;
  if (prompt.is_string()) {
    std::string text = prompt.get<std::string>();
    for (tokenizer::TokenId id : tokenizer.Encode(text, tokenizer::SpecialTokens::kAllowed))
      out.ids.push_back(static_cast<int32_t>(id));
    if (keep_text) out.text = std::move(text);
  } else if (prompt.is_array()) {
    const auto max_id = static_cast<int64_t>(tokenizer.vocab_size()) - 1;
    std::vector<tokenizer::TokenId> ids;
    for (size_t i = 0; i < prompt.size(); ++i) {
      const auto id = IntegerValue(prompt[i], 0, max_id);
      if (!id) {
        fields.Fail(fmt::format("{}[{}]", path, i),
                    fmt::format("expected a token id in [0, {}], got {}", max_id, prompt[i].dump()));
        return std::nullopt;
      }
      ids.push_back(static_cast<tokenizer::TokenId>(*id));
      out.ids.push_back(static_cast<int32_t>(*id));
    }
    if (keep_text) {
      Result<std::string> text = tokenizer.Decode(ids);
      if (text.ok()) out.text = std::move(*text);
    }
  } else {
    fields.Fail(path, std::string("expected a string or an array of token ids, got ") + JsonTypeName(prompt));
    return std::nullopt;
  }
  if (out.ids.empty()) {
    fields.Fail(path, "must not be empty");
    return std::nullopt;
  }
  return out;
}

}  // namespace

std::vector<CompletionPrompt> ReadPromptList(FieldReader& fields, std::string_view field,
                                             std::string_view noun, const tokenizer::Tokenizer& tokenizer,
                                             bool keep_text) {
  std::vector<CompletionPrompt> out;
  const std::string name(field);
  const nlohmann::json* prompt = fields.Get(name);
  if (!fields.ok()) return out;
  if (prompt == nullptr) {
    fields.Fail(name, "required (a string, an array of token ids, or a list of either)");
    return out;
  }
  // An empty array is one empty prompt ("must not be empty"), not an empty batch.
  const bool batch =
      prompt->is_array() && !prompt->empty() && ((*prompt)[0].is_string() || (*prompt)[0].is_array());
  if (!batch) {
    if (auto one = ReadOnePrompt(fields, *prompt, name, tokenizer, keep_text)) out.push_back(std::move(*one));
    return out;
  }
  if (prompt->size() > kMaxCompletionPrompts) {
    fields.Fail(name, fmt::format("at most {} {}s per request, got {}; split the batch",
                                  kMaxCompletionPrompts, noun, prompt->size()));
    return out;
  }
  for (size_t i = 0; i < prompt->size(); ++i) {
    const nlohmann::json& item = (*prompt)[i];
    const std::string path = fmt::format("{}[{}]", name, i);
    if (!item.is_string() && !item.is_array()) {
      fields.Fail(path,
                  fmt::format("expected a string or an array of token ids (every {} of a list has one of "
                              "these forms), got {}",
                              noun, JsonTypeName(item)));
      return out;
    }
    auto one = ReadOnePrompt(fields, item, path, tokenizer, keep_text);
    if (!one) return out;
    out.push_back(std::move(*one));
  }
  return out;
}

}  // namespace k3::api
