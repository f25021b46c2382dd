// Helpers shared by the constrained-decoding tests (constraint_testing.h).
#include "src/chat/constraint_testing.h"

#include "src/tokenizer/bpe_trainer.h"

namespace k3::chat::testing {

const tokenizer::Tokenizer& TinyK3() {
  static const tokenizer::Tokenizer tokenizer =
      *tokenizer::Tokenizer::CreateK3(tokenizer::TrainByteLevelBpe(tokenizer::EmbeddedCorpus(), 1024 - 256));
  return tokenizer;
}

std::vector<int32_t> Allowed(TokenConstraint& constraint, size_t vocab) {
  std::vector<uint64_t> mask((vocab + 63) / 64, ~uint64_t{0});
  constraint.FillAllowed(mask);
  std::vector<int32_t> ids;
  for (size_t id = 0; id < vocab; ++id) {
    if ((mask[id / 64] >> (id % 64)) & 1) ids.push_back(static_cast<int32_t>(id));
  }
  return ids;
}

}  // namespace k3::chat::testing
