// Shared fixtures of the api tests: a byte-level K3 tokenizer (ordinary text = its bytes, specials at
// 256 + K3 offset, so <|end_of_msg|> is 258) and a ServerContext serving "Kimi-K3".
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "src/api/openai.h"
#include "src/engine/engine.h"
#include "src/tokenizer/tokenizer.h"

namespace k3::api::testing {

inline constexpr int32_t kEndOfMsg = 258;

const tokenizer::Tokenizer& ByteTokenizer();
ServerContext TestContext();

// An engine event of one choice.
engine::Event Ev(int32_t choice, std::string text, engine::FinishReason finish = engine::FinishReason::kNone,
                 bool request_done = false);

// Parses SSE payloads / bodies as JSON.
std::vector<nlohmann::json> ParseAll(const std::vector<std::string>& payloads);

}  // namespace k3::api::testing
