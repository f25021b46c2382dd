// The rendezvous store's wire format (rendezvous_store.h): one frame per request or reply.
//
//   frame   = u32 body length (little-endian, <= kMaxFrameBytes) + body
//   body    = u8 kind + fields; a field is u32 length + bytes
//   kinds   : kSet(key, value)  kGet(key, u32 timeout_ms)  kWait(u32 n, n keys, u32 timeout_ms)
//             kValue(value)     kOk()                      kTimeout(key that was missing)  kError(text)
//
// DecodeFrameBody checks every length against the bytes left, so a malformed frame is an error, not a
// crash or a large allocation; a peer that sends one is disconnected.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "src/base/status.h"

namespace k3::dist {

inline constexpr uint32_t kMaxFrameBytes = 64u << 20;
inline constexpr uint32_t kMaxWaitKeys = 1u << 16;

enum class FrameKind : uint8_t {
  kSet = 1,
  kGet = 2,
  kWait = 3,
  kValue = 4,
  kOk = 5,
  kTimeout = 6,
  kError = 7,
};

struct Frame {
  FrameKind kind = FrameKind::kOk;
  std::vector<std::string> fields;  // kSet: key, value; kGet: key; kWait: keys; kValue: value; kTimeout: key;
                                    // kError: text
  uint32_t timeout_ms = 0;          // kGet, kWait
  bool operator==(const Frame&) const = default;
};

// The whole frame, length prefix included.
std::string EncodeFrame(const Frame& frame);
// A body (without its length prefix).
Result<Frame> DecodeFrameBody(std::string_view body);

}  // namespace k3::dist
