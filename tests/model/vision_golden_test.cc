// End-to-end golden of an image prompt: the generated tiny-k3 (seed 0) run through Model::Load, its own
// vision tower (Model::image_encoder) encoding the golden's synthetic image, the rows replacing the
// <|media_pad|> embeddings (EmbeddingRun), against tools/reference (k3_reference.py with the rows of
// vision_reference.py; tests/data/golden/tiny-k3.vision_e2e.json + .logits.f32, make_vision_goldens.py):
//   - every prompt position's logits within relative L2 1e-2 (the text goldens' tolerance), in one prefill
//     and with the prompt chunked inside the image;
//   - the 32-token greedy continuation equal to the reference's;
//   - without the image rows the logits are far off (the rows are what the reference used).
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "src/base/file.h"
#include "src/base/thread_pool.h"
#include "src/model/generator.h"
#include "src/model/greedy.h"
#include "src/model/model.h"
#include "src/model/sequences.h"
#include "src/model/testing/golden_compare.h"
#include "src/model/testing/synthetic_patches.h"

namespace k3 {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr double kMaxRelL2 = 1e-2;
using model::testing::RelL2;

TEST(VisionGoldenTest, ImagePromptLogitsAndContinuationMatchTheReference) {
  const fs::path golden_dir = fs::path(K3_SOURCE_DIR) / "tests" / "data" / "golden";
  const Result<std::string> golden_text = ReadFileToString((golden_dir / "tiny-k3.vision_e2e.json").string());
  ASSERT_TRUE(golden_text.ok()) << golden_text.status().ToString();
  const json golden = json::parse(*golden_text);
  const Result<std::string> logits_file =
      ReadFileToString((golden_dir / golden["logits_file"].get<std::string>()).string());
  ASSERT_TRUE(logits_file.ok()) << logits_file.status().ToString();
  const std::string& logits_bytes = *logits_file;
  const int64_t vocab = golden["vocab_size"], rows = golden["logits_rows"];
  ASSERT_EQ(logits_bytes.size(), static_cast<size_t>(rows * vocab) * sizeof(float));
  std::vector<float> want(static_cast<size_t>(rows * vocab));
  std::memcpy(want.data(), logits_bytes.data(), logits_bytes.size());

  char dir_template[] = "/tmp/k3_vision_golden_XXXXXX";
  ASSERT_NE(::mkdtemp(dir_template), nullptr);
  const std::string dir = std::string(dir_template) + "/tiny-k3";
  ASSERT_TRUE(model::GenerateCheckpoint(golden["preset"], golden["seed"], dir).ok());
  ThreadPool pool(2);
  auto loaded = model::Model::Load(dir, &pool);
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  model::Model& m = **loaded;
  ASSERT_EQ(m.config().vocab_size, vocab);
  model::ImageEncoder* encoder = m.image_encoder();
  ASSERT_NE(encoder, nullptr) << "tiny-k3 has a vision tower";

  const int grid_h = golden["image"]["grid"][0], grid_w = golden["image"]["grid"][1];
  const std::vector<float> patches =
      model::testing::SyntheticPatches(grid_h, grid_w, golden["image"]["index"], 14);
  std::vector<uint16_t> image_rows;
  ASSERT_TRUE(encoder->Encode(patches, grid_h, grid_w, &image_rows).ok());
  const std::vector<int32_t> ids = golden["ids"].get<std::vector<int32_t>>();
  const std::vector<int64_t> pads = golden["media_pad_positions"].get<std::vector<int64_t>>();
  ASSERT_EQ(encoder->OutputTokens(grid_h, grid_w), static_cast<int64_t>(pads.size()));
  for (size_t i = 1; i < pads.size(); ++i) ASSERT_EQ(pads[i], pads[0] + static_cast<int64_t>(i));
  const model::EmbeddingRun run{static_cast<int32_t>(pads[0]), static_cast<int32_t>(pads.size()),
                                static_cast<int32_t>(encoder->output_width()), image_rows};

  // One prefill + the greedy continuation.
  std::vector<float> got(want.size());
  auto generated = model::GreedyGenerate(m, ids, golden["continuation"].size(),
                                         [&](int64_t position, int32_t, std::span<const float> logits) {
                                           if (position < rows)
                                             std::memcpy(got.data() + position * vocab, logits.data(),
                                                         vocab * sizeof(float));
                                         },
                                         {}, {run});
  ASSERT_TRUE(generated.ok()) << generated.status().ToString();
  double worst = 0;
  for (int64_t r = 0; r < rows; ++r) {
    const double err = RelL2(got.data() + r * vocab, want.data() + r * vocab, static_cast<size_t>(vocab));
    worst = std::max(worst, err);
    EXPECT_LE(err, kMaxRelL2) << "prompt position " << r;
  }
  std::printf("image prompt: max relative L2 %.3g over %lld positions\n", worst,
              static_cast<long long>(rows));
  EXPECT_EQ(*generated, golden["continuation"].get<std::vector<int32_t>>());

  // The same prompt in chunks that end inside the image (rows of a run relative to each chunk).
  model::Sequences sequences(m);
  const int32_t seq = sequences.New();
  const int64_t cut1 = pads[0] + 4, cut2 = pads[0] + 9;
  std::vector<float> chunked;
  int64_t begin = 0;
  for (int64_t end : {cut1, cut2, static_cast<int64_t>(ids.size())}) {
    model::SequenceBatchItem item{seq, std::span<const int32_t>(ids.data() + begin, end - begin), true};
    const int64_t first = std::max(pads[0], begin),
                  last = std::min(pads[0] + static_cast<int64_t>(pads.size()), end);
    if (first < last) {
      const auto from = image_rows.begin() + (first - pads[0]) * run.width;
      item.embeddings.push_back(
          model::EmbeddingRun{static_cast<int32_t>(first - begin), static_cast<int32_t>(last - first),
                              run.width, std::vector<uint16_t>(from, from + (last - first) * run.width)});
    }
    model::ForwardOutput out;
    ASSERT_TRUE(sequences.Forward(std::span<const model::SequenceBatchItem>(&item, 1), &out).ok());
    chunked.insert(chunked.end(), out.logits.begin(), out.logits.end());
    begin = end;
  }
  ASSERT_EQ(chunked.size(), want.size());
  for (int64_t r = 0; r < rows; ++r) {
    EXPECT_LE(RelL2(chunked.data() + r * vocab, want.data() + r * vocab, static_cast<size_t>(vocab)),
              kMaxRelL2)
        << "chunked, prompt position " << r;
  }

  // Without the image rows (the pad id's own embedding) the logits after the image are far off.
  std::vector<float> plain(want.size());
  ASSERT_TRUE(model::GreedyGenerate(m, ids, 1, [&](int64_t position, int32_t, std::span<const float> logits) {
                if (position < rows)
                  std::memcpy(plain.data() + position * vocab, logits.data(), vocab * sizeof(float));
              }).ok());
  const int64_t last_row = rows - 1;
  EXPECT_GT(
      RelL2(plain.data() + last_row * vocab, want.data() + last_row * vocab, static_cast<size_t>(vocab)),
      0.1);
  fs::remove_all(dir_template);
}

}  // namespace
}  // namespace k3
