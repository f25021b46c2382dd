// VisionTower (vision_tower.h): binding the vision tensors and the encoder's composition of kernels.
#include "src/model/vision/vision_tower.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>

#include <fmt/format.h>

#include "src/kernels/layer_ops.h"
#include "src/kernels/ops.h"
#include "src/kernels/vision_ops.h"
#include "src/model/tensors.h"

namespace k3::model {
namespace {

float ElementAsFloat(const io::TensorView& v, size_t i) {
  bf16 b;
  std::memcpy(&b, v.data + 2 * i, 2);
  return Bf16ToFloat(b);
}

class VisionBinder {
 public:
  VisionBinder(std::map<std::string, const io::TensorView*> views, VisionWeights* out)
      : views_(std::move(views)), out_(out) {}

  // A [rows, cols] matrix over the first dimension and the product of the others.
  Bf16Matrix Matrix(const std::string& name) {
    const io::TensorView& v = *views_.at(name);
    Bf16Matrix m;
    m.rows = v.shape[0];
    m.cols = 1;
    for (size_t i = 1; i < v.shape.size(); ++i) m.cols *= v.shape[i];
    const uint8_t* data = v.data;
    if (reinterpret_cast<uintptr_t>(data) % alignof(bf16) != 0) {
      out_->owned.emplace_back(v.data, v.data + v.nbytes);
      data = out_->owned.back().data();
    }
    m.data = reinterpret_cast<const bf16*>(data);
    return m;
  }
  std::vector<bf16> Bf16s(const std::string& name) {
    const io::TensorView& v = *views_.at(name);
    std::vector<bf16> out(static_cast<size_t>(v.numel()));
    for (size_t i = 0; i < out.size(); ++i) out[i] = FloatToBf16(ElementAsFloat(v, i));
    return out;
  }
  std::vector<float> Floats(const std::string& name) {
    const io::TensorView& v = *views_.at(name);
    std::vector<float> out(static_cast<size_t>(v.numel()));
    for (size_t i = 0; i < out.size(); ++i) out[i] = ElementAsFloat(v, i);
    return out;
  }

