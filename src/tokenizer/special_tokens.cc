// Names of the K3 special tokens by offset.
#include "src/tokenizer/special_tokens.h"

#include <fmt/format.h>

namespace k3::tokenizer {

std::string K3SpecialTokenName(size_t offset, size_t first_special_id) {
  switch (offset) {
    case kBosOffset:
      return "[BOS]";
    case kEosOffset:
      return "[EOS]";
    case kEndOfMsgOffset:
      return "<|end_of_msg|>";
    case kOpenOffset:
      return "<|open|>";
    case kCloseOffset:
      return "<|close|>";
    case kSepOffset:
      return "<|sep|>";
    case kStartHeaderIdOffset:
      return "[start_header_id]";
    case kEndHeaderIdOffset:
      return "[end_header_id]";
    case kEotOffset:
      return "[EOT]";
    case kMediaBeginOffset:
      return "<|media_begin|>";
    case kMediaContentOffset:
      return "<|media_content|>";
    case kMediaEndOffset:
      return "<|media_end|>";
    case kMediaPadOffset:
      return "<|media_pad|>";
    case kOsagentModeOffset:
      return "<osagent_mode>";
    case kUnkOffset:
      return "[UNK]";
    case kPadOffset:
      return "[PAD]";
    default:
      return fmt::format("<|reserved_token_{}|>", first_special_id + offset);
  }
}

}  // namespace k3::tokenizer
