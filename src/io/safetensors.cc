// safetensors reading: maps the file and validates the untrusted JSON header before any tensor is
// exposed (see the check list in safetensors.h). Writing is in safetensors_writer.cc.
#include "src/io/safetensors.h"

#include <algorithm>
#include <cstring>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "src/io/json_fields.h"

namespace k3::io {
namespace {

using nlohmann::json;

constexpr const char* kCorruptFix = "fix: the file is corrupt or truncated; re-download or re-generate it";

// Names the safetensors format defines that k3stack does not support.
bool IsKnownUnsupportedDType(std::string_view name) {
  for (std::string_view n : {"F8_E4M3", "F8_E5M2", "F8_E8M0", "F4", "F6_E2M3", "F6_E3M2", "C64"}) {
    if (n == name) return true;
  }
  return false;
}

// A non-negative JSON integer (nlohmann stores those as unsigned).
bool AsUnsigned(const json& value, uint64_t* out) {
  if (!value.is_number_unsigned()) return false;
  *out = value.get<uint64_t>();
  return true;
}

struct Range {
  uint64_t begin;
  uint64_t end;
  const std::string* name;
};

class HeaderParser {
 public:
  HeaderParser(const std::string& file, const uint8_t* data_area, uint64_t data_size)
      : file_(file), data_area_(data_area), data_size_(data_size) {}

  Status Entry(const std::string& name, const json& entry, TensorView* out, Range* range) const {
    if (!entry.is_object()) {
      return Corrupt(
          name, fmt::format("is a JSON {}, expected an object {{\"dtype\", \"shape\", \"data_offsets\"}}",
                            JsonKind(entry)));
    }
    auto dtype_it = entry.find("dtype");
    if (dtype_it == entry.end() || !dtype_it->is_string()) {
      return Corrupt(name, "has no string \"dtype\"");
    }
    const std::string& dtype_name = dtype_it->get_ref<const std::string&>();
    const std::optional<DType> dtype = ParseDType(dtype_name);
    if (!dtype) {
      if (IsKnownUnsupportedDType(dtype_name)) {
        return Status(
            StatusCode::kUnimplemented,
            fmt::format("{}: tensor '{}' has dtype {}, which k3stack does not support (supported: BOOL, "
                        "U8, I8, I16, U16, I32, U32, I64, U64, F16, BF16, F32, F64); fix: convert it",
                        file_, name, dtype_name));
      }
      return Corrupt(name, fmt::format("has unknown dtype {}", JsonExcerpt(*dtype_it)));
    }
    auto shape_it = entry.find("shape");
    if (shape_it == entry.end() || !shape_it->is_array()) return Corrupt(name, "has no \"shape\" list");
    std::vector<int64_t> shape;
    uint64_t numel = 1;
    for (const json& dim : *shape_it) {
      uint64_t d = 0;
      if (!AsUnsigned(dim, &d) || d > static_cast<uint64_t>(INT64_MAX)) {
        return Corrupt(name, fmt::format("has shape {}; expected a list of non-negative integers",
                                         JsonExcerpt(*shape_it)));
      }
      if (__builtin_mul_overflow(numel, d, &numel) || numel > static_cast<uint64_t>(INT64_MAX)) {
        return Corrupt(
            name, fmt::format("has shape {} whose element count overflows 64 bits", JsonExcerpt(*shape_it)));
      }
      shape.push_back(static_cast<int64_t>(d));
    }
    uint64_t nbytes = 0;
    if (__builtin_mul_overflow(numel, DTypeSize(*dtype), &nbytes)) {
      return Corrupt(name,
                     fmt::format("has shape {} whose byte size overflows 64 bits", JsonExcerpt(*shape_it)));
    }
    auto offsets_it = entry.find("data_offsets");
    uint64_t begin = 0, end = 0;
    if (offsets_it == entry.end() || !offsets_it->is_array() || offsets_it->size() != 2 ||
        !AsUnsigned((*offsets_it)[0], &begin) || !AsUnsigned((*offsets_it)[1], &end) || begin > end) {
      return Corrupt(
          name, fmt::format("has data_offsets {}; expected [begin, end] with 0 <= begin <= end",
                            offsets_it == entry.end() ? std::string("(missing)") : JsonExcerpt(*offsets_it)));
    }
    if (end - begin != nbytes) {
      return Corrupt(name,
                     fmt::format("has data_offsets [{}, {}] ({} bytes) but dtype {} shape {} needs {} bytes",
                                 begin, end, end - begin, dtype_name, JsonExcerpt(*shape_it), nbytes));
    }
    if (end > data_size_) {
      return Corrupt(name, fmt::format("has data_offsets [{}, {}] past the end of the data area ({} bytes)",
                                       begin, end, data_size_));
    }
    out->name = name;
    out->dtype = *dtype;
    out->shape = std::move(shape);
    out->data = data_area_ == nullptr ? nullptr : data_area_ + begin;
    out->nbytes = static_cast<size_t>(nbytes);
    *range = Range{begin, end, nullptr};
    return OkStatus();
  }

  Status Corrupt(const std::string& name, const std::string& detail) const {
    return DataLoss("{}: tensor '{}' {}; {}", file_, name, detail, kCorruptFix);
  }

