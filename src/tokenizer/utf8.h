// UTF-8 helpers for the tokenizer: strict validation (what PCRE2_UTF accepts: no overlongs, no
// surrogates, nothing above U+10FFFF), code-point decoding, Python's str.isspace() (the long-input
// guard of the reference tokenizer cuts runs by it) and the length of an incomplete trailing sequence
// (the incremental detokeniser holds those bytes back).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace k3::tokenizer {

// Length of the valid UTF-8 sequence starting at text[pos], or 0 if the bytes there are not one.
size_t ValidSequenceLength(std::string_view text, size_t pos);

// Decodes the valid sequence of `length` bytes at text[pos] (length from ValidSequenceLength).
char32_t DecodeSequence(std::string_view text, size_t pos, size_t length);

bool IsValidUtf8(std::string_view text);

// Python's str.isspace() for one code point (Unicode White_Space-like set used by CPython).
bool IsPythonSpace(char32_t cp);

// Number of bytes at the end of text that form a proper prefix of a valid sequence which more bytes
// could complete (0..3).
size_t IncompleteTailLength(std::string_view text);

void AppendUtf8(char32_t cp, std::string& out);

// Copies text replacing each maximal ill-formed subsequence by one U+FFFD (Unicode's recommended
// practice, what Python's errors="replace" does).
std::string ReplaceInvalidUtf8(std::string_view text);

}  // namespace k3::tokenizer
