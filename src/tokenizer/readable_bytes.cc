// The GPT-2 bytes_to_unicode table.
#include "src/tokenizer/readable_bytes.h"

#include <array>

#include "src/tokenizer/utf8.h"

namespace k3::tokenizer {
namespace {

std::array<char32_t, 256> MakeTable() {
  std::array<char32_t, 256> table{};
  char32_t next_extra = 256;
  for (int b = 0; b < 256; ++b) {
    const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
    table[b] = printable ? static_cast<char32_t>(b) : next_extra++;
  }
  return table;
}

}  // namespace

std::string BytesToReadable(std::string_view bytes) {
  static const std::array<char32_t, 256> table = MakeTable();
  std::string out;
  for (char c : bytes) AppendUtf8(table[static_cast<unsigned char>(c)], out);
  return out;
}

}  // namespace k3::tokenizer
