// tokenizer_bench: k3_tokenizer encode throughput (MB/s) on 10 MB of mixed text, against the tiktoken
// npm package (OpenAI's Rust BPE core compiled to WASM) encoding the same text with the same vocabulary
// in the same run. Prints both figures and the ratio (k3 / tiktoken).
//
//   tokenizer_bench [MEGABYTES]      (needs node and tests/tokenizer/node_modules: npm ci there)
// The text is the embedded corpus repeated with its numbers varied, cut into ~64 KB documents at line
// ends (each side encodes every document separately, so the reference's 400,000-character windows never
// apply); the vocabulary is trained from the corpus with 8,000 merges.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "src/base/file.h"
#include "src/tokenizer/bpe_trainer.h"
#include "src/tokenizer/pretokenizer.h"
#include "src/tokenizer/tokenizer.h"

#ifndef K3_SOURCE_DIR
#error "K3_SOURCE_DIR must name the source tree (for tests/tokenizer/bench_tiktoken.cjs)"
#endif

namespace {

std::string MixedText(size_t bytes) {
  const std::string_view corpus = k3::tokenizer::EmbeddedCorpus();
  std::string text;
  text.reserve(bytes + corpus.size());
  for (int round = 0; text.size() < bytes; ++round) {
    for (char c : corpus)
      text += (c >= '0' && c <= '9') ? static_cast<char>('0' + (c - '0' + round) % 10) : c;
  }
  size_t end = text.find('\n', bytes);
  text.resize(end == std::string::npos ? text.size() : end + 1);
  return text;
}

std::vector<std::string_view> Documents(std::string_view text) {
  std::vector<std::string_view> documents;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start + 65536);
    end = end == std::string_view::npos ? text.size() : end + 1;
    documents.push_back(text.substr(start, end - start));
    start = end;
  }
  return documents;
}

}  // namespace

int main(int argc, char** argv) {
  const size_t megabytes = argc > 1 ? std::stoul(argv[1]) : 10;
  const std::string text = MixedText(megabytes * 1'000'000);
  const auto documents = Documents(text);
  const auto ranks = k3::tokenizer::TrainByteLevelBpe(k3::tokenizer::EmbeddedCorpus(), 256 + 8000);
  auto tokenizer = k3::tokenizer::Tokenizer::CreateK3(ranks);
  if (!tokenizer.ok()) return 1;

  const std::string dir = (std::filesystem::temp_directory_path() / "k3_tokenizer_bench").string();
  if (!k3::tokenizer::WriteTokenizerFiles(dir, ranks).ok() ||
      !k3::WriteFileAtomic(dir + "/pattern.txt", k3::tokenizer::kK3PatternReference).ok() ||
      !k3::WriteFileAtomic(dir + "/text.txt", text).ok()) {
    std::fprintf(stderr, "cannot write %s\n", dir.c_str());
    return 1;
  }

  // k3: best of 3 passes.
  double best = 1e30;
  size_t k3_tokens = 0;
  for (int pass = 0; pass < 3; ++pass) {
    const auto start = std::chrono::steady_clock::now();
    size_t tokens = 0;
    for (std::string_view document : documents) {
      tokens += tokenizer->Encode(document, k3::tokenizer::SpecialTokens::kDisallowed).size();
    }
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    k3_tokens = tokens;
  }
  const double k3_mb_s = static_cast<double>(text.size()) / 1e6 / best;

  const std::string command = "node " K3_SOURCE_DIR "/tests/tokenizer/bench_tiktoken.cjs " + dir + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  double peer_mb_s = 0;
  size_t peer_tokens = 0;
  std::string peer_output;
  if (pipe != nullptr) {
    char line[512];
    while (fgets(line, sizeof(line), pipe) != nullptr) {
      peer_output += line;
      std::sscanf(line, "tiktoken %lf MB/s %zu tokens", &peer_mb_s, &peer_tokens);
    }
    pclose(pipe);
  }
  std::printf("text: %.1f MB in %zu documents, vocabulary %zu ranks + 256 specials\n", text.size() / 1e6,
              documents.size(), ranks.size());
  std::printf("k3_tokenizer  %8.2f MB/s  %zu tokens (best of 3)\n", k3_mb_s, k3_tokens);
  if (peer_mb_s <= 0) {
    std::printf("tiktoken npm  not measured (node or tests/tokenizer/node_modules missing):\n%s",
                peer_output.c_str());
    return 0;
  }
  std::printf("tiktoken npm  %8.2f MB/s  %zu tokens (best of 3)\n", peer_mb_s, peer_tokens);
  std::printf("ratio k3 / tiktoken: %.2fx%s\n", k3_mb_s / peer_mb_s,
              peer_tokens == k3_tokens ? "" : "  (WARNING: token counts differ)");
  return peer_tokens == k3_tokens ? 0 : 1;
}
