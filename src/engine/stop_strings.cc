// StopStringMatcher: earliest match across stop strings and the held-back tail.
#include "src/engine/stop_strings.h"

#include <algorithm>

namespace k3::engine {

StopStringMatcher::StopStringMatcher(std::vector<std::string> stops) {
  for (std::string& s : stops)
    if (!s.empty()) stops_.push_back(std::move(s));
}

StopStringMatcher::Output StopStringMatcher::Push(std::string_view chunk) {
  Output out;
  if (stops_.empty()) {
    out.text.assign(chunk);
    return out;
  }
  pending_.append(chunk);
  // Earliest match; at equal positions the longer stop string (it is the one the text spells out first
  // only if both match, so either is right; the longer one removes more).
  size_t best = std::string::npos;
  const std::string* best_stop = nullptr;
  for (const std::string& s : stops_) {
    const size_t at = pending_.find(s);
    if (at == std::string::npos) continue;
    if (at < best || (at == best && s.size() > best_stop->size())) {
      best = at;
      best_stop = &s;
    }
  }
  if (best_stop != nullptr) {
    out.text = pending_.substr(0, best);
    out.matched = *best_stop;
    pending_.clear();
    return out;
  }
  // Hold back the longest tail of pending_ that is a proper prefix of a stop string.
  size_t hold = 0;
  for (const std::string& s : stops_) {
    for (size_t len = std::min(s.size() - 1, pending_.size()); len > hold; --len) {
      if (std::string_view(pending_).substr(pending_.size() - len) == std::string_view(s).substr(0, len)) {
        hold = len;
        break;
      }
    }
  }
  out.text = pending_.substr(0, pending_.size() - hold);
  pending_.erase(0, pending_.size() - hold);
  return out;
}

std::string StopStringMatcher::Flush() {
  std::string out = std::move(pending_);
  pending_.clear();
  return out;
}

}  // namespace k3::engine
