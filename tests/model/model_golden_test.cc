// Golden test: the C++ model (src/model) against the PyTorch reference (tools/reference/k3_reference.py).
//
// For each generated preset (tiny-k3, tiny-kimi-linear):
//   1. GenerateCheckpoint(preset, seed) into a fresh temporary directory;
//   2. its fingerprint (sha256 over config.json, the index and the shards, same rule as
//      tools/reference/make_goldens.py) must equal the golden's, otherwise the generator changed and the
//      goldens must be regenerated (tools/reference/README.md) — reported as such, not as a model bug;
//   3. Model::Load, then for every golden prompt the logits row [vocab] of every prompt position must be
//      within relative L2 error 1e-2 of the reference, computed four ways: one prefill Forward with
//      all_logits; the prompt in two chunks; all prompts in one batch; one token per Forward with the
//      sequence state carried (the decode path). model.h: results do not depend on chunking or batching.
//   4. the 32-token greedy continuation after every prompt must equal the reference's.
// The generated presets are initialised so that they do not amplify rounding noise (weight_init.h,
// kResidualBranchGain and the two after it); before that, a single bf16 value rounded the other way grew
// to ~1 % of the logits and the tiny-k3 checks and the greedy check could not pass for a correct engine.
// Golden files: tests/data/golden/<preset>.json (prompts, continuations, fingerprint) and
// <preset>.logits.f32 (little-endian fp32 [rows, vocab], every prompt position, prompts in order).
#include <unistd.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "hwy/targets.h"

#include "src/base/check.h"
#include "src/base/thread_pool.h"
#include "src/model/generator.h"
#include "src/model/model.h"
#include "src/model/sequences.h"
#include "src/model/testing/golden_compare.h"

namespace k3 {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr double kMaxRelL2 = 1e-2;

// ---------------------------------------------------------------------------------------------------
// SHA-256 (FIPS 180-4), only for the checkpoint fingerprint. Round constants are the first 32 bits of
// the fractional parts of the cube roots of the first 64 primes, initial hash values those of the square
// roots of the first 8 primes; both are computed here and pinned by the known-answer test below.
// ---------------------------------------------------------------------------------------------------
class Sha256 {
 public:
  Sha256() {
    const std::array<uint32_t, 64> primes = FirstPrimes();
    for (int i = 0; i < 64; ++i) k_[i] = FractionBits(std::cbrt(static_cast<double>(primes[i])));
    for (int i = 0; i < 8; ++i) h_[i] = FractionBits(std::sqrt(static_cast<double>(primes[i])));
  }

  void Update(const void* data, size_t n) {
    const auto* p = static_cast<const uint8_t*>(data);
    total_ += n;
    while (n > 0) {
      const size_t take = std::min(n, 64 - fill_);
      std::memcpy(block_.data() + fill_, p, take);
      fill_ += take;
      p += take;
      n -= take;
      if (fill_ == 64) {
        Compress(block_.data());
        fill_ = 0;
      }
    }
  }
  void Update(const std::string& s) { Update(s.data(), s.size()); }

  std::string HexDigest() {
    const uint64_t bits = total_ * 8;
    const uint8_t one = 0x80;
    Update(&one, 1);
    const uint8_t zero = 0;
    while (fill_ != 56) Update(&zero, 1);
    uint8_t len[8];
    for (int i = 0; i < 8; ++i) len[i] = static_cast<uint8_t>(bits >> (56 - 8 * i));
    Update(len, 8);
    std::string out;
    for (uint32_t v : h_) out += fmt::format("{:08x}", v);
    return out;
  }

