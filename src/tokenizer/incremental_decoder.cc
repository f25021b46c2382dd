// Incremental detokenisation with UTF-8 hold-back.
#include "src/tokenizer/incremental_decoder.h"

#include "src/tokenizer/utf8.h"

namespace k3::tokenizer {

Result<std::string> IncrementalDecoder::Push(TokenId id) {
  K3_ASSIGN_OR_RETURN(std::string_view bytes, tokenizer_->TokenBytes(id));
  pending_.append(bytes);
  const size_t hold = IncompleteTailLength(pending_);
  std::string ready = ReplaceInvalidUtf8(std::string_view(pending_).substr(0, pending_.size() - hold));
  pending_.erase(0, pending_.size() - hold);
  return ready;
}

std::string IncrementalDecoder::Flush() {
  std::string rest = ReplaceInvalidUtf8(pending_);
  pending_.clear();
  return rest;
}

}  // namespace k3::tokenizer
