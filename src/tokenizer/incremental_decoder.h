// IncrementalDecoder: turns generated token ids into text one token at a time for streaming. Bytes of a
// UTF-8 character split across tokens are held back until the character is complete, so every returned
// chunk is valid UTF-8 and the chunks concatenate to the whole text. Bytes that can never form a valid
// character are replaced by U+FFFD (one per maximal ill-formed subsequence, as Python's "replace" does).
// Special ids are rendered by name, with no spaces around them.
#pragma once

#include <string>

#include "src/base/status.h"
#include "src/tokenizer/tokenizer.h"

namespace k3::tokenizer {

class IncrementalDecoder {
 public:
  // The tokenizer must outlive the decoder.
  explicit IncrementalDecoder(const Tokenizer& tokenizer) : tokenizer_(&tokenizer) {}

  // Text completed by this token (possibly empty); error on an unknown id (the decoder is unchanged).
  Result<std::string> Push(TokenId id);
  // The held-back bytes at the end of the stream (an incomplete character becomes U+FFFD).
  std::string Flush();

 private:
  const Tokenizer* tokenizer_;
  std::string pending_;
};

}  // namespace k3::tokenizer
