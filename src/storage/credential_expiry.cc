// Expiration times of temporary credentials (see credential_expiry.h).
#include "src/storage/credential_expiry.h"

#include <ctime>
#include <string>

#include <nlohmann/json.hpp>

namespace k3::storage {
namespace {

// The digits of text[at, at + n) as a number, or -1.
int Digits(std::string_view text, size_t at, size_t n) {
  if (at + n > text.size()) return -1;
  int value = 0;
  for (size_t i = at; i < at + n; ++i) {
    if (text[i] < '0' || text[i] > '9') return -1;
    value = value * 10 + (text[i] - '0');
  }
  return value;
}

}  // namespace

std::optional<WallClock::time_point> ParseIso8601Utc(std::string_view text) {
  // YYYY-MM-DDTHH:MM:SS[.fff][Z|+00:00]
  if (text.size() < 19 || text[4] != '-' || text[7] != '-' || (text[10] != 'T' && text[10] != ' ') ||
      text[13] != ':' || text[16] != ':') {
    return std::nullopt;
  }
  const int year = Digits(text, 0, 4), month = Digits(text, 5, 2), day = Digits(text, 8, 2);
  const int hour = Digits(text, 11, 2), minute = Digits(text, 14, 2), second = Digits(text, 17, 2);
  if (year < 1970 || month < 1 || month > 12 || day < 1 || day > 31 || hour < 0 || hour > 23 || minute < 0 ||
      minute > 59 || second < 0 || second > 60) {
    return std::nullopt;
  }
  size_t at = 19;
  if (at < text.size() && text[at] == '.') {
    ++at;
    while (at < text.size() && text[at] >= '0' && text[at] <= '9') ++at;
  }
  const std::string_view zone = text.substr(at);
  if (!zone.empty() && zone != "Z" && zone != "+00:00") return std::nullopt;
  std::tm tm{};
  tm.tm_year = year - 1900;
  tm.tm_mon = month - 1;
  tm.tm_mday = day;
  tm.tm_hour = hour;
  tm.tm_min = minute;
  tm.tm_sec = second;
  const time_t seconds = ::timegm(&tm);
  if (seconds == static_cast<time_t>(-1)) return std::nullopt;
  return WallClock::from_time_t(seconds);
}

std::optional<WallClock::time_point> ExpiryFromExpiresIn(const nlohmann::json& reply,
                                                         WallClock::time_point now) {
  if (!reply.is_object() || !reply.contains("expires_in")) return std::nullopt;
  const nlohmann::json& field = reply.at("expires_in");
  int64_t seconds = -1;
  if (field.is_number_integer()) {
    seconds = field.get<int64_t>();
  } else if (field.is_string()) {
    const std::string s = field.get<std::string>();
    if (!s.empty() && s.size() <= 12 && s.find_first_not_of("0123456789") == std::string::npos)
      seconds = std::stoll(s);
  }
  if (seconds < 0 || seconds > int64_t{366} * 24 * 3600) return std::nullopt;
  return now + std::chrono::seconds(seconds);
}

}  // namespace k3::storage
