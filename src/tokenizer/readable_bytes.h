// GPT-2's byte-level "readable" mapping: every byte becomes one printable character (printable Latin-1
// bytes map to themselves, the others to U+0100..U+0143), so token bytes can be shown and written in
// merges.txt without spaces or control characters.
#pragma once

#include <string>
#include <string_view>

namespace k3::tokenizer {

std::string BytesToReadable(std::string_view bytes);

}  // namespace k3::tokenizer
