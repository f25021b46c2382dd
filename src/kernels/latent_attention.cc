// Causal latent attention of one step, cut into tasks over sequences, heads and key chunks
// (latent_attention.h).
#include "src/model/latent_attention.h"

#include <algorithm>

#include "src/kernels/layer_ops.h"
#include "src/model/sequence_state.h"

namespace k3::model {
namespace {

// Chunk results of one (query row, head): [chunks, R] contexts, then [chunks] maxima, then [chunks] sums.
struct ChunkSlot {
  float* base;
  int64_t chunks, R;
  float* ctx(int64_t c) const { return base + c * R; }
  float* max() const { return base + chunks * R; }
  float* sum() const { return base + chunks * R + chunks; }
  static int64_t Floats(int64_t chunks, int64_t R) { return chunks * (R + 2); }
};

// Above this many floats of shared chunk results a step keeps one part per sequence (slower for a long
// cache at a small batch, the same results).
constexpr int64_t kMaxSharedPartialFloats = int64_t{1} << 24;

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace

void CausalLatentAttention(int64_t H, int64_t R, int64_t Rp, int64_t mla_index, const float* query, int64_t T,
                           std::span<const SequenceSegment> segments, float scale, LatentAttentionScratch* s,
                           ThreadPool* pool, float* ctx) {
  const int64_t row_width = R + Rp;
  const int64_t chunk_keys = static_cast<int64_t>(kernels::kLatentKeysPerChunk);
  const int64_t threads = static_cast<int64_t>(pool == nullptr ? 1 : pool->num_threads());
  const int64_t num_segments = static_cast<int64_t>(segments.size());
  int64_t max_chunks = 1, max_pairs = 0;  // over every query; query-key pairs of the longest segment
  for (const SequenceSegment& seg : segments) {
    const int64_t keys = seg.start_pos + seg.rows;
    max_chunks =
        std::max(max_chunks, static_cast<int64_t>(kernels::LatentKeyChunks(static_cast<size_t>(keys))));
    max_pairs = std::max(max_pairs, seg.rows * keys);
  }
  int64_t heads_per_task = static_cast<int64_t>(
      kernels::LatentAttentionHeadsPerTask(static_cast<size_t>(H), static_cast<size_t>(threads)));
  int64_t parts = 1;
  if (num_segments * CeilDiv(H, heads_per_task) < 2 * threads && max_chunks > 1 &&
      T * H * ChunkSlot::Floats(max_chunks, R) <= kMaxSharedPartialFloats) {
    heads_per_task = H;
    parts = std::min(max_chunks, CeilDiv(2 * threads, num_segments));
  }
  const int64_t head_slices = CeilDiv(H, heads_per_task);
  const int64_t slot_floats = ChunkSlot::Floats(max_chunks, R);
  float* shared = parts > 1 ? Grow(s->shared_partials, static_cast<size_t>(T * H * slot_floats)) : nullptr;
  const size_t workers = NumWorkers(pool);
  for (auto* per_worker : {&s->scores, &s->chunk_stats, &s->partials}) {
    if (per_worker->size() < workers) per_worker->resize(workers);
  }
  if (s->rows.size() < workers) s->rows.resize(workers);
  if (s->rows_bf16.size() < workers) s->rows_bf16.resize(workers);
  if (s->head_queries.size() < workers) s->head_queries.resize(workers);
  if (s->head_ctx.size() < workers) s->head_ctx.resize(workers);

  ParallelTasks(
      pool, num_segments * head_slices * parts, max_pairs * 2 * row_width * heads_per_task / parts,
      [&](size_t task, size_t worker) {
        const SequenceSegment& seg = segments[static_cast<int64_t>(task) / (head_slices * parts)];
        const int64_t h0 = static_cast<int64_t>(task) / parts % head_slices * heads_per_task;
        const int64_t h1 = std::min(H, h0 + heads_per_task), G = h1 - h0;
        const int64_t part = static_cast<int64_t>(task) % parts;
        const int64_t keys = seg.start_pos + seg.rows;
        const int64_t seg_chunks = CeilDiv(keys, chunk_keys), per_part = CeilDiv(seg_chunks, parts);
        const int64_t c_begin = part * per_part, c_end = std::min(seg_chunks, c_begin + per_part);
        if (c_begin >= c_end) return;
        const int64_t key_begin = c_begin * chunk_keys, key_end = std::min(keys, c_end * chunk_keys);
        const bool bf16_cache = seg.state->cache_dtype() == CacheDtype::kBf16;
        // The part's cached rows, indexed from key_begin.
        const bf16** rows_bf16 = nullptr;
        const float** rows_f32 = nullptr;
        if (bf16_cache) {
          rows_bf16 = Grow(s->rows_bf16[worker], static_cast<size_t>(key_end - key_begin));
          for (int64_t j = key_begin; j < key_end; ++j)
            rows_bf16[j - key_begin] = seg.state->MlaRowBf16(mla_index, j);
        } else {
          rows_f32 = Grow(s->rows[worker], static_cast<size_t>(key_end - key_begin));
          for (int64_t j = key_begin; j < key_end; ++j)
            rows_f32[j - key_begin] = seg.state->MlaRowF32(mla_index, j);
        }
        float* scores = Grow(s->scores[worker], static_cast<size_t>(std::min(keys, chunk_keys) * G));
        const float** head_queries = Grow(s->head_queries[worker], static_cast<size_t>(G));
        float** head_ctx = Grow(s->head_ctx[worker], static_cast<size_t>(G));
        float* stats = Grow(s->chunk_stats[worker], static_cast<size_t>(2 * G));
        float* own =
            shared == nullptr ? Grow(s->partials[worker], static_cast<size_t>(G * slot_floats)) : nullptr;
        // Attention of the task's heads over keys [from, from + n) (from >= key_begin): into head_ctx, and
        // the softmax statistics into stats (max [G], sum [G]) when wanted.
        auto attend = [&](int64_t from, int64_t n, bool want_stats) {
          float* max = want_stats ? stats : nullptr;
          float* sum = want_stats ? stats + G : nullptr;
          if (bf16_cache) {
            kernels::LatentAttentionBf16Queries(
                head_queries, static_cast<size_t>(G), rows_bf16 + (from - key_begin), static_cast<size_t>(n),
                static_cast<size_t>(row_width), static_cast<size_t>(R), scale, scores, head_ctx, max, sum);
            return;
          }
          kernels::LatentAttentionQueries(head_queries, static_cast<size_t>(G), rows_f32 + (from - key_begin),
                                          static_cast<size_t>(n), static_cast<size_t>(row_width),
                                          static_cast<size_t>(R), scale, scores, head_ctx, max, sum);
        };
        for (int64_t i = 0; i < seg.rows; ++i) {
          const int64_t row = seg.row_begin + i;
          const int64_t visible = seg.start_pos + i + 1;  // keys 0..pos
          const int64_t row_chunks = CeilDiv(visible, chunk_keys);
          for (int64_t h = h0; h < h1; ++h) head_queries[h - h0] = query + (h * T + row) * row_width;
          if (row_chunks == 1) {  // one call, straight into ctx (part 0 holds chunk 0)
            if (c_begin != 0) continue;
            for (int64_t h = h0; h < h1; ++h) head_ctx[h - h0] = ctx + (h * T + row) * R;
            attend(0, visible, false);
            continue;
          }
          auto slot = [&](int64_t h) {
            return ChunkSlot{
                shared != nullptr ? shared + (row * H + h) * slot_floats : own + (h - h0) * slot_floats,
                max_chunks, R};
          };
          for (int64_t c = c_begin; c < std::min(c_end, row_chunks); ++c) {
            for (int64_t h = h0; h < h1; ++h) head_ctx[h - h0] = slot(h).ctx(c);
            attend(c * chunk_keys, std::min(chunk_keys, visible - c * chunk_keys), true);
            for (int64_t g = 0; g < G; ++g) {
              slot(h0 + g).max()[c] = stats[g];
              slot(h0 + g).sum()[c] = stats[G + g];
            }
          }
          if (shared != nullptr) continue;  // joined below, once every part has run
          for (int64_t h = h0; h < h1; ++h) {
            const ChunkSlot sl = slot(h);
            kernels::CombineLatentChunks(sl.ctx(0), sl.max(), sl.sum(), static_cast<size_t>(row_chunks),
                                         static_cast<size_t>(R), ctx + (h * T + row) * R);
          }
        }
      });
  if (shared == nullptr) return;
  // Join the chunk results of every (row, head) whose query saw more than one chunk.
  ParallelTasks(pool, T * H, max_chunks * R, [&](size_t task, size_t) {
    const int64_t row = static_cast<int64_t>(task) / H, h = static_cast<int64_t>(task) % H;
    int64_t visible = 0;
    for (const SequenceSegment& seg : segments) {
      if (row >= seg.row_begin && row < seg.row_begin + seg.rows)
        visible = seg.start_pos + (row - seg.row_begin) + 1;
    }
    const int64_t row_chunks = CeilDiv(visible, chunk_keys);
    if (row_chunks <= 1) return;
    const ChunkSlot sl{shared + (row * H + h) * slot_floats, max_chunks, R};
    kernels::CombineLatentChunks(sl.ctx(0), sl.max(), sl.sum(), static_cast<size_t>(row_chunks),
                                 static_cast<size_t>(R), ctx + (h * T + row) * R);
  });
}

}  // namespace k3::model
