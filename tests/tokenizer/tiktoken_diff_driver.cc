// Driver of the tiktoken differential test (run_diff.sh): trains a vocabulary from the embedded corpus,
// writes it as K3 tokenizer files, generates the test strings, and writes k3_tokenizer's ids for each
// (specials disallowed and allowed). compare.cjs then encodes the same strings with the tiktoken npm
// package (Rust core via WASM, given the reference pattern with `&&`) and compares.
//
//   tiktoken_diff_driver WORKDIR [NUM_CASES]
// Writes WORKDIR/{tiktoken.model,tokenizer_config.json,pattern.txt,cases.jsonl,k3.jsonl}. Exits 1 if
// k3_tokenizer's own round trip decode(encode(s)) == s fails for any case.
#include <cstdio>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "src/base/file.h"
#include "src/tokenizer/bpe_trainer.h"
#include "src/tokenizer/pretokenizer.h"
#include "src/tokenizer/tokenizer.h"
#include "src/tokenizer/utf8.h"

namespace k3::tokenizer {
namespace {

// Code-point ranges assigned since Unicode 6 or earlier (PCRE2 10.42 has Unicode 14 tables and the Rust
// regex crate a newer version; characters assigned in between would make the engines disagree for
// reasons unrelated to this tokenizer).
struct Range {
  char32_t first, last;
};
const Range kHan[] = {{0x4E00, 0x9FA5}, {0x3005, 0x3007}};
const Range kKana[] = {{0x3041, 0x3096}, {0x30A1, 0x30FA}, {0x30FC, 0x30FC}};
const Range kHangul[] = {{0xAC00, 0xD7A3}};
const Range kLatin[] = {{'a', 'z'}, {'A', 'Z'}, {0xC0, 0xFF}, {0x100, 0x17F}, {0x1C4, 0x1CC}, {0x2B0, 0x2B8}};
const Range kOtherScripts[] = {{0x391, 0x3A9}, {0x3B1, 0x3C9},   {0x410, 0x44F},
                               {0x5D0, 0x5EA}, {0x621, 0x64A},   {0x905, 0x939},
                               {0xE01, 0xE30}, {0x10D0, 0x10F0}, {0x13A0, 0x13F4}};
const Range kMarks[] = {{0x300, 0x36F}, {0x5B0, 0x5BC},   {0x64B, 0x652},  {0x93E, 0x94D},
                        {0xE31, 0xE3A}, {0x20D0, 0x20DC}, {0xFE00, 0xFE0F}};
const Range kDigits[] = {{'0', '9'},       {0x660, 0x669}, {0x966, 0x96F}, {0xFF10, 0xFF19},
                         {0x2160, 0x216B}, {0xB2, 0xB3},   {0xBC, 0xBE}};
const Range kPunct[] = {{'!', '/'},       {':', '@'},       {'[', '`'},       {'{', '~'},
                        {0xA1, 0xBF},     {0x2010, 0x2027}, {0x3001, 0x3003}, {0xFF01, 0xFF0F},
                        {0x2190, 0x21FF}, {0x2500, 0x257F}};
const Range kEmoji[] = {{0x1F600, 0x1F64F}, {0x1F300, 0x1F5FF}, {0x1F680, 0x1F6C5}, {0x2600, 0x26FF}};
const char32_t kSpaces[] = {' ',  ' ',  ' ',  ' ',    '\t',   '\n',   '\n',   '\r',   0x0B,  0x0C,
                            0x1C, 0x85, 0xA0, 0x1680, 0x2003, 0x2028, 0x2029, 0x202F, 0x3000};
const char* const kWords[] = {"hello", "World", "THE", "it",    "they",  "can",
                              "don",   "Q",     "x",   "naïve", "Straße"};
const char* const kSuffixes[] = {"'s", "'t",  "'re", "'ve", "'m",  "'ll", "'d",
                                 "'S", "'LL", "'Re", "'",   "''s", "’s"};
const char* const kSpecialNames[] = {"<|open|>", "<|close|>", "<|sep|>",       "<|end_of_msg|>",
                                     "[BOS]",    "[EOS]",     "<|media_pad|>", "<osagent_mode>",
                                     "[PAD]",    "<|open|",   "<|sep"};
const char* const kEmojiSequences[] = {"\U0001F44D\U0001F3FD", "\U0001F468\u200D\U0001F469\u200D\U0001F467",
                                       "\U0001F1EF\U0001F1F5", "\u2764\uFE0F",
                                       "1\uFE0F\u20E3",        "\U0001F3F3\uFE0F\u200D\U0001F308"};

class CaseGenerator {
 public:
  explicit CaseGenerator(uint32_t seed) : rng_(seed) {}

  std::string Next(size_t index) {
    std::string text;
    const size_t parts = 1 + Below(index % 10 == 0 ? 60 : 12);
    for (size_t p = 0; p < parts; ++p) AppendPart(text);
    return text;
  }

