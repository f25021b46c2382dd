// Fuzzes DecodeFrameBody (what rank 0's rendezvous store reads from any connection) with arbitrary bytes:
// an explained error, or a frame that encodes back to exactly those bytes.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "src/dist/store_frame.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  auto frame = k3::dist::DecodeFrameBody(body);
  if (!frame.ok()) {
    if (frame.status().message().empty()) std::abort();
    return 0;
  }
  if (k3::dist::EncodeFrame(*frame).substr(4) != body) std::abort();
  return 0;
}
