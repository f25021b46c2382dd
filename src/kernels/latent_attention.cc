// Causal latent attention of one step, cut into tasks over sequences, heads and key chunks
// (latent_attention.h).
#include "src/kernels/latent_attention.h"

#include <algorithm>

#include "src/kernels/layer_ops.h"
#include "src/kernels/parallel.h"

namespace k3::kernels {
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

// Each worker's share of an arena array of `per_worker` values.
template <typename Tp>
struct PerWorker {
  Tp* base = nullptr;
  int64_t per_worker = 0;
  Tp* operator[](size_t worker) const { return base + static_cast<int64_t>(worker) * per_worker; }
};
template <typename Tp>
PerWorker<Tp> TakePerWorker(StepEnv& env, int64_t per_worker) {
  per_worker = (per_worker + 15) / 16 * 16;  // each share 64-byte aligned for floats
  return {env.arena.Take<Tp>(static_cast<size_t>(per_worker) * env.workers()), per_worker};
}

}  // namespace

void CausalLatentAttention(StepEnv& env, const LatentQueries& queries,
                           std::span<const LatentSequence> sequences, float* ctx) {
  const int64_t H = queries.H, T = queries.T, R = queries.R;
  const int64_t row_width = R + queries.Rp;
  const float* query = queries.query;
  const float scale = queries.scale;
  const int64_t chunk_keys = static_cast<int64_t>(kLatentKeysPerChunk);
  const int64_t threads = static_cast<int64_t>(env.workers());
  const int64_t num_sequences = static_cast<int64_t>(sequences.size());
  int64_t max_chunks = 1, max_pairs = 0, max_keys = 0;  // over every query; pairs of the longest sequence
  bool any_bf16 = false, any_f32 = false;
  for (const LatentSequence& seq : sequences) {
    const int64_t keys = seq.start_pos + seq.rows;
    max_chunks = std::max(max_chunks, static_cast<int64_t>(LatentKeyChunks(static_cast<size_t>(keys))));
    max_pairs = std::max(max_pairs, seq.rows * keys);
    max_keys = std::max(max_keys, keys);
    (seq.cache.bf16_rows ? any_bf16 : any_f32) = true;
  }
  int64_t heads_per_task =
      static_cast<int64_t>(LatentAttentionHeadsPerTask(static_cast<size_t>(H), static_cast<size_t>(threads)));
  int64_t parts = 1;
  if (num_sequences * CeilDiv(H, heads_per_task) < 2 * threads && max_chunks > 1 &&
      T * H * ChunkSlot::Floats(max_chunks, R) <= kMaxSharedPartialFloats) {
    heads_per_task = H;
    parts = std::min(max_chunks, CeilDiv(2 * threads, num_sequences));
  }
  const int64_t head_slices = CeilDiv(H, heads_per_task);
  const int64_t slot_floats = ChunkSlot::Floats(max_chunks, R);
  ScratchArena::Frame frame(env.arena);
  float* shared = parts > 1 ? env.arena.Take<float>(static_cast<size_t>(T * H * slot_floats)) : nullptr;
  // Each worker's buffers, sized for its largest task.
  const int64_t G_max = std::min(H, heads_per_task);
  const auto scores_of = TakePerWorker<float>(env, std::min(max_keys, chunk_keys) * G_max);
  const auto rows_of = TakePerWorker<const float*>(env, any_f32 ? max_keys : 0);
  const auto rows_bf16_of = TakePerWorker<const bf16*>(env, any_bf16 ? max_keys : 0);
  const auto head_queries_of = TakePerWorker<const float*>(env, G_max);
  const auto head_ctx_of = TakePerWorker<float*>(env, G_max);
  const auto stats_of = TakePerWorker<float>(env, 2 * G_max);
  const auto partials_of = TakePerWorker<float>(env, shared == nullptr ? G_max * slot_floats : 0);

  ParallelTasks(
      env.pool, num_sequences * head_slices * parts, max_pairs * 2 * row_width * heads_per_task / parts,
      [&](size_t task, size_t worker) {
        const LatentSequence& seq = sequences[static_cast<int64_t>(task) / (head_slices * parts)];
        const int64_t h0 = static_cast<int64_t>(task) / parts % head_slices * heads_per_task;
        const int64_t h1 = std::min(H, h0 + heads_per_task), G = h1 - h0;
        const int64_t part = static_cast<int64_t>(task) % parts;
        const int64_t keys = seq.start_pos + seq.rows;
        const int64_t seq_chunks = CeilDiv(keys, chunk_keys), per_part = CeilDiv(seq_chunks, parts);
        const int64_t c_begin = part * per_part, c_end = std::min(seq_chunks, c_begin + per_part);
        if (c_begin >= c_end) return;
        const int64_t key_begin = c_begin * chunk_keys, key_end = std::min(keys, c_end * chunk_keys);
        const bool bf16_cache = seq.cache.bf16_rows;
        // The part's cached rows, indexed from key_begin.
        const bf16** rows_bf16 = nullptr;
        const float** rows_f32 = nullptr;
        if (bf16_cache) {
          rows_bf16 = rows_bf16_of[worker];
          for (int64_t j = key_begin; j < key_end; ++j) rows_bf16[j - key_begin] = seq.cache.RowBf16(j);
        } else {
          rows_f32 = rows_of[worker];
          for (int64_t j = key_begin; j < key_end; ++j) rows_f32[j - key_begin] = seq.cache.RowF32(j);
        }
        float* scores = scores_of[worker];
        const float** head_queries = head_queries_of[worker];
        float** head_ctx = head_ctx_of[worker];
        float* stats = stats_of[worker];
        float* own = shared == nullptr ? partials_of[worker] : nullptr;
        // Attention of the task's heads over keys [from, from + n) (from >= key_begin): into head_ctx, and
        // the softmax statistics into stats (max [G], sum [G]) when wanted.
        auto attend = [&](int64_t from, int64_t n, bool want_stats) {
          float* max = want_stats ? stats : nullptr;
          float* sum = want_stats ? stats + G : nullptr;
          if (bf16_cache) {
            LatentAttentionBf16Queries(head_queries, static_cast<size_t>(G), rows_bf16 + (from - key_begin),
                                       static_cast<size_t>(n), static_cast<size_t>(row_width),
                                       static_cast<size_t>(R), scale, scores, head_ctx, max, sum);
            return;
          }
          LatentAttentionQueries(head_queries, static_cast<size_t>(G), rows_f32 + (from - key_begin),
                                 static_cast<size_t>(n), static_cast<size_t>(row_width),
                                 static_cast<size_t>(R), scale, scores, head_ctx, max, sum);
        };
        for (int64_t i = 0; i < seq.rows; ++i) {
          const int64_t row = seq.row_begin + i;
          const int64_t visible = seq.start_pos + i + 1;  // keys 0..pos
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
            CombineLatentChunks(sl.ctx(0), sl.max(), sl.sum(), static_cast<size_t>(row_chunks),
                                static_cast<size_t>(R), ctx + (h * T + row) * R);
          }
        }
      });
  if (shared == nullptr) return;
  // Join the chunk results of every (row, head) whose query saw more than one chunk.
  ParallelTasks(env.pool, T * H, max_chunks * R, [&](size_t task, size_t) {
    const int64_t row = static_cast<int64_t>(task) / H, h = static_cast<int64_t>(task) % H;
    int64_t visible = 0;
    for (const LatentSequence& seq : sequences) {
      if (row >= seq.row_begin && row < seq.row_begin + seq.rows)
        visible = seq.start_pos + (row - seq.row_begin) + 1;
    }
    const int64_t row_chunks = CeilDiv(visible, chunk_keys);
    if (row_chunks <= 1) return;
    const ChunkSlot sl{shared + (row * H + h) * slot_floats, max_chunks, R};
    CombineLatentChunks(sl.ctx(0), sl.max(), sl.sum(), static_cast<size_t>(row_chunks),
                        static_cast<size_t>(R), ctx + (h * T + row) * R);
  });
}

}  // namespace k3::kernels
