// IncrementalDecoder: turns generated token ids into text one token at a time for streaming. Bytes of a
// UTF-8 character split across tokens are held back until the character is complete, so every returned
// chunk is valid UTF-8 and the chunks concatenate to the whole text. Bytes that can never form a valid
// character are replaced by U+FFFD (one per maximal ill-formed subsequence, as Python's "replace" does).
// Special ids are rendered by name with no spaces around them, unless DecodeOptions say otherwise
// (vLLM's skip_special_tokens and spaces_between_special_tokens).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "src/base/status.h"
#include "src/tokenizer/tokenizer.h"

namespace k3::tokenizer {

struct DecodeOptions {
  bool skip_special_tokens = false;  // special ids add no text (except those in `keep`)
  // A rendered special (not in `keep`) is separated from the text around it by one space, as Hugging
  // Face's decode(spaces_between_special_tokens=True) joins "a", "<|x|>", "b" into "a <|x|> b".
  bool spaces_between_special_tokens = false;
  std::vector<TokenId> keep;  // specials always rendered as they are (structural markup a parser reads)
};

class IncrementalDecoder {
 public:
  // The tokenizer must outlive the decoder.
  explicit IncrementalDecoder(const Tokenizer& tokenizer, DecodeOptions options = {})
      : tokenizer_(&tokenizer), options_(std::move(options)) {}

  // Text completed by this token (possibly empty); error on an unknown id (the decoder is unchanged).
  Result<std::string> Push(TokenId id);
  // The held-back bytes at the end of the stream (an incomplete character becomes U+FFFD).
  std::string Flush();

 private:
  bool Kept(TokenId id) const;

  const Tokenizer* tokenizer_;
  DecodeOptions options_;
  std::string pending_;
  bool wrote_text_ = false;     // any text returned so far (a special after it is preceded by a space)
  bool space_pending_ = false;  // a spaced special was the last thing written
};

}  // namespace k3::tokenizer
