// When temporary credentials stop working, and when to fetch new ones.
//
// Web identity (STS), EC2 / container metadata and OAuth tokens (GCE metadata, service accounts) last
// about an hour; a 1.56 TB copy or load can take longer. Stores note each credential's expiration and
// fetch fresh ones from the same source kRenewBefore ahead of it, so a long transfer never signs with
// expired keys.
#pragma once

#include <chrono>
#include <optional>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

namespace k3::storage {

using WallClock = std::chrono::system_clock;

// Renew this long before the expiration (the AWS SDKs use 5 minutes too).
inline constexpr std::chrono::minutes kRenewBefore{5};

// "2026-12-05T03:40:00Z" (also with fractional seconds, "+00:00" or without the zone: UTC) as STS and
// the AWS metadata services write it; nullopt when malformed.
std::optional<WallClock::time_point> ParseIso8601Utc(std::string_view text);

// An OAuth token reply's "expires_in" (seconds, a number or a numeric string) counted from `now`;
// nullopt when absent or malformed. `reply` is the parsed JSON (ParseTokenReply reads it once).
std::optional<WallClock::time_point> ExpiryFromExpiresIn(const nlohmann::json& reply,
                                                         WallClock::time_point now);

// True when credentials expiring at `expiration` should be renewed at `now` (never without one).
inline bool NeedsRenewal(const std::optional<WallClock::time_point>& expiration, WallClock::time_point now) {
  return expiration.has_value() && now + kRenewBefore >= *expiration;
}

}  // namespace k3::storage
