// StopStringMatcher: finds stop strings in a choice's streamed text.
//
// Text arrives in chunks (complete UTF-8 from the incremental detokeniser). Push returns the text that
// can be emitted now: everything up to the first stop string once one appears (the stop string and all
// after it are dropped), otherwise everything except the longest tail that is a proper prefix of some stop
// string (held back, since the next chunk may complete the stop string). Flush returns the held tail.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace k3::engine {

class StopStringMatcher {
 public:
  explicit StopStringMatcher(std::vector<std::string> stops);

  struct Output {
    std::string text;                    // safe to emit
    std::optional<std::string> matched;  // set when a stop string was found (text ends before it)
  };
  Output Push(std::string_view chunk);
  std::string Flush();

 private:
  std::vector<std::string> stops_;  // non-empty strings only
  std::string pending_;             // held-back text (a possible stop-string start)
};

}  // namespace k3::engine