 private:
  std::map<std::string, const io::TensorView*> views_;
  VisionWeights* out_;
};

// Runs fn(first_row, end_row) over `rows` rows in chunks on the pool (inline without one).
template <typename Fn>
void ForRowChunks(ThreadPool* pool, size_t rows, const Fn& fn) {
  const size_t chunks = pool == nullptr ? 1 : std::min(rows, 4 * pool->num_threads());
  if (chunks <= 1) {
    fn(size_t{0}, rows);
    return;
  }
  const size_t per = (rows + chunks - 1) / chunks;
  pool->ParallelFor((rows + per - 1) / per, [&](size_t task, size_t) {
    const size_t first = task * per;
    fn(first, std::min(rows, first + per));
  });
}

// y [M, N] = bf16(x [M, K] W^T).
void LinearRound(const float* x, size_t M, const Bf16Matrix& w, float* y, ThreadPool* pool) {
  kernels::MatMulBf16(x, M, static_cast<size_t>(w.cols), w.data, static_cast<size_t>(w.rows), y, pool);
  ForRowChunks(pool, M, [&](size_t first, size_t end) {
    kernels::RoundToBf16(y + first * w.rows, (end - first) * static_cast<size_t>(w.rows));
  });
}

void RmsNormRowsThreaded(const float* x, size_t rows, size_t n, const bf16* w, float eps, float* y,
                         ThreadPool* pool) {
  ForRowChunks(pool, rows, [&](size_t first, size_t end) {
    kernels::RmsNormRows(x + first * n, end - first, n, n, w, eps, y + first * n);
  });
}

}  // namespace

Result<std::unique_ptr<VisionTower>> VisionTower::FromTensors(const io::ModelConfig& cfg,
                                                              const TensorLookup& lookup,
                                                              std::shared_ptr<const void> storage) {
  if (!cfg.vision.has_value()) {
    return InvalidArgument(
        "the model has no vision tower (config.json has no vision_config): it is text-only");
  }
  const io::VisionConfig& v = *cfg.vision;
  std::map<std::string, const io::TensorView*> views;
  for (const TensorSpec& spec : ListVisionTensors(cfg)) {
    K3_ASSIGN_OR_RETURN(const io::TensorView* view, CheckTensor(spec, lookup));
    views[spec.name] = view;
  }
  VisionWeights w;
  VisionBinder b(std::move(views), &w);
  w.patch_embed = b.Matrix("vision_tower.patch_embed.proj.weight");
  w.pos_grid = b.Floats("vision_tower.patch_embed.pos_emb.weight");
  w.blocks.resize(static_cast<size_t>(v.num_layers));
  for (int64_t i = 0; i < v.num_layers; ++i) {
    VisionBlockWeights& block = w.blocks[i];
    block.norm0 = b.Bf16s(VisionBlockTensorName(i, "norm0.weight"));
    block.wqkv = b.Matrix(VisionBlockTensorName(i, "wqkv.weight"));
    block.wo = b.Matrix(VisionBlockTensorName(i, "wo.weight"));
    block.norm1 = b.Bf16s(VisionBlockTensorName(i, "norm1.weight"));
    block.fc0 = b.Matrix(VisionBlockTensorName(i, "mlp.fc0.weight"));
    block.fc1 = b.Matrix(VisionBlockTensorName(i, "mlp.fc1.weight"));
  }
  w.final_norm = b.Bf16s("vision_tower.encoder.final_layernorm.weight");
  w.proj0 = b.Matrix("mm_projector.proj.0.weight");
  w.proj2 = b.Matrix("mm_projector.proj.2.weight");
  w.post_norm = b.Bf16s("mm_projector.post_norm.weight");
  return std::unique_ptr<VisionTower>(new VisionTower(v, std::move(w), std::move(storage)));
}

int64_t VisionTower::OutputTokens(int grid_h, int grid_w) const {
  return static_cast<int64_t>(grid_h / cfg_.merge_kernel_height) * (grid_w / cfg_.merge_kernel_width);
}

Status VisionTower::Encode(const float* patches, int grid_h, int grid_w, float* out, ThreadPool* pool) const {
  const int64_t kh = cfg_.merge_kernel_height, kw = cfg_.merge_kernel_width;
  if (grid_h < 1 || grid_w < 1 || grid_h > kMaxGridSide || grid_w > kMaxGridSide || grid_h % kh != 0 ||
      grid_w % kw != 0) {
    return InvalidArgument(
        "vision tower: a {} x {} patch grid is not encodable; each side must be a positive multiple of the "
        "merge kernel ({} x {}) and at most {} (the image processor pads images to such grids)",
        grid_h, grid_w, kh, kw, kMaxGridSide);
  }
  const size_t N = static_cast<size_t>(grid_h) * grid_w;
  const size_t P = cfg_.patch_values(), h = cfg_.hidden_size, q = cfg_.qkv_hidden_size;
  const size_t heads = cfg_.num_heads, D = cfg_.head_dim(), mlp = cfg_.intermediate_size;
  const float eps = cfg_.rms_norm_eps;

  // Patch embedding of the bf16-rounded pixels, plus the resized position grid.
  std::vector<float> x(N * P);
  std::memcpy(x.data(), patches, N * P * sizeof(float));
  ForRowChunks(pool, N,
               [&](size_t first, size_t end) { kernels::RoundToBf16(&x[first * P], (end - first) * P); });
  std::vector<float> state(N * h), pos(N * h);
  LinearRound(x.data(), N, weights_.patch_embed, state.data(), pool);
  kernels::ResizeBilinear(weights_.pos_grid.data(), cfg_.pos_emb_height, cfg_.pos_emb_width, h, grid_h,
                          grid_w, pos.data());
  ForRowChunks(pool, N, [&](size_t first, size_t end) {
    kernels::RoundToBf16(&pos[first * h], (end - first) * h);
    kernels::AddRoundBf16(&state[first * h], &pos[first * h], (end - first) * h);
  });

  std::vector<float> cos(N * D / 2), sin(N * D / 2);
  kernels::Rope2DTables(grid_h, grid_w, D, kRopeTheta, cos.data(), sin.data());
  const float scale = 1.0f / std::sqrt(static_cast<float>(D));
  std::vector<float> normed(N * h), qkv(N * 3 * q), ctx(N * q), branch(N * h), wide(N * mlp);
  for (const VisionBlockWeights& block : weights_.blocks) {
    RmsNormRowsThreaded(state.data(), N, h, block.norm0.data(), eps, normed.data(), pool);
    LinearRound(normed.data(), N, block.wqkv, qkv.data(), pool);
    // RoPE on the query and key heads (the first 2 * heads heads of each row).
    ForRowChunks(pool, N, [&](size_t first, size_t end) {
      kernels::ApplyRope2DRoundBf16(&qkv[first * 3 * q], end - first, 3 * q, 2 * heads, D,
                                    &cos[first * D / 2], &sin[first * D / 2]);
    });
    kernels::BidirectionalAttention(qkv.data(), N, heads, D, scale, ctx.data(), pool);
    ForRowChunks(pool, N,
                 [&](size_t first, size_t end) { kernels::RoundToBf16(&ctx[first * q], (end - first) * q); });
    LinearRound(ctx.data(), N, block.wo, branch.data(), pool);
    ForRowChunks(pool, N, [&](size_t first, size_t end) {
      kernels::AddRoundBf16(&state[first * h], &branch[first * h], (end - first) * h);
    });
    RmsNormRowsThreaded(state.data(), N, h, block.norm1.data(), eps, normed.data(), pool);
    LinearRound(normed.data(), N, block.fc0, wide.data(), pool);
    ForRowChunks(pool, N, [&](size_t first, size_t end) {
      kernels::GeluTanhRoundBf16(&wide[first * mlp], (end - first) * mlp);
    });
    LinearRound(wide.data(), N, block.fc1, branch.data(), pool);
    ForRowChunks(pool, N, [&](size_t first, size_t end) {
      kernels::AddRoundBf16(&state[first * h], &branch[first * h], (end - first) * h);
    });
  }
  RmsNormRowsThreaded(state.data(), N, h, weights_.final_norm.data(), eps, normed.data(), pool);

  // sd2_tpool merge (t = 1, so the time average is the frame itself): output token (a, b) concatenates
  // the rows (kh*a + dy, kw*b + dx) for dy < kh, dx < kw in that order.
  const size_t out_rows = static_cast<size_t>(OutputTokens(grid_h, grid_w));
  const size_t merge = static_cast<size_t>(kh * kw);
  std::vector<int64_t> sources;
  sources.reserve(out_rows * merge);
  for (int64_t a = 0; a < grid_h / kh; ++a) {
    for (int64_t b = 0; b < grid_w / kw; ++b) {
      for (int64_t dy = 0; dy < kh; ++dy) {
        for (int64_t dx = 0; dx < kw; ++dx) sources.push_back((kh * a + dy) * grid_w + kw * b + dx);
      }
    }
  }
  std::vector<float> merged(out_rows * merge * h);
  kernels::GatherRows(normed.data(), h, sources.data(), sources.size(), merged.data());

  // patchmergerv2 projector.
  const size_t width = merge * h, text = cfg_.text_hidden_size;
  std::vector<float> hidden(out_rows * width);
  LinearRound(merged.data(), out_rows, weights_.proj0, hidden.data(), pool);
  ForRowChunks(pool, out_rows, [&](size_t first, size_t end) {
    kernels::GeluErfRoundBf16(&hidden[first * width], (end - first) * width);
  });
  LinearRound(hidden.data(), out_rows, weights_.proj2, out, pool);
  ForRowChunks(pool, out_rows, [&](size_t first, size_t end) {
    kernels::RmsNormRows(out + first * text, end - first, text, text, weights_.post_norm.data(),
                         cfg_.projector_ln_eps, out + first * text);
  });
  return OkStatus();
}

Result<std::unique_ptr<VisionTower>> LoadVisionTower(std::shared_ptr<const io::Checkpoint> checkpoint,
                                                     const io::ModelConfig& cfg) {
  const io::Checkpoint* raw = checkpoint.get();
  const std::string dir = raw->dir();  // FromTensors owns the checkpoint (and drops it on failure)
  auto lookup = [raw](const std::string& name) { return raw->Find(name); };
  auto tower = VisionTower::FromTensors(cfg, lookup, std::move(checkpoint));
  if (!tower.ok()) return tower.status().WithPrefix(dir);
  return tower;
}

Result<std::unique_ptr<VisionTower>> LoadVisionTower(const std::string& dir) {
  K3_ASSIGN_OR_RETURN(io::ModelConfig cfg, io::LoadModelConfig(dir));
  K3_ASSIGN_OR_RETURN(std::unique_ptr<io::Checkpoint> opened, io::Checkpoint::Open(dir));
  return LoadVisionTower(std::shared_ptr<const io::Checkpoint>(std::move(opened)), cfg);
}

}  // namespace k3::model