  // A long run of one kind (exercises the heap BPE and, past 25,000 characters, the guard).
  std::string Long(size_t index) {
    std::string text;
    // Every fourth one passes the guard's 25,000-character run limit (tiktoken's own merge loop is
    // quadratic in the piece length, so there are only a few of those).
    const size_t length = index % 4 == 0 ? 25'000 + Below(2'000) : 200 + Below(4'000);
    const int kind = static_cast<int>(index % 5);
    while (text.size() < length) {
      switch (kind) {
        case 0:
          text += 'a' + static_cast<char>(Below(3));
          break;
        case 1:
          AppendUtf8(kSpaces[Below(3)], text);
          break;
        case 2:
          AppendFrom(kHan, text);
          break;
        case 3:
          text += "ab";
          break;
        default:
          AppendFrom(kPunct, text);
          break;
      }
    }
    return text;
  }

 private:
  size_t Below(size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng_); }

  template <size_t N>
  void AppendFrom(const Range (&ranges)[N], std::string& out) {
    const Range& range = ranges[Below(N)];
    AppendUtf8(range.first + static_cast<char32_t>(Below(range.last - range.first + 1)), out);
  }
  template <size_t N>
  void AppendRun(const Range (&ranges)[N], size_t max_length, std::string& out) {
    for (size_t i = 1 + Below(max_length); i > 0; --i) AppendFrom(ranges, out);
  }

  void AppendPart(std::string& out) {
    switch (Below(16)) {
      case 0:
        AppendRun(kLatin, 10, out);
        break;
      case 1:
        out += kWords[Below(std::size(kWords))];
        out += kSuffixes[Below(std::size(kSuffixes))];
        break;
      case 2:
        AppendRun(kDigits, 9, out);
        break;
      case 3:
        for (size_t i = 1 + Below(6); i > 0; --i) AppendUtf8(kSpaces[Below(std::size(kSpaces))], out);
        break;
      case 4:
        AppendRun(kHan, 8, out);
        break;
      case 5:
        AppendRun(kKana, 6, out);
        break;
      case 6:
        AppendRun(kHangul, 5, out);
        break;
      case 7:
        AppendFrom(kLatin, out);
        AppendRun(kMarks, 3, out);
        break;
      case 8:
        AppendRun(kOtherScripts, 8, out);
        break;
      case 9:
        AppendRun(kPunct, 4, out);
        break;
      case 10:
        AppendRun(kEmoji, 3, out);
        break;
      case 11:
        out += kEmojiSequences[Below(std::size(kEmojiSequences))];
        break;
      case 12:
        out += kSpecialNames[Below(std::size(kSpecialNames))];
        break;
      case 13: {
        const std::string_view corpus = EmbeddedCorpus();
        size_t start = Below(corpus.size() - 200);
        while (start > 0 && ValidSequenceLength(corpus, start) == 0) --start;
        size_t end = start + 1 + Below(120);
        while (end < corpus.size() && ValidSequenceLength(corpus, end) == 0) ++end;
        out += corpus.substr(start, end - start);
        break;
      }
      case 14:
        out += " ";
        AppendRun(kLatin, 6, out);
        break;
      default:
        out += Below(2) ? "\r\n" : "\n\n  ";
        break;
    }
  }

  std::mt19937 rng_;
};

nlohmann::json Ids(const std::vector<TokenId>& ids) { return nlohmann::json(ids); }

int Run(const std::string& dir, size_t num_cases) {
  const std::vector<std::string> ranks = TrainByteLevelBpe(EmbeddedCorpus(), 256 + 8000);
  if (Status status = WriteTokenizerFiles(dir, ranks); !status.ok()) {
    std::fprintf(stderr, "%s\n", status.ToString().c_str());
    return 1;
  }
  auto tokenizer = Tokenizer::LoadFromDirectory(dir);
  if (!tokenizer.ok()) {
    std::fprintf(stderr, "%s\n", tokenizer.status().ToString().c_str());
    return 1;
  }
  if (Status status = WriteFileAtomic(dir + "/pattern.txt", kK3PatternReference); !status.ok()) return 1;

  std::ofstream cases(dir + "/cases.jsonl"), ids(dir + "/k3.jsonl");
  CaseGenerator generator(20261202);
  size_t failures = 0;
  for (size_t i = 0; i < num_cases; ++i) {
    const std::string text = i % 400 == 399 ? generator.Long(i / 400) : generator.Next(i);
    const auto ordinary = tokenizer->Encode(text, SpecialTokens::kDisallowed);
    const auto special = tokenizer->Encode(text, SpecialTokens::kAllowed);
    for (const auto* encoded : {&ordinary, &special}) {
      auto decoded = tokenizer->Decode(*encoded);
      if (!decoded.ok() || *decoded != text) {
        if (++failures <= 5) std::fprintf(stderr, "case %zu: decode(encode(s)) != s\n", i);
      }
    }
    cases << nlohmann::json{{"text", text}}.dump() << '\n';
    ids << nlohmann::json{{"ordinary", Ids(ordinary)}, {"special", Ids(special)}}.dump() << '\n';
  }
  std::printf("wrote %zu cases (%zu ranks + 256 specials); round-trip failures: %zu\n", num_cases,
              ranks.size(), failures);
  return failures == 0 ? 0 : 1;
}

}  // namespace
}  // namespace k3::tokenizer

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s WORKDIR [NUM_CASES]\n", argv[0]);
    return 2;
  }
  const size_t num_cases = argc > 2 ? std::stoul(argv[2]) : 12'000;
  return k3::tokenizer::Run(argv[1], num_cases);
}
