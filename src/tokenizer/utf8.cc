// Strict UTF-8 validation and decoding (RFC 3629 table), and Python's whitespace set.
#include "src/tokenizer/utf8.h"

namespace k3::tokenizer {
namespace {

bool IsContinuation(unsigned char c) { return (c & 0xC0) == 0x80; }

// Allowed range of the second byte for a lead byte, per RFC 3629 (rules out overlongs, surrogates and
// code points above U+10FFFF). Returns the total sequence length, or 0 for an invalid lead byte.
size_t LeadInfo(unsigned char lead, unsigned char& second_min, unsigned char& second_max) {
  second_min = 0x80;
  second_max = 0xBF;
  if (lead < 0x80) return 1;
  if (lead < 0xC2) return 0;
  if (lead < 0xE0) return 2;
  if (lead < 0xF0) {
    if (lead == 0xE0) second_min = 0xA0;
    if (lead == 0xED) second_max = 0x9F;
    return 3;
  }
  if (lead < 0xF5) {
    if (lead == 0xF0) second_min = 0x90;
    if (lead == 0xF4) second_max = 0x8F;
    return 4;
  }
  return 0;
}

}  // namespace

size_t ValidSequenceLength(std::string_view text, size_t pos) {
  if (pos >= text.size()) return 0;
  unsigned char second_min, second_max;
  const size_t length = LeadInfo(static_cast<unsigned char>(text[pos]), second_min, second_max);
  if (length <= 1) return length;
  if (pos + length > text.size()) return 0;
  const auto second = static_cast<unsigned char>(text[pos + 1]);
  if (second < second_min || second > second_max) return 0;
  for (size_t i = 2; i < length; ++i) {
    if (!IsContinuation(static_cast<unsigned char>(text[pos + i]))) return 0;
  }
  return length;
}

char32_t DecodeSequence(std::string_view text, size_t pos, size_t length) {
  const auto byte = [&](size_t i) {
    return static_cast<char32_t>(static_cast<unsigned char>(text[pos + i]));
  };
  switch (length) {
    case 1:
      return byte(0);
    case 2:
      return ((byte(0) & 0x1F) << 6) | (byte(1) & 0x3F);
    case 3:
      return ((byte(0) & 0x0F) << 12) | ((byte(1) & 0x3F) << 6) | (byte(2) & 0x3F);
    default:
      return ((byte(0) & 0x07) << 18) | ((byte(1) & 0x3F) << 12) | ((byte(2) & 0x3F) << 6) | (byte(3) & 0x3F);
  }
}

bool IsValidUtf8(std::string_view text) {
  size_t pos = 0;
  while (pos < text.size()) {
    if (static_cast<unsigned char>(text[pos]) < 0x80) {
      ++pos;
      continue;
    }
    const size_t length = ValidSequenceLength(text, pos);
    if (length == 0) return false;
    pos += length;
  }
  return true;
}

bool IsPythonSpace(char32_t cp) {
  if (cp < 0x80) return (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x20);
  switch (cp) {
    case 0x85:
    case 0xA0:
    case 0x1680:
    case 0x2028:
    case 0x2029:
    case 0x202F:
    case 0x205F:
    case 0x3000:
      return true;
    default:
      return cp >= 0x2000 && cp <= 0x200A;
  }
}

size_t IncompleteTailLength(std::string_view text) {
  // A proper prefix of a sequence is at most 3 bytes; find the last lead byte among them.
  const size_t max_back = text.size() < 3 ? text.size() : 3;
  for (size_t back = 1; back <= max_back; ++back) {
    const size_t pos = text.size() - back;
    const auto c = static_cast<unsigned char>(text[pos]);
    if (IsContinuation(c)) continue;
    unsigned char second_min, second_max;
    const size_t length = LeadInfo(c, second_min, second_max);
    if (length <= back) return 0;  // ASCII, invalid lead, or already complete
    if (back >= 2) {
      const auto second = static_cast<unsigned char>(text[pos + 1]);
      if (second < second_min || second > second_max) return 0;
    }
    return back;
  }
  return 0;
}

void AppendUtf8(char32_t cp, std::string& out) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

// Bytes at text[pos] (not a valid sequence) that form the maximal ill-formed subsequence: a valid lead
// byte plus the continuation bytes that still fit it, or one byte.
static size_t MaximalSubpartLength(std::string_view text, size_t pos) {
  unsigned char second_min, second_max;
  const size_t length = LeadInfo(static_cast<unsigned char>(text[pos]), second_min, second_max);
  if (length <= 1) return 1;
  size_t count = 1;
  while (count < length && pos + count < text.size()) {
    const auto c = static_cast<unsigned char>(text[pos + count]);
    const bool fits = count == 1 ? (c >= second_min && c <= second_max) : IsContinuation(c);
    if (!fits) break;
    ++count;
  }
  return count;
}

std::string ReplaceInvalidUtf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t length = ValidSequenceLength(text, pos);
    if (length == 0) {
      AppendUtf8(0xFFFD, out);
      pos += MaximalSubpartLength(text, pos);
    } else {
      out.append(text.substr(pos, length));
      pos += length;
    }
  }
  return out;
}

}  // namespace k3::tokenizer
