// Incremental detokenisation with UTF-8 hold-back.
#include "src/tokenizer/incremental_decoder.h"

#include <algorithm>

#include "src/tokenizer/utf8.h"

namespace k3::tokenizer {

bool IncrementalDecoder::Kept(TokenId id) const {
  return std::find(options_.keep.begin(), options_.keep.end(), id) != options_.keep.end();
}

Result<std::string> IncrementalDecoder::Push(TokenId id) {
  K3_ASSIGN_OR_RETURN(std::string_view bytes, tokenizer_->TokenBytes(id));
  const bool special = tokenizer_->IsSpecial(id) && !Kept(id);
  if (special && options_.skip_special_tokens) return std::string();
  std::string ready;
  if (special && options_.spaces_between_special_tokens) {
    // The special stands alone: what was pending before it is flushed first.
    ready = Flush();
    if (wrote_text_ || !ready.empty()) ready += ' ';
    ready.append(bytes);
    wrote_text_ = true;
    space_pending_ = true;
    return ready;
  }
  pending_.append(bytes);
  const size_t hold = IncompleteTailLength(pending_);
  ready = ReplaceInvalidUtf8(std::string_view(pending_).substr(0, pending_.size() - hold));
  pending_.erase(0, pending_.size() - hold);
  if (!ready.empty()) {
    if (space_pending_) ready.insert(ready.begin(), ' ');
    space_pending_ = false;
    wrote_text_ = true;
  }
  return ready;
}

std::string IncrementalDecoder::Flush() {
  std::string rest = ReplaceInvalidUtf8(pending_);
  pending_.clear();
  if (!rest.empty()) {
    if (space_pending_) rest.insert(rest.begin(), ' ');
    space_pending_ = false;
    wrote_text_ = true;
  }
  return rest;
}

}  // namespace k3::tokenizer
