// What the API request fuzzers share: the ServerContext they parse against (a byte-level tokenizer
// trained on nothing: every byte is a token, specials above 256) and Check(), which aborts so that
// libFuzzer records the input.
#pragma once

#include <cstdlib>

#include "src/api/openai.h"
#include "src/tokenizer/bpe_trainer.h"
#include "src/tokenizer/tokenizer.h"

namespace k3::fuzz {

inline const api::ServerContext& ApiContext() {
  static const tokenizer::Tokenizer tokenizer =
      *tokenizer::Tokenizer::CreateK3(tokenizer::TrainByteLevelBpe("", 256));
  static const api::ServerContext ctx = [] {
    api::ServerContext c;
    c.tokenizer = &tokenizer;
    c.served_model_name = "Kimi-K3";
    c.max_model_len = 8192;
    c.max_n = 16;
    c.max_messages = 256;
    c.eos_token_ids = {256 + 2};
    return c;
  }();
  return ctx;
}

inline void Check(bool condition) {
  if (!condition) std::abort();
}

}  // namespace k3::fuzz
