// PCRE2 (JIT, UTF + UCP) implementation of the K3 pre-tokeniser and its long-input guard.
#include "src/tokenizer/pretokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <string>

#include "src/base/check.h"
#include "src/tokenizer/utf8.h"

namespace k3::tokenizer {

const char kK3PatternReference[] =
    R"([\p{Han}]+)"
    R"(|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?)"
    R"(|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?)"
    R"(|\p{N}{1,3})"
    R"(| ?[^\s\p{L}\p{N}]+[\r\n]*)"
    R"(|\s*[\r\n]+)"
    R"(|\s+(?!\S))"
    R"(|\s+)";

// [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]  ==  [^\p{Ll}\p{N}\p{P}\p{S}\p{Z}\p{C}\p{sc:Han}]
// [\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]        ==  [^\p{Lu}\p{Lt}\p{N}\p{P}\p{S}\p{Z}\p{C}\p{sc:Han}]
// \p{sc:Han} is the Script property: since 10.40 a bare \p{Han} in PCRE2 means Script_Extensions, which
// also holds common CJK punctuation such as U+3002 "。"; Rust's regex (the reference) uses Script.
const char kK3PatternPcre2[] =
    R"([\p{sc:Han}]+)"
    R"(|[^\r\n\p{L}\p{N}]?[^\p{Ll}\p{N}\p{P}\p{S}\p{Z}\p{C}\p{sc:Han}]*[^\p{Lu}\p{Lt}\p{N}\p{P}\p{S}\p{Z}\p{C}\p{sc:Han}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?)"
    R"(|[^\r\n\p{L}\p{N}]?[^\p{Ll}\p{N}\p{P}\p{S}\p{Z}\p{C}\p{sc:Han}]+[^\p{Lu}\p{Lt}\p{N}\p{P}\p{S}\p{Z}\p{C}\p{sc:Han}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?)"
    R"(|\p{N}{1,3})"
    R"(| ?[^\s\p{L}\p{N}]+[\r\n]*)"
    R"(|\s*[\r\n]+)"
    R"(|\s+(?!\S))"
    R"(|\s+)";

struct PreTokenizer::Compiled {
  pcre2_code* code = nullptr;
  bool jit = false;
  ~Compiled() {
    if (code != nullptr) pcre2_code_free(code);
  }
};

PreTokenizer::PreTokenizer(std::unique_ptr<Compiled> compiled) : compiled_(std::move(compiled)) {}
PreTokenizer::~PreTokenizer() = default;

Result<std::unique_ptr<PreTokenizer>> PreTokenizer::Create() {
  auto compiled = std::make_unique<Compiled>();
  int error_code = 0;
  PCRE2_SIZE error_offset = 0;
  compiled->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(kK3PatternPcre2), PCRE2_ZERO_TERMINATED,
                                 PCRE2_UTF | PCRE2_UCP, &error_code, &error_offset, nullptr);
  if (compiled->code == nullptr) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(error_code, message, sizeof(message));
    return Internal("pre-tokeniser pattern does not compile at offset {}: {}", error_offset,
                    reinterpret_cast<const char*>(message));
  }
  compiled->jit = pcre2_jit_compile(compiled->code, PCRE2_JIT_COMPLETE) == 0;
  return std::unique_ptr<PreTokenizer>(new PreTokenizer(std::move(compiled)));
}

const PreTokenizer& PreTokenizer::Shared() {
  static const PreTokenizer* const shared = [] {
    auto created = Create();
    // The pattern is a constant of this program: failing to compile it is a build problem (PCRE2 without
    // Unicode support), not bad input.
    K3_CHECK(created.ok());
    return std::move(created).value().release();
  }();
  return *shared;
}

void PreTokenizer::SplitLongInput(std::string_view text, std::vector<std::string_view>& segments) {
  size_t pos = 0;
  while (pos < text.size()) {
    // One window of at most kGuardWindowChars code points (an invalid byte counts as one).
    size_t window_end = pos;
    size_t slice_start = pos;
    size_t run_length = 0;
    bool run_is_space = false;
    for (size_t chars = 0; chars < kGuardWindowChars && window_end < text.size(); ++chars) {
      const size_t length = ValidSequenceLength(text, window_end);
      const bool is_space = length > 0 && IsPythonSpace(DecodeSequence(text, window_end, length));
      if (chars == 0 || is_space != run_is_space) {
        run_is_space = is_space;
        run_length = 1;
      } else if (++run_length > kGuardMaxRunChars) {
        segments.push_back(text.substr(slice_start, window_end - slice_start));
        slice_start = window_end;
        run_length = 1;
      }
      window_end += length == 0 ? 1 : length;
    }
    segments.push_back(text.substr(slice_start, window_end - slice_start));
    pos = window_end;
  }
}

void PreTokenizer::SplitValidUtf8(std::string_view text, std::vector<std::string_view>& pieces) const {
  pcre2_match_data* match_data = pcre2_match_data_create_from_pattern(compiled_->code, nullptr);
  K3_CHECK(match_data != nullptr);
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t offset = 0;
  while (offset < text.size()) {
    int rc = compiled_->jit ? pcre2_jit_match(compiled_->code, subject, text.size(), offset,
                                              PCRE2_NO_UTF_CHECK, match_data, nullptr)
                            : PCRE2_ERROR_JIT_BADOPTION;
    if (rc < 0 && rc != PCRE2_ERROR_NOMATCH) {
      // JIT stack exhausted or JIT unavailable: the interpreter gives the same matches.
      rc =
          pcre2_match(compiled_->code, subject, text.size(), offset, PCRE2_NO_UTF_CHECK, match_data, nullptr);
    }
    if (rc < 0) {
      pieces.push_back(text.substr(offset));  // nothing (more) matches: keep the rest as one piece
      break;
    }
    const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(match_data);
    const size_t start = ovector[0];
    size_t end = ovector[1];
    if (start > offset) pieces.push_back(text.substr(offset, start - offset));  // never happens for K3
    if (end == start) end = start + ValidSequenceLength(text, start);           // no empty pieces
    pieces.push_back(text.substr(start, end - start));
    offset = end;
  }
  pcre2_match_data_free(match_data);
}

void PreTokenizer::SplitSegment(std::string_view segment, std::vector<std::string_view>& pieces) const {
  size_t pos = 0;
  while (pos < segment.size()) {
    // The longest valid prefix from pos, then the invalid bytes after it.
    size_t valid_end = pos;
    while (valid_end < segment.size()) {
      if (static_cast<unsigned char>(segment[valid_end]) < 0x80) {
        ++valid_end;
        continue;
      }
      const size_t length = ValidSequenceLength(segment, valid_end);
      if (length == 0) break;
      valid_end += length;
    }
    if (valid_end > pos) SplitValidUtf8(segment.substr(pos, valid_end - pos), pieces);
    size_t invalid_end = valid_end;
    while (invalid_end < segment.size() && ValidSequenceLength(segment, invalid_end) == 0) ++invalid_end;
    if (invalid_end > valid_end) pieces.push_back(segment.substr(valid_end, invalid_end - valid_end));
    pos = invalid_end;
  }
}

void PreTokenizer::Split(std::string_view text, std::vector<std::string_view>& pieces) const {
  std::vector<std::string_view> segments;
  SplitLongInput(text, segments);
  for (std::string_view segment : segments) SplitSegment(segment, pieces);
}

}  // namespace k3::tokenizer
