// The K3 pre-tokeniser (spec §4.1): splits text into the pieces that byte-level BPE works inside.
//
// The reference pattern uses Rust class intersections (`[A&&[^\p{Han}]]`), which PCRE2 lacks; here each
// intersection is written as a negated class over the complementary general categories plus Han (the
// general categories partition all code points, so [^\p{Ll}\p{N}\p{P}\p{S}\p{Z}\p{C}\p{Han}] is exactly
// "Lu, Lt, Lm, Lo or M, and not Han"), and \p{Han} becomes \p{sc:Han} (Script, not PCRE2's default
// Script_Extensions, which would pull CJK punctuation into Han runs). Alternatives are tried left to right as
// in fancy-regex; PCRE2 runs with UTF + UCP and JIT.
//
// The reference's long-input guard is reproduced: text is cut into windows of 400,000 code points and
// each window so that no run of whitespace or of non-whitespace (Python str.isspace) is longer than
// 25,000 code points; the regex restarts at every cut.
//
// Invalid UTF-8: every maximal run of bytes that are not part of a valid sequence becomes a piece of its
// own, and the valid text around it is split as if the run were the end / start of the input. Pieces
// always concatenate back to the input, byte for byte.
#pragma once

#include <cstddef>
#include <memory>
#include <string_view>
#include <vector>

#include "src/base/status.h"

namespace k3::tokenizer {

// The pattern exactly as K3 ships it (fancy-regex / tiktoken syntax, with `&&`).
extern const char kK3PatternReference[];
// The same language in PCRE2 syntax.
extern const char kK3PatternPcre2[];

inline constexpr size_t kGuardWindowChars = 400'000;
inline constexpr size_t kGuardMaxRunChars = 25'000;

class PreTokenizer {
 public:
  // Compiles the K3 pattern (JIT when available).
  static Result<std::unique_ptr<PreTokenizer>> Create();
  // A process-wide instance (compiled once; thread-safe to use).
  static const PreTokenizer& Shared();

  ~PreTokenizer();
  PreTokenizer(const PreTokenizer&) = delete;
  PreTokenizer& operator=(const PreTokenizer&) = delete;

  // The long-input guard: appends the segments text is cut into (they concatenate back to text).
  static void SplitLongInput(std::string_view text, std::vector<std::string_view>& segments);

  // Runs the regex over one segment (no guard), appending the pieces.
  void SplitSegment(std::string_view segment, std::vector<std::string_view>& pieces) const;

  // Guard + regex: appends all pieces of text.
  void Split(std::string_view text, std::vector<std::string_view>& pieces) const;

 private:
  struct Compiled;
  explicit PreTokenizer(std::unique_ptr<Compiled> compiled);
  void SplitValidUtf8(std::string_view text, std::vector<std::string_view>& pieces) const;

  std::unique_ptr<Compiled> compiled_;
};

}  // namespace k3::tokenizer
