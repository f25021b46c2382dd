// The 256 K3 special tokens (spec §4.1): they follow the BPE ranks, so with n ranks the special ids are
// n..n+255, and each known special keeps its K3 offset ([BOS] at n, <|end_of_msg|> at n+2, ...).
// Offsets without a K3 name are called <|reserved_token_ID|> with ID the absolute id.
#pragma once

#include <cstddef>
#include <string>

namespace k3::tokenizer {

inline constexpr size_t kNumSpecialTokens = 256;

// Offsets from the first special id.
enum SpecialOffset : size_t {
  kBosOffset = 0,            // [BOS]
  kEosOffset = 1,            // [EOS] (also a stop id)
  kEndOfMsgOffset = 2,       // <|end_of_msg|> (generation stop)
  kOpenOffset = 3,           // <|open|>
  kCloseOffset = 4,          // <|close|>
  kSepOffset = 5,            // <|sep|>
  kStartHeaderIdOffset = 6,  // [start_header_id]
  kEndHeaderIdOffset = 7,    // [end_header_id]
  kEotOffset = 9,            // [EOT]
  kMediaBeginOffset = 18,    // <|media_begin|>
  kMediaContentOffset = 19,  // <|media_content|>
  kMediaEndOffset = 20,      // <|media_end|>
  kMediaPadOffset = 21,      // <|media_pad|>
  kOsagentModeOffset = 65,   // <osagent_mode>
  kUnkOffset = 254,          // [UNK]
  kPadOffset = 255,          // [PAD]
};

// The K3 name of the special token at `offset` (0..255) when the first special id is first_special_id.
std::string K3SpecialTokenName(size_t offset, size_t first_special_id);

}  // namespace k3::tokenizer
