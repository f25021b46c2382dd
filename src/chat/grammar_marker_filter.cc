// Aho-Corasick automaton over the marker names, expanded into a full transition table at first use.
#include "src/chat/grammar_marker_filter.h"

#include <array>
#include <string>
#include <string_view>
#include <vector>

namespace k3::chat::grammar {
namespace {

struct Table {
  std::vector<std::array<uint8_t, 256>> next;

  Table() {
    constexpr std::string_view kNames[] = {"<|open|>", "<|close|>", "<|sep|>", "<|end_of_msg|>", "[EOS]"};
    // States are the distinct proper prefixes of the names; a complete name is the reject state.
    std::vector<std::string> prefixes = {""};
    std::vector<bool> complete = {false};
    for (std::string_view name : kNames) {
      for (size_t n = 1; n <= name.size(); ++n) {
        const std::string prefix(name.substr(0, n));
        bool found = false;
        for (const std::string& p : prefixes) found = found || p == prefix;
        if (!found) {
          prefixes.push_back(prefix);
          complete.push_back(n == name.size());
        }
      }
    }
    next.resize(prefixes.size());
    for (size_t s = 0; s < prefixes.size(); ++s) {
      for (int b = 0; b < 256; ++b) {
        // Longest suffix of prefixes[s] + b that is a prefix of some name.
        const std::string text = prefixes[s] + static_cast<char>(b);
        uint8_t to = kFilterStart;
        for (size_t start = 0; start <= text.size(); ++start) {
          const std::string_view suffix = std::string_view(text).substr(start);
          size_t match = prefixes.size();
          for (size_t p = 0; p < prefixes.size(); ++p) {
            if (prefixes[p] == suffix) match = p;
          }
          if (match < prefixes.size()) {
            to = complete[match] ? kFilterReject : static_cast<uint8_t>(match);
            break;
          }
        }
        next[s][static_cast<size_t>(b)] = to;
      }
    }
  }
};

}  // namespace

uint8_t FilterNext(uint8_t state, uint8_t byte) {
  static const Table table;
  return table.next[state][byte];
}

}  // namespace k3::chat::grammar
