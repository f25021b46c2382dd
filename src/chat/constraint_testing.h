// Helpers shared by the constrained-decoding tests (the json_schema_grammar_test binary): the embedded
// tiny-k3 tokenizer, trained once per binary, and the token ids a constraint allows now.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "src/chat/token_constraint.h"
#include "src/tokenizer/tokenizer.h"

namespace k3::chat::testing {

// The embedded tiny-k3 model's tokenizer (768 ranks + 256 specials, apps/k3/embedded_model.cc).
const tokenizer::Tokenizer& TinyK3();

// The ids in [0, vocab) that constraint.FillAllowed sets, ascending.
std::vector<int32_t> Allowed(TokenConstraint& constraint, size_t vocab);

}  // namespace k3::chat::testing