 private:
  static std::array<uint32_t, 64> FirstPrimes() {
    std::array<uint32_t, 64> primes{};
    int count = 0;
    for (uint32_t n = 2; count < 64; ++n) {
      bool prime = true;
      for (uint32_t d = 2; d * d <= n; ++d) prime = prime && (n % d != 0);
      if (prime) primes[count++] = n;
    }
    return primes;
  }
  static uint32_t FractionBits(double x) { return static_cast<uint32_t>((x - std::floor(x)) * 4294967296.0); }
  static uint32_t Rotr(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

  void Compress(const uint8_t* b) {
    uint32_t w[64];
    for (int t = 0; t < 16; ++t) {
      w[t] = uint32_t{b[4 * t]} << 24 | uint32_t{b[4 * t + 1]} << 16 | uint32_t{b[4 * t + 2]} << 8 |
             b[4 * t + 3];
    }
    for (int t = 16; t < 64; ++t) {
      const uint32_t s0 = Rotr(w[t - 15], 7) ^ Rotr(w[t - 15], 18) ^ (w[t - 15] >> 3);
      const uint32_t s1 = Rotr(w[t - 2], 17) ^ Rotr(w[t - 2], 19) ^ (w[t - 2] >> 10);
      w[t] = w[t - 16] + s0 + w[t - 7] + s1;
    }
    uint32_t a = h_[0], bb = h_[1], c = h_[2], d = h_[3], e = h_[4], f = h_[5], g = h_[6], h = h_[7];
    for (int t = 0; t < 64; ++t) {
      const uint32_t t1 = h + (Rotr(e, 6) ^ Rotr(e, 11) ^ Rotr(e, 25)) + ((e & f) ^ (~e & g)) + k_[t] + w[t];
      const uint32_t t2 = (Rotr(a, 2) ^ Rotr(a, 13) ^ Rotr(a, 22)) + ((a & bb) ^ (a & c) ^ (bb & c));
      h = g;
      g = f;
      f = e;
      e = d + t1;
      d = c;
      c = bb;
      bb = a;
      a = t1 + t2;
    }
    h_[0] += a;
    h_[1] += bb;
    h_[2] += c;
    h_[3] += d;
    h_[4] += e;
    h_[5] += f;
    h_[6] += g;
    h_[7] += h;
  }

  std::array<uint32_t, 64> k_{};
  std::array<uint32_t, 8> h_{};
  std::array<uint8_t, 64> block_{};
  size_t fill_ = 0;
  uint64_t total_ = 0;
};

std::string Sha256Hex(const std::string& s) {
  Sha256 h;
  h.Update(s);
  return h.HexDigest();
}

TEST(Sha256Test, KnownAnswers) {
  EXPECT_EQ(Sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(Sha256Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  // Multi-block input fed in odd-sized pieces.
  Sha256 h;
  const std::string a(1000, 'a');
  for (int i = 0; i < 1000; ++i) h.Update(a.data(), 1000);
  EXPECT_EQ(h.HexDigest(), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

// ---------------------------------------------------------------------------------------------------
// Golden files and checkpoint fingerprint
// ---------------------------------------------------------------------------------------------------

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct GoldenStep {
  double norm = 0;
  std::vector<int32_t> ids;
  std::vector<float> logits;
};

struct GoldenPrompt {
  std::vector<int32_t> ids;
  int64_t row_offset = 0;
  std::vector<int32_t> continuation;
  std::vector<GoldenStep> steps;  // continuation tokens 1..n-1
};

struct Golden {
  std::string preset;
  uint64_t seed = 0;
  std::string fingerprint;
  std::vector<std::string> fingerprint_files;
  int64_t vocab = 0;
  std::vector<GoldenPrompt> prompts;
  std::vector<float> logits;  // [rows, vocab]

  const float* Row(const GoldenPrompt& p, int64_t pos) const {
    return logits.data() + (p.row_offset + pos) * vocab;
  }
};

fs::path GoldenDir() { return fs::path(K3_SOURCE_DIR) / "tests" / "data" / "golden"; }

Golden LoadGolden(const std::string& preset) {
  static_assert(std::endian::native == std::endian::little, "golden logits are little-endian fp32");
  Golden g;
  const fs::path json_path = GoldenDir() / (preset + ".json");
  const std::string text = ReadFile(json_path);
  if (text.empty()) {
    ADD_FAILURE() << json_path << " is missing: run tools/reference/make_goldens.py";
    return g;
  }
  const json j = json::parse(text);
  g.preset = j.at("preset").get<std::string>();
  g.seed = j.at("seed").get<uint64_t>();
  g.fingerprint = j.at("fingerprint").get<std::string>();
  g.fingerprint_files = j.at("fingerprint_files").get<std::vector<std::string>>();
  g.vocab = j.at("vocab_size").get<int64_t>();
  for (const json& p : j.at("prompts")) {
    GoldenPrompt gp;
    gp.ids = p.at("ids").get<std::vector<int32_t>>();
    gp.row_offset = p.at("logits_row_offset").get<int64_t>();
    gp.continuation = p.at("continuation").get<std::vector<int32_t>>();
    for (const json& s : p.at("continuation_top")) {
      gp.steps.push_back(GoldenStep{s.at("norm").get<double>(), s.at("ids").get<std::vector<int32_t>>(),
                                    s.at("logits").get<std::vector<float>>()});
    }
    g.prompts.push_back(std::move(gp));
  }
  const int64_t rows = j.at("logits_rows").get<int64_t>();
  const std::string blob = ReadFile(GoldenDir() / j.at("logits_file").get<std::string>());
  if (static_cast<int64_t>(blob.size()) != rows * g.vocab * 4) {
    ADD_FAILURE() << "golden logits file has " << blob.size() << " bytes, expected " << rows * g.vocab * 4;
    return g;
  }
  g.logits.resize(rows * g.vocab);
  std::memcpy(g.logits.data(), blob.data(), blob.size());
  return g;
}

// The files the fingerprint covers: config.json, the index, then the shards (sorted, from the index).
std::vector<std::string> FingerprintFiles(const fs::path& dir) {
  std::vector<std::string> files = {"config.json"};
  const std::string index = ReadFile(dir / "model.safetensors.index.json");
  if (index.empty()) {
    files.push_back("model.safetensors");
    return files;
  }
  files.push_back("model.safetensors.index.json");
  std::set<std::string> shards;
  const json parsed = json::parse(index);
  for (const auto& [name, shard] : parsed.at("weight_map").items()) shards.insert(shard.get<std::string>());
  files.insert(files.end(), shards.begin(), shards.end());
  return files;
}

// sha256 over NAME '\n' SIZE '\n' BYTES for each file (tools/reference/make_goldens.py fingerprint()).
std::string Fingerprint(const fs::path& dir) {
  Sha256 h;
  for (const std::string& name : FingerprintFiles(dir)) {
    const std::string bytes = ReadFile(dir / name);
    h.Update(fmt::format("{}\n{}\n", name, bytes.size()));
    h.Update(bytes);
  }
  return h.HexDigest();
}

// A fresh directory under the system temp dir, removed with its contents on destruction.
class TempDir {
 public:
  explicit TempDir(const std::string& tag) {
    std::string pattern = (fs::temp_directory_path() / ("k3-golden-" + tag + "-XXXXXX")).string();
    char* made = mkdtemp(pattern.data());
    if (made != nullptr) path_ = made;
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

int32_t Argmax(const float* row, int64_t n) {
  return static_cast<int32_t>(std::max_element(row, row + n) - row);
}

// ---------------------------------------------------------------------------------------------------
// The test
// ---------------------------------------------------------------------------------------------------

class ModelGoldenTest : public ::testing::TestWithParam<std::string> {
 protected:
  void TearDown() override { hwy::SetSupportedTargetsForTest(0); }  // back to every target the CPU has
  void SetUp() override {
#if HWY_ARCH_X86
    // The tiny-k3 goldens pass with 6.8e-3 of the 1e-2 limit, measured with the AVX2 kernels. Pin the
    // kernels to AVX2 where the CPU has it, so an AVX-512 machine (another fp32 summation order) runs
    // exactly what was measured. ops_test checks every target against the scalar references.
    if ((hwy::SupportedTargets() & HWY_AVX2) != 0) hwy::SetSupportedTargetsForTest(HWY_AVX2);
#endif
    golden_ = LoadGolden(GetParam());
    ASSERT_FALSE(HasFailure());
    ASSERT_EQ(golden_.preset, GetParam());
    ASSERT_FALSE(golden_.prompts.empty());
    dir_ = std::make_unique<TempDir>(GetParam());
    ASSERT_FALSE(dir_->path().empty()) << "mkdtemp failed";
    const Status st = model::GenerateCheckpoint(golden_.preset, golden_.seed, dir_->path().string());
    ASSERT_TRUE(st.ok()) << st.ToString();
    const std::string fp = Fingerprint(dir_->path());
    ASSERT_EQ(fp, golden_.fingerprint)
        << "checkpoint of preset " << golden_.preset << " seed " << golden_.seed
        << " changed (files now: " << fmt::format("{}", fmt::join(FingerprintFiles(dir_->path()), ", "))
        << "; golden files: " << fmt::format("{}", fmt::join(golden_.fingerprint_files, ", "))
        << "): the generator or the checkpoint layout changed, regenerate the goldens with "
           "tools/reference/make_goldens.py (see tools/reference/README.md)";
    auto loaded = model::Model::Load(dir_->path().string(), &pool_);
    ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
    model_ = std::move(loaded).value();
    ASSERT_EQ(model_->config().vocab_size, golden_.vocab);
  }

  // Checks rows [first, first + n) of prompt p against the golden logits.
  void ExpectPromptRows(const GoldenPrompt& p, size_t prompt_index, int64_t first, const float* rows,
                        int64_t n, const std::string& how) {
    for (int64_t i = 0; i < n; ++i) {
      const int64_t pos = first + i;
      const double rel = model::testing::RelL2(rows + i * golden_.vocab, golden_.Row(p, pos),
                                               static_cast<size_t>(golden_.vocab));
      max_rel_ = std::max(max_rel_, rel);
      EXPECT_LE(rel, kMaxRelL2) << golden_.preset << " " << how << ": prompt " << prompt_index << " position "
                                << pos << " (token " << p.ids[pos] << "): relative L2 error of the logits "
                                << rel << " vs the reference";
    }
  }

  Golden golden_;
  std::unique_ptr<TempDir> dir_;
  ThreadPool pool_{2};
  std::unique_ptr<model::Model> model_;
  double max_rel_ = 0;
};

TEST_P(ModelGoldenTest, PrefillLogitsMatchReference) {
  for (size_t pi = 0; pi < golden_.prompts.size(); ++pi) {
    const GoldenPrompt& p = golden_.prompts[pi];
    model::Sequences seqs(*model_);
    const int32_t state = seqs.New();
    model::SequenceBatchItem item{state, p.ids, /*all_logits=*/true};
    model::ForwardOutput out;
    K3_CHECK_OK(seqs.Forward({&item, 1}, &out));
    ASSERT_EQ(out.rows, static_cast<int64_t>(p.ids.size()));
    ASSERT_EQ(out.logits.size(), p.ids.size() * golden_.vocab);
    ExpectPromptRows(p, pi, 0, out.logits.data(), out.rows, "prefill");
    EXPECT_EQ(seqs.num_tokens(state), static_cast<int64_t>(p.ids.size()));
  }
  std::printf("%s: max relative L2 of prefill logits %.3g\n", golden_.preset.c_str(), max_rel_);
}

// The decode path (one token per step, the sequence's state carried: conv tails, KDA state, MLA cache) over
// the prompt, against the same golden rows.
TEST_P(ModelGoldenTest, TokenByTokenDecodeOfPromptMatchesReference) {
  for (size_t pi = 0; pi < golden_.prompts.size(); ++pi) {
    const GoldenPrompt& p = golden_.prompts[pi];
    model::Sequences seqs(*model_);
    const int32_t state = seqs.New();
    model::ForwardOutput out;
    for (size_t pos = 0; pos < p.ids.size(); ++pos) {
      model::SequenceBatchItem item{state, {&p.ids[pos], 1}, /*all_logits=*/false};
      K3_CHECK_OK(seqs.Forward({&item, 1}, &out));
      ASSERT_EQ(out.rows, 1);
      ExpectPromptRows(p, pi, static_cast<int64_t>(pos), out.logits.data(), 1, "token-by-token decode");
    }
  }
  std::printf("%s: max relative L2 of decode logits over the prompts %.3g\n", golden_.preset.c_str(),
              max_rel_);
}

// 32 greedy tokens after each prompt, one per Forward with the state carried, must equal the reference
// continuation, and the logits at the reference's top ids of every step must be within 1e-2 of the
// reference row's L2 norm. The reference's tokens are fed back (teacher forcing): when every step matches
// this is exactly the model's own greedy continuation, and after a mismatch later steps still compare
// like with like. make_goldens.py keeps only prompts whose top-2 logit margins along the continuation
// and MoE selection gaps stay clear of rounding noise, so an argmax or a routing decision cannot flip
// between two correct engines.
TEST_P(ModelGoldenTest, GreedyContinuationMatchesReference) {
  const int64_t vocab = golden_.vocab;
  double max_step_rel = 0;
  for (size_t pi = 0; pi < golden_.prompts.size(); ++pi) {
    const GoldenPrompt& p = golden_.prompts[pi];
    model::Sequences seqs(*model_);
    const int32_t state = seqs.New();
    model::SequenceBatchItem item{state, p.ids, /*all_logits=*/false};
    model::ForwardOutput out;
    K3_CHECK_OK(seqs.Forward({&item, 1}, &out));
    ASSERT_EQ(out.rows, 1);
    std::vector<int32_t> generated = {Argmax(out.logits.data(), vocab)};
    for (size_t step = 1; step < p.continuation.size(); ++step) {
      const int32_t token = p.continuation[step - 1];
      model::SequenceBatchItem next{state, {&token, 1}, /*all_logits=*/false};
      K3_CHECK_OK(seqs.Forward({&next, 1}, &out));
      ASSERT_EQ(out.rows, 1);
      const GoldenStep& gs = p.steps[step - 1];
      double num = 0;
      for (size_t k = 0; k < gs.ids.size(); ++k) {
        const double d = static_cast<double>(out.logits[gs.ids[k]]) - gs.logits[k];
        num += d * d;
      }
      const double rel = std::sqrt(num) / gs.norm;
      max_step_rel = std::max(max_step_rel, rel);
      EXPECT_LE(rel, kMaxRelL2) << golden_.preset << " decode: prompt " << pi << " step " << step
                                << ": logits at the reference's top ids differ by " << rel
                                << " of the reference row's L2 norm";
      generated.push_back(Argmax(out.logits.data(), vocab));
    }
    EXPECT_EQ(generated, p.continuation)
        << golden_.preset << ": greedy continuation of prompt " << pi << " differs from the reference";
  }
  std::printf("%s: max relative error of decode top-id logits %.3g\n", golden_.preset.c_str(), max_step_rel);
}

TEST_P(ModelGoldenTest, ChunkedPrefillMatchesReference) {
  for (size_t pi = 0; pi < golden_.prompts.size(); ++pi) {
    const GoldenPrompt& p = golden_.prompts[pi];
    const size_t half = p.ids.size() / 2;
    model::Sequences seqs(*model_);
    const int32_t state = seqs.New();
    const std::span<const int32_t> ids(p.ids);
    model::ForwardOutput out;
    model::SequenceBatchItem first{state, ids.first(half), /*all_logits=*/true};
    K3_CHECK_OK(seqs.Forward({&first, 1}, &out));
    ASSERT_EQ(out.rows, static_cast<int64_t>(half));
    ExpectPromptRows(p, pi, 0, out.logits.data(), out.rows, "chunked prefill (first half)");
    model::SequenceBatchItem second{state, ids.subspan(half), /*all_logits=*/true};
    K3_CHECK_OK(seqs.Forward({&second, 1}, &out));
    ASSERT_EQ(out.rows, static_cast<int64_t>(p.ids.size() - half));
    ExpectPromptRows(p, pi, static_cast<int64_t>(half), out.logits.data(), out.rows,
                     "chunked prefill (second half)");
  }
}

TEST_P(ModelGoldenTest, BatchedPrefillMatchesReference) {
  model::Sequences seqs(*model_);
  std::vector<model::SequenceBatchItem> items;
  for (const GoldenPrompt& p : golden_.prompts)
    items.push_back(model::SequenceBatchItem{seqs.New(), p.ids, /*all_logits=*/true});
  model::ForwardOutput out;
  K3_CHECK_OK(seqs.Forward(items, &out));
  int64_t row = 0;
  for (size_t pi = 0; pi < golden_.prompts.size(); ++pi) {
    const GoldenPrompt& p = golden_.prompts[pi];
    ASSERT_LE(row + static_cast<int64_t>(p.ids.size()), out.rows);
    ExpectPromptRows(p, pi, 0, out.logits.data() + row * golden_.vocab, static_cast<int64_t>(p.ids.size()),
                     "batched prefill");
    row += static_cast<int64_t>(p.ids.size());
  }
  EXPECT_EQ(row, out.rows);
}

std::string PresetTestName(const ::testing::TestParamInfo<std::string>& info) {
  std::string name = info.param;
  std::replace(name.begin(), name.end(), '-', '_');
  return name;
}

INSTANTIATE_TEST_SUITE_P(Presets, ModelGoldenTest, ::testing::Values("tiny-k3", "tiny-kimi-linear"),
                         PresetTestName);

}  // namespace
}  // namespace k3
