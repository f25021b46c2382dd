// libFuzzer target for the tokenizer: any bytes encode (specials allowed and disallowed) and decode back
// to themselves; streaming the ids through IncrementalDecoder gives the same text as replacing the
// invalid UTF-8 of the input at once; ids stay in the vocabulary.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "src/tokenizer/bpe_trainer.h"
#include "src/tokenizer/incremental_decoder.h"
#include "src/tokenizer/tokenizer.h"
#include "src/tokenizer/utf8.h"

namespace {

const k3::tokenizer::Tokenizer& Vocabulary() {
  static const k3::tokenizer::Tokenizer* const tokenizer = [] {
    auto created = k3::tokenizer::Tokenizer::CreateK3(
        k3::tokenizer::TrainByteLevelBpe(k3::tokenizer::EmbeddedCorpus(), 256 + 1500));
    if (!created.ok()) __builtin_trap();
    return new k3::tokenizer::Tokenizer(std::move(created).value());
  }();
  return *tokenizer;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using k3::tokenizer::SpecialTokens;
  const k3::tokenizer::Tokenizer& tokenizer = Vocabulary();
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  for (SpecialTokens specials : {SpecialTokens::kAllowed, SpecialTokens::kDisallowed}) {
    const auto ids = tokenizer.Encode(input, specials);
    for (auto id : ids) {
      if (id >= tokenizer.vocab_size()) __builtin_trap();
      if (specials == SpecialTokens::kDisallowed && tokenizer.IsSpecial(id)) __builtin_trap();
    }
    auto decoded = tokenizer.Decode(ids);
    if (!decoded.ok() || *decoded != input) __builtin_trap();
    k3::tokenizer::IncrementalDecoder decoder(tokenizer);
    std::string streamed;
    for (auto id : ids) {
      auto chunk = decoder.Push(id);
      if (!chunk.ok() || !k3::tokenizer::IsValidUtf8(*chunk)) __builtin_trap();
      streamed += *chunk;
    }
    streamed += decoder.Flush();
    if (streamed != k3::tokenizer::ReplaceInvalidUtf8(input)) __builtin_trap();
  }
  return 0;
}
