// ShardWeights: cuts a bound checkpoint down to one rank's part (layout in shard.h).
#include "src/model/shard.h"

#include <cstring>

#include "src/base/check.h"

namespace k3::model {
namespace {

// The rank's part along `axis` (every slice of ShardWeights is the rank's part of `world`).
TensorShard Part(int axis, const ShardSpec& spec) { return TensorShard{axis, spec.rank, spec.world}; }

// Rows [begin, end) of a row-major [rows, cols] matrix: a view into the same bytes.
Bf16Matrix RowSlice(const Bf16Matrix& m, Range rows, const ShardSpec& spec) {
  K3_CHECK(rows.begin >= 0 && rows.end <= m.rows);
  return Bf16Matrix{m.data + rows.begin * m.cols, rows.size(), m.cols, Part(0, spec)};
}

// Columns [begin, end) of every row, copied into `owned` (row-parallel layers).
Bf16Matrix ColumnSlice(const Bf16Matrix& m, Range cols, const ShardSpec& spec,
                       std::vector<std::vector<uint8_t>>* owned) {
  K3_CHECK(cols.begin >= 0 && cols.end <= m.cols);
  const int64_t width = cols.size();
  if (width == 0 || m.rows == 0) return Bf16Matrix{nullptr, m.rows, width, Part(1, spec)};
  owned->emplace_back(static_cast<size_t>(m.rows * width) * sizeof(bf16));
  auto* dst = reinterpret_cast<bf16*>(owned->back().data());
  for (int64_t r = 0; r < m.rows; ++r)
    std::memcpy(dst + r * width, m.data + r * m.cols + cols.begin, sizeof(bf16) * width);
  return Bf16Matrix{dst, m.rows, width, Part(1, spec)};
}

ExpertMatrix ExpertRowSlice(const ExpertMatrix& m, Range rows, const ShardSpec& spec) {
  ExpertMatrix out = m;
  out.shard = Part(0, spec);
  out.rows = rows.size();
  if (m.packed != nullptr) {
    out.packed = m.packed + rows.begin * (m.cols / 2);
    out.scales = m.scales + rows.begin * (m.cols / 32);
  } else {
    out.bf16_data = m.bf16_data + rows.begin * m.cols;
  }
  return out;
}

// Columns [begin, end) of an expert matrix; MXFP4 columns must start and end on 32-element groups.
ExpertMatrix ExpertColumnSlice(const ExpertMatrix& m, Range cols, const ShardSpec& spec,
                               std::vector<std::vector<uint8_t>>* owned) {
  ExpertMatrix out = m;
  out.shard = Part(1, spec);
  out.cols = cols.size();
  if (m.packed == nullptr) {
    const Bf16Matrix b = ColumnSlice(Bf16Matrix{m.bf16_data, m.rows, m.cols}, cols, spec, owned);
    out.bf16_data = b.data;
    return out;
  }
  K3_CHECK(cols.begin % 32 == 0 && cols.end % 32 == 0);
  const int64_t packed_width = cols.size() / 2, scale_width = cols.size() / 32;
  if (cols.size() == 0 || m.rows == 0) {  // an empty slice of I: this rank holds none of the expert
    out.packed = out.scales = nullptr;
    return out;
  }
  owned->emplace_back(static_cast<size_t>(m.rows * (packed_width + scale_width)));
  uint8_t* packed = owned->back().data();
  uint8_t* scales = packed + m.rows * packed_width;
  for (int64_t r = 0; r < m.rows; ++r) {
    std::memcpy(packed + r * packed_width, m.packed + r * (m.cols / 2) + cols.begin / 2, packed_width);
    std::memcpy(scales + r * scale_width, m.scales + r * (m.cols / 32) + cols.begin / 32, scale_width);
  }
  out.packed = packed;
  out.scales = scales;
  return out;
}

template <typename Tp>
std::vector<Tp> VectorSlice(const std::vector<Tp>& v, Range r) {
  return std::vector<Tp>(v.begin() + r.begin, v.begin() + r.end);
}

Range Scale(Range r, int64_t unit) { return Range{r.begin * unit, r.end * unit}; }

void ShardMlp(Range inner, const ShardSpec& spec, MlpWeights* w, std::vector<std::vector<uint8_t>>* owned) {
  w->gate = RowSlice(w->gate, inner, spec);
  w->up = RowSlice(w->up, inner, spec);
  w->down = ColumnSlice(w->down, inner, spec, owned);
}

}  // namespace

Range SplitRange(int64_t n, int64_t granule, int rank, int world) {
  const int64_t units = n / granule, base = units / world, extra = units % world;
  const int64_t begin = rank * base + std::min<int64_t>(rank, extra);
  const int64_t count = base + (rank < extra ? 1 : 0);
  return Range{begin * granule, (begin + count) * granule};
}

Status CheckShardable(const io::ModelConfig& cfg, const ShardSpec& spec) {
  const int t = spec.world;
  if (t < 1) return InvalidArgument("--tensor-parallel-size is {} but must be at least 1", t);
  if (t == 1) return OkStatus();
  auto refuse = [&](const char* what, int64_t n) {
    return InvalidArgument(
        "--tensor-parallel-size {} does not divide the model's {} ({}): choose a size that divides {}", t,
        what, n, n);
  };
  if (cfg.num_kda_layers() > 0 && cfg.kda_num_heads % t != 0) return refuse("KDA heads", cfg.kda_num_heads);
  if (cfg.num_mla_layers() > 0 && cfg.mla_num_heads % t != 0) return refuse("MLA heads", cfg.mla_num_heads);
  if (cfg.vocab_size % t != 0) return refuse("vocabulary", cfg.vocab_size);
  if (spec.expert_parallel && cfg.num_experts % t != 0) {
    return InvalidArgument(
        "--enable-expert-parallel: --tensor-parallel-size {} does not divide the model's {} routed experts; "
        "choose a size that divides {} or leave expert parallelism off",
        t, cfg.num_experts, cfg.num_experts);
  }
  return OkStatus();
}

io::ModelConfig LocalConfig(const io::ModelConfig& cfg, const ShardSpec& spec) {
  io::ModelConfig local = cfg;
  local.kda_num_heads = cfg.kda_num_heads / spec.world;
  local.mla_num_heads = cfg.mla_num_heads / spec.world;
  return local;
}

void ShardWeights(const io::ModelConfig& cfg, const ShardSpec& spec, ModelWeights* w) {
  if (!spec.sharded()) return;
  const int r = spec.rank, t = spec.world;
  auto* owned = &w->owned;
  w->lm_head = RowSlice(w->lm_head, SplitRange(cfg.vocab_size, 1, r, t), spec);
  const Range kda_heads = SplitRange(cfg.kda_num_heads, 1, r, t);
  const Range mla_heads = SplitRange(cfg.mla_num_heads, 1, r, t);
  const int64_t K = cfg.kda_head_dim, Wt = cfg.short_conv_kernel_size;
  const int64_t Q = cfg.mla_q_head_dim(), Vh = cfg.v_head_dim, nope = cfg.qk_nope_head_dim;
  const int64_t R = cfg.kv_lora_rank;
  for (LayerWeights& layer : w->layers) {
    if (layer.attention == io::AttentionKind::kKda) {
      KdaWeights& a = layer.kda;
      const Range channels = Scale(kda_heads, K);
      a.q_proj = RowSlice(a.q_proj, channels, spec);
      a.k_proj = RowSlice(a.k_proj, channels, spec);
      a.v_proj = RowSlice(a.v_proj, channels, spec);
      a.q_conv = VectorSlice(a.q_conv, Scale(channels, Wt));
      a.k_conv = VectorSlice(a.k_conv, Scale(channels, Wt));
      a.v_conv = VectorSlice(a.v_conv, Scale(channels, Wt));
      a.f_b_proj = RowSlice(a.f_b_proj, channels, spec);
      a.a_exp = VectorSlice(a.a_exp, kda_heads);
      a.dt_bias = VectorSlice(a.dt_bias, channels);
      a.b_proj = RowSlice(a.b_proj, kda_heads, spec);
      if (a.g_proj.data != nullptr) a.g_proj = RowSlice(a.g_proj, channels, spec);
      if (a.g_b_proj.data != nullptr) a.g_b_proj = RowSlice(a.g_b_proj, channels, spec);
      a.o_proj = ColumnSlice(a.o_proj, channels, spec, owned);
    } else {
      MlaWeights& a = layer.mla;
      if (a.q_b_proj.data != nullptr) a.q_b_proj = RowSlice(a.q_b_proj, Scale(mla_heads, Q), spec);
      if (a.q_proj.data != nullptr) a.q_proj = RowSlice(a.q_proj, Scale(mla_heads, Q), spec);
      a.kv_b_proj = RowSlice(a.kv_b_proj, Scale(mla_heads, nope + Vh), spec);
      a.key_up_transposed = VectorSlice(a.key_up_transposed, Scale(mla_heads, R * nope));
      if (a.g_proj.data != nullptr) a.g_proj = RowSlice(a.g_proj, Scale(mla_heads, Vh), spec);
      a.o_proj = ColumnSlice(a.o_proj, Scale(mla_heads, Vh), spec, owned);
    }
    if (layer.ffn == io::FfnKind::kDense) {
      ShardMlp(SplitRange(layer.mlp.gate.rows, 1, r, t), spec, &layer.mlp, owned);
      continue;
    }
    MoeWeights& m = layer.moe;
    if (m.has_shared) ShardMlp(SplitRange(m.shared.gate.rows, 1, r, t), spec, &m.shared, owned);
    const int64_t E = static_cast<int64_t>(m.experts.size());
    if (spec.expert_parallel) {
      const Range mine = SplitRange(E, 1, r, t);
      for (int64_t e = 0; e < E; ++e) {
        if (e < mine.begin || e >= mine.end) m.experts[e] = ExpertWeights{};
      }
      continue;
    }
    const int64_t I = cfg.moe_intermediate_size;
    const Range inner = SplitRange(I, cfg.experts_mxfp4 ? 32 : 1, r, t);
    for (ExpertWeights& e : m.experts) {
      e.gate = ExpertRowSlice(e.gate, inner, spec);
      e.up = ExpertRowSlice(e.up, inner, spec);
      e.down = ExpertColumnSlice(e.down, inner, spec, owned);
    }
  }
}

}  // namespace k3::model
