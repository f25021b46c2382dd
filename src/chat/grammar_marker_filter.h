// Keeps XTML marker names out of generated text: a DFA over bytes that tracks the longest suffix of the
// text that is a prefix of `<|open|>`, `<|close|>`, `<|sep|>`, `<|end_of_msg|>` or `[EOS]` (the names
// xtml_markers.h finds in output text) and rejects the byte that would complete one. Free text, JSON
// strings and raw tool arguments all run through it, so the output parser never sees a marker the
// grammar did not place.
#pragma once

#include <cstdint>

namespace k3::chat::grammar {

inline constexpr uint8_t kFilterStart = 0;
inline constexpr uint8_t kFilterReject = 255;

// The state after `byte` (kFilterReject: the byte completes a marker name).
uint8_t FilterNext(uint8_t state, uint8_t byte);

}  // namespace k3::chat::grammar