 private:
  const std::string& file_;
  const uint8_t* data_area_;
  uint64_t data_size_;
};

Status ParseMetadata(const std::string& file, const json& value, std::map<std::string, std::string>* out) {
  if (!value.is_object()) {
    return DataLoss("{}: \"__metadata__\" is a JSON {}, expected an object of strings; {}", file,
                    JsonKind(value), kCorruptFix);
  }
  for (const auto& [key, item] : value.items()) {
    if (!item.is_string()) {
      return DataLoss("{}: \"__metadata__\" entry '{}' is a JSON {}, expected a string; {}", file, key,
                      JsonKind(item), kCorruptFix);
    }
    (*out)[key] = item.get<std::string>();
  }
  return OkStatus();
}

}  // namespace

int64_t TensorView::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string TensorView::ShapeString() const { return fmt::format("[{}]", fmt::join(shape, ", ")); }

const TensorView* SafetensorsFile::Find(const std::string& name) const {
  auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : &it->second;
}

Result<std::unique_ptr<SafetensorsFile>> SafetensorsFile::Open(const std::string& path) {
  K3_ASSIGN_OR_RETURN(std::unique_ptr<MappedFile> mapped, MappedFile::Open(path));
  K3_ASSIGN_OR_RETURN(std::unique_ptr<SafetensorsFile> file, Parse(mapped->data(), mapped->size(), path));
  file->file_ = std::move(mapped);
  return file;
}

Result<uint64_t> SafetensorsFile::HeaderLength(const uint8_t* bytes, size_t available, uint64_t file_size,
                                               const std::string& name_for_errors) {
  const std::string& file = name_for_errors;
  if (file_size < 8 || available < 8) {
    return DataLoss("{}: {} bytes, shorter than the 8-byte header length that starts a safetensors file; {}",
                    file, file_size, kCorruptFix);
  }
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | bytes[i];  // little-endian
  if (header_len > kMaxHeaderBytes) {
    return DataLoss("{}: header length {} is above the {}-byte limit; {}", file, header_len, kMaxHeaderBytes,
                    kCorruptFix);
  }
  if (header_len > file_size - 8) {
    return DataLoss("{}: header length {} runs past the end of the {}-byte file; {}", file, header_len,
                    file_size, kCorruptFix);
  }
  return header_len;
}

Result<std::unique_ptr<SafetensorsFile>> SafetensorsFile::Parse(const uint8_t* bytes, size_t size,
                                                                const std::string& name_for_errors) {
  return ParseHeader(bytes, size, size, name_for_errors);
}

Result<std::unique_ptr<SafetensorsFile>> SafetensorsFile::ParseHeader(const uint8_t* bytes, size_t available,
                                                                      uint64_t size,
                                                                      const std::string& name_for_errors) {
  const std::string& file = name_for_errors;
  K3_ASSIGN_OR_RETURN(const uint64_t header_len, HeaderLength(bytes, available, size, file));
  if (available < 8 + header_len) {
    return Internal("{}: {} bytes given, the header needs {}", file, available, 8 + header_len);
  }
  const char* header_begin = reinterpret_cast<const char*>(bytes + 8);
  // Tensors point into the data area only when the whole file is in memory.
  const uint8_t* data_area = available >= size ? bytes + 8 + header_len : nullptr;
  const uint64_t data_size = size - 8 - header_len;

  // Duplicate top-level keys: JSON allows them and nlohmann keeps the last, so catch them while parsing.
  std::set<std::string> seen;
  std::string duplicate;
  auto on_event = [&](int depth, json::parse_event_t event, json& parsed) {
    if (event == json::parse_event_t::key && depth == 1 && parsed.is_string()) {
      if (!seen.insert(parsed.get<std::string>()).second && duplicate.empty())
        duplicate = parsed.get<std::string>();
    }
    return true;
  };
  json header;
  try {
    header = json::parse(header_begin, header_begin + header_len, on_event);
  } catch (const json::exception& e) {
    return DataLoss("{}: header is not valid JSON ({}); {}", file, e.what(), kCorruptFix);
  }
  if (!header.is_object()) {
    return DataLoss("{}: header is a JSON {}, expected an object; {}", file, JsonKind(header), kCorruptFix);
  }
  if (!duplicate.empty()) {
    return DataLoss("{}: header names tensor '{}' twice; {}", file, duplicate, kCorruptFix);
  }

  auto result = std::unique_ptr<SafetensorsFile>(new SafetensorsFile());
  result->path_ = file;
  result->file_size_ = size;
  HeaderParser parser(file, data_area, data_size);
  std::vector<Range> ranges;
  ranges.reserve(header.size());
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") {
      K3_RETURN_IF_ERROR(ParseMetadata(file, entry, &result->metadata_));
      continue;
    }
    TensorView view;
    Range range{};
    K3_RETURN_IF_ERROR(parser.Entry(name, entry, &view, &range));
    auto [it, inserted] = result->tensors_.emplace(name, std::move(view));
    range.name = &it->first;
    ranges.push_back(range);
  }

  // Overlaps: sorted by begin, a non-empty range must start at or after every earlier range's end.
  std::sort(ranges.begin(), ranges.end(), [](const Range& a, const Range& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  const Range* widest = nullptr;  // the earlier non-empty range reaching furthest
  for (const Range& range : ranges) {
    if (range.begin == range.end) continue;
    if (widest != nullptr && range.begin < widest->end) {
      return DataLoss("{}: tensor '{}' (bytes [{}, {})) overlaps tensor '{}' (bytes [{}, {})); {}", file,
                      *range.name, range.begin, range.end, *widest->name, widest->begin, widest->end,
                      kCorruptFix);
    }
    if (widest == nullptr || range.end > widest->end) widest = &range;
  }
  return result;
}

}  // namespace k3::io
