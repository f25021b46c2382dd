// Rendezvous store frames (store_frame.h).
#include "src/dist/store_frame.h"

#include <cstring>

namespace k3::dist {
namespace {

void PutU32(std::string* out, uint32_t v) {
  char b[4];
  std::memcpy(b, &v, 4);
  out->append(b, 4);
}

void PutField(std::string* out, std::string_view field) {
  PutU32(out, static_cast<uint32_t>(field.size()));
  out->append(field);
}

class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}
  bool U32(uint32_t* v) {
    if (in_.size() - pos_ < 4) return false;
    std::memcpy(v, in_.data() + pos_, 4);
    pos_ += 4;
    return true;
  }
  bool Field(std::string* out) {
    uint32_t n = 0;
    if (!U32(&n) || in_.size() - pos_ < n) return false;
    out->assign(in_.data() + pos_, n);
    pos_ += n;
    return true;
  }
  size_t left() const { return in_.size() - pos_; }

 private:
  std::string_view in_;
  size_t pos_ = 0;
};

// Fields each kind carries before its optional timeout.
int FixedFields(FrameKind kind) {
  switch (kind) {
    case FrameKind::kSet:
      return 2;
    case FrameKind::kGet:
    case FrameKind::kValue:
    case FrameKind::kTimeout:
    case FrameKind::kError:
      return 1;
    case FrameKind::kOk:
      return 0;
    case FrameKind::kWait:
      return -1;  // counted
  }
  return 0;
}

bool HasTimeout(FrameKind kind) { return kind == FrameKind::kGet || kind == FrameKind::kWait; }

}  // namespace

std::string EncodeFrame(const Frame& frame) {
  std::string body(1, static_cast<char>(frame.kind));
  if (frame.kind == FrameKind::kWait) PutU32(&body, static_cast<uint32_t>(frame.fields.size()));
  for (const std::string& f : frame.fields) PutField(&body, f);
  if (HasTimeout(frame.kind)) PutU32(&body, frame.timeout_ms);
  std::string out;
  PutU32(&out, static_cast<uint32_t>(body.size()));
  return out + body;
}

Result<Frame> DecodeFrameBody(std::string_view body) {
  if (body.empty()) return DataLoss("store frame: empty");
  if (body.size() > kMaxFrameBytes) return DataLoss("store frame: {} bytes is above the limit", body.size());
  const uint8_t kind = static_cast<uint8_t>(body[0]);
  if (kind < 1 || kind > 7) return DataLoss("store frame: unknown kind {}", kind);
  Frame frame;
  frame.kind = static_cast<FrameKind>(kind);
  Reader r(body.substr(1));
  int fields = FixedFields(frame.kind);
  if (fields < 0) {
    uint32_t n = 0;
    if (!r.U32(&n)) return DataLoss("store frame: truncated key count");
    if (n > kMaxWaitKeys || n > r.left() / 4) return DataLoss("store frame: {} keys do not fit the frame", n);
    fields = static_cast<int>(n);
  }
  frame.fields.resize(static_cast<size_t>(fields));
  for (std::string& f : frame.fields) {
    if (!r.Field(&f)) return DataLoss("store frame: a field runs past the end of the frame");
  }
  if (HasTimeout(frame.kind) && !r.U32(&frame.timeout_ms)) return DataLoss("store frame: truncated timeout");
  if (r.left() != 0) return DataLoss("store frame: {} bytes after the last field", r.left());
  return frame;
}

}  // namespace k3::dist
