// The vision tower at Kimi K3's real widths (mini-k3's tower: 27 blocks of 1024, 12 heads of 128, MLP
// 4096, projector to 2048) encoding a 448 x 448 and a 1024 x 1024 image (after the processor's padding:
// 32 x 32 and 74 x 74 patches). Weights are drawn in memory as gen-model draws them (no checkpoint on
// disk). Prints seconds per image, GFLOP/s (the GEMMs and the attention's two products) and that rate
// as a fraction of MatMulBf16's rate measured in the same run (bench/machine_limits.h). With --repeat R
// the limit and the images are measured R times in turn (limit, each image, limit, ...) and the medians
// are printed after the runs.
//   vision_bench [threads] [--repeat R] [grid ...]   e.g. vision_bench 2 --repeat 5 32x32 74x74
//                                                     (the default grids: 32x32 74x74; R 1)
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "bench/machine_limits.h"
#include "src/base/bf16.h"
#include "src/base/thread_pool.h"
#include "src/model/presets.h"
#include "src/model/tensors.h"
#include "src/model/vision/vision_tower.h"
#include "src/model/weight_init.h"

namespace k3::bench {
namespace {

// FLOPs of one image: every GEMM (2 M N K) and the attention's scores and context (2 x 2 N^2 q).
double EncodeFlops(const io::VisionConfig& v, double gh, double gw) {
  const double n = gh * gw, h = v.hidden_size, q = v.qkv_hidden_size, mlp = v.intermediate_size;
  const double block = 2 * n * (h * 3 * q + q * h + 2 * h * mlp) + 4 * n * n * q;
  const double merged = n / 4, width = 4 * h;
  return 2 * n * v.patch_values() * h + v.num_layers * block +
         2 * merged * (width * width + width * v.text_hidden_size);
}

int Main(int argc, char** argv) {
  size_t threads = 2;
  if (argc > 1) threads = std::strtoul(argv[1], nullptr, 10);
  int repeat = 1;
  std::vector<std::pair<int, int>> grids;
  for (int i = 2; i < argc; ++i) {
    int gh = 0, gw = 0;
    if (std::strcmp(argv[i], "--repeat") == 0 && i + 1 < argc) {
      repeat = std::max(1, std::atoi(argv[++i]));
    } else if (std::sscanf(argv[i], "%dx%d", &gh, &gw) == 2) {
      grids.emplace_back(gh, gw);
    } else {
      std::fprintf(stderr,
                   "vision_bench: unknown argument '%s' (usage: vision_bench [threads] [--repeat R] "
                   "[ROWSxCOLS ...])\n",
                   argv[i]);
      return 2;
    }
  }
  if (grids.empty()) grids = {{32, 32}, {74, 74}};

  const io::ModelConfig cfg = model::FindGeneratorPreset("mini-k3").value().config;
  const std::vector<model::TensorSpec> specs = model::ListVisionTensors(cfg);
  std::map<std::string, std::vector<uint16_t>> bytes;
  std::map<std::string, io::TensorView> views;
  ThreadPool pool(threads);
  for (const model::TensorSpec& spec : specs) {
    const int64_t rows = model::LogicalRowCount(spec), length = model::LogicalRowLength(spec);
    std::vector<uint16_t>& data = bytes[spec.name];
    data.resize(static_cast<size_t>(rows * length));
    const uint64_t seed = model::TensorSeed(0, spec.name);
    pool.ParallelFor(static_cast<size_t>(rows), [&](size_t r, size_t) {
      std::vector<float> row(static_cast<size_t>(length));
      model::InitRow(cfg, spec, seed, static_cast<int64_t>(r), row.data());
      for (int64_t i = 0; i < length; ++i) data[r * length + i] = FloatToBf16(row[i]).bits;
    });
    views[spec.name] = io::TensorView{spec.name, io::DType::kBF16, spec.shape,
                                      reinterpret_cast<const uint8_t*>(data.data()), data.size() * 2};
  }
  auto tower = model::VisionTower::FromTensors(
      cfg,
      [&](const std::string& name) -> const io::TensorView* {
        auto it = views.find(name);
        return it == views.end() ? nullptr : &it->second;
      },
      nullptr);
  if (!tower.ok()) {
    std::fprintf(stderr, "vision_bench: %s\n", tower.status().ToString().c_str());
    return 1;
  }
  const io::VisionConfig& v = (*tower)->config();
  std::printf("load average before: %s\n", LoadAverage().c_str());
  std::vector<double> limits;
  std::vector<std::vector<double>> seconds_of(grids.size()), ratios_of(grids.size());
  for (int run = 0; run < repeat; ++run) {
    const double limit = MeasureMatMulFlops(threads, 5, Clock::kWall);
    limits.push_back(limit);
    std::printf("run %d: MatMulBf16 (M 512, K = N = 2048), %zu threads: %.1f GFLOP/s\n", run, threads, limit);
    for (size_t g = 0; g < grids.size(); ++g) {
      const auto [gh, gw] = grids[g];
      const size_t n = static_cast<size_t>(gh) * gw;
      std::vector<float> patches(n * v.patch_values());
      for (size_t i = 0; i < patches.size(); ++i) patches[i] = std::sin(0.001f * static_cast<float>(i + run));
      std::vector<float> out(static_cast<size_t>((*tower)->OutputTokens(gh, gw) * v.text_hidden_size));
      const double start = Now(Clock::kWall);
      const Status st = (*tower)->Encode(patches.data(), gh, gw, out.data(), &pool);
      const double seconds = Now(Clock::kWall) - start;
      if (!st.ok()) {
        std::fprintf(stderr, "vision_bench: %s\n", st.ToString().c_str());
        return 1;
      }
      const double gflops = EncodeFlops(v, gh, gw) / seconds / 1e9;
      seconds_of[g].push_back(seconds);
      ratios_of[g].push_back(gflops / limit);
      std::printf(
          "run %d: %d x %d patches (%d x %d px, %lld tokens): %.2f s, %.1f GFLOP/s = %.0f %% of "
          "MatMulBf16\n",
          run, gh, gw, gh * 14, gw * 14, static_cast<long long>((*tower)->OutputTokens(gh, gw)), seconds,
          gflops, 100 * gflops / limit);
      std::fflush(stdout);
    }
  }
  if (repeat > 1) {
    std::printf("medians of %d runs: MatMulBf16 %.1f GFLOP/s\n", repeat, Median(limits));
    for (size_t g = 0; g < grids.size(); ++g) {
      const double seconds = Median(seconds_of[g]);
      std::printf(
          "  %d x %d patches: %.2f s, %.1f GFLOP/s, %.0f %% of MatMulBf16 (median of the per-run "
          "ratios)\n",
          grids[g].first, grids[g].second, seconds,
          EncodeFlops(v, grids[g].first, grids[g].second) / seconds / 1e9, 100 * Median(ratios_of[g]));
    }
  }
  std::printf("load average after: %s\n", LoadAverage().c_str());
  return 0;
}

}  // namespace
}  // namespace k3::bench

int main(int argc, char** argv) { return k3::bench::Main(argc, argv); }
