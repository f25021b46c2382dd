// CausalLatentAttention over caches longer than one key chunk (kernels::kLatentKeysPerChunk): the chunked
// softmax against one softmax over all keys in double precision, and the same bits whatever the thread
// count, the batch around a sequence, or prefill against decode (the tasks split a sequence's chunks over
// threads only in some of these cases; the results may not depend on it). Both cache dtypes.
#include "src/kernels/latent_attention.h"

#include <cmath>
#include <cstring>
#include <memory>
#include <vector>

#include <gtest/gtest.h>

#include "src/kernels/layer_ops.h"
#include "src/kernels/step_env.h"
#include "src/model/layer_util.h"
#include "src/model/sequence_state.h"
#include "src/model/testing/random_model.h"

namespace k3::model {
namespace {

constexpr int64_t kKeys = 2600;  // three chunks, the last one partial
constexpr int64_t kHeads = 6;    // a pass of 4 queries and one of 2

float Random(uint32_t* s) {
  *s = *s * 1664525u + 1013904223u;
  return static_cast<float>(static_cast<int32_t>(*s >> 8) % 2001 - 1000) / 1000.0f;
}

class LatentAttentionTest : public ::testing::TestWithParam<CacheDtype> {
 protected:
  void SetUp() override {
    cfg_ = testing::TinyK3Config();
    cfg_.kv_lora_rank = 64;  // rows of 72 values: whole vectors and a partial one
    R_ = cfg_.kv_lora_rank;
    Rp_ = cfg_.qk_rope_head_dim;
    for (int k = 0; k < 2; ++k) {
      states_[k] = std::make_unique<ModelSequenceState>(cfg_, GetParam());
      states_[k]->ReserveMlaTokens(kKeys);
      uint32_t seed = 7 + 11 * k;
      for (int64_t j = 0; j < kKeys; ++j) {
        for (int64_t i = 0; i < R_ + Rp_; ++i) {
          const float v = RoundBf16(Random(&seed));
          if (GetParam() == CacheDtype::kBf16) {
            states_[k]->MlaRowBf16(0, j)[i] = FloatToBf16(v);
          } else {
            states_[k]->MlaRowF32(0, j)[i] = v;
          }
        }
      }
    }
  }

  float Row(int k, int64_t j, int64_t i) const {
    auto& state = *states_[k];
    return GetParam() == CacheDtype::kBf16 ? Bf16ToFloat(state.MlaRowBf16(0, j)[i])
                                           : state.MlaRowF32(0, j)[i];
  }

  // Queries [H, T, R + Rp] for T rows, row t's seeded by seeds[t] (so a row has the same query in every
  // layout).
  std::vector<float> Queries(const std::vector<uint32_t>& seeds) const {
    const int64_t T = static_cast<int64_t>(seeds.size()), width = R_ + Rp_;
    std::vector<float> q(static_cast<size_t>(kHeads * T * width));
    for (int64_t t = 0; t < T; ++t) {
      for (int64_t h = 0; h < kHeads; ++h) {
        uint32_t seed = seeds[t] * 131u + static_cast<uint32_t>(h);
        for (int64_t i = 0; i < width; ++i) q[(h * T + t) * width + i] = Random(&seed);
      }
    }
    return q;
  }

  std::vector<float> Run(const std::vector<float>& query, int64_t T, const std::vector<SequenceSegment>& segs,
                         ThreadPool* pool) {
    std::vector<float> ctx(static_cast<size_t>(kHeads * T * R_), -1.0f);
    std::vector<kernels::LatentSequence> sequences;
    for (const SequenceSegment& seg : segs)
      sequences.push_back({seg.row_begin, seg.rows, seg.start_pos, seg.state->MlaRows(0)});
    kernels::StepEnv env{.pool = pool};
    kernels::CausalLatentAttention(env, {query.data(), kHeads, T, R_, Rp_, kScale}, sequences, ctx.data());
    return ctx;
  }

  static constexpr float kScale = 0.4f;
  io::ModelConfig cfg_;
  int64_t R_ = 0, Rp_ = 0;
  std::unique_ptr<ModelSequenceState> states_[2];
};

bool SameBits(const float* a, const float* b, int64_t n) {
  return std::memcmp(a, b, static_cast<size_t>(n) * sizeof(float)) == 0;
}

TEST_P(LatentAttentionTest, ChunksJoinToOneSoftmaxOverAllKeys) {
  ThreadPool pool(2);
  for (const int64_t pos : {int64_t{700}, int64_t{1023}, int64_t{1024}, int64_t{2047}, kKeys - 1}) {
    const std::vector<float> query = Queries({static_cast<uint32_t>(pos)});
    const SequenceSegment seg{states_[0].get(), 0, 1, pos};
    const std::vector<float> got = Run(query, 1, {seg}, &pool);
    for (int64_t h = 0; h < kHeads; ++h) {
      const float* q = query.data() + h * (R_ + Rp_);
      std::vector<double> p(static_cast<size_t>(pos + 1));
      double largest = -1e300, total = 0;
      for (int64_t j = 0; j <= pos; ++j) {
        double s = 0;
        for (int64_t i = 0; i < R_ + Rp_; ++i) s += static_cast<double>(q[i]) * Row(0, j, i);
        p[j] = s * kScale;
        largest = std::max(largest, p[j]);
      }
      for (double& v : p) total += (v = std::exp(v - largest));
      double norm = 0, err = 0;
      for (int64_t c = 0; c < R_; ++c) {
        double want = 0;
        for (int64_t j = 0; j <= pos; ++j) want += p[j] / total * Row(0, j, c);
        norm = std::max(norm, std::abs(want));
        err = std::max(err, std::abs(want - got[h * R_ + c]));
      }
      EXPECT_LE(err, 2e-5 * norm) << "position " << pos << " head " << h;
    }
    if (pos < 1024) {  // one chunk: the one-call kernel's bits
      std::vector<float> scores(static_cast<size_t>(pos + 1)), want(static_cast<size_t>(R_));
      for (int64_t h = 0; h < kHeads; ++h) {
        if (GetParam() == CacheDtype::kBf16) {
          std::vector<const bf16*> rows;
          for (int64_t j = 0; j <= pos; ++j) rows.push_back(states_[0]->MlaRowBf16(0, j));
          kernels::LatentAttentionBf16(query.data() + h * (R_ + Rp_), rows.data(), pos + 1, R_ + Rp_, R_,
                                       kScale, scores.data(), want.data());
        } else {
          std::vector<const float*> rows;
          for (int64_t j = 0; j <= pos; ++j) rows.push_back(states_[0]->MlaRowF32(0, j));
          kernels::LatentAttention(query.data() + h * (R_ + Rp_), rows.data(), pos + 1, R_ + Rp_, R_, kScale,
                                   scores.data(), want.data());
        }
        EXPECT_TRUE(SameBits(want.data(), got.data() + h * R_, R_)) << "position " << pos << " head " << h;
      }
    }
  }
}

TEST_P(LatentAttentionTest, SameBitsForAnyThreadsBatchOrPrefill) {
  // Reference: the last 5 positions of sequence 0 as one prefill piece, without a pool.
  constexpr int64_t kRows = 5;
  std::vector<uint32_t> seeds;
  for (int64_t t = 0; t < kRows; ++t) seeds.push_back(static_cast<uint32_t>(kKeys - kRows + t));
  const std::vector<float> query = Queries(seeds);
  const SequenceSegment piece{states_[0].get(), 0, kRows, kKeys - kRows};
  const std::vector<float> want = Run(query, kRows, {piece}, nullptr);
  // Each position alone (decode), on pools of 1 to 7 threads: one sequence's chunks split over the tasks.
  for (const size_t threads : {size_t{1}, size_t{2}, size_t{3}, size_t{7}}) {
    ThreadPool pool(threads);
    for (int64_t t = 0; t < kRows; ++t) {
      const std::vector<float> one = Queries({seeds[t]});
      const SequenceSegment seg{states_[0].get(), 0, 1, kKeys - kRows + t};
      const std::vector<float> got = Run(one, 1, {seg}, &pool);
      for (int64_t h = 0; h < kHeads; ++h) {
        EXPECT_TRUE(SameBits(got.data() + h * R_, want.data() + (h * kRows + t) * R_, R_))
            << threads << " threads, row " << t << ", head " << h;
      }
    }
  }
  // In a batch of 8 decode rows (4 of each sequence, at other positions too), without a pool: enough tasks
  // that every sequence's chunks stay in one task.
  std::vector<SequenceSegment> batch;
  std::vector<uint32_t> batch_seeds;
  for (int64_t b = 0; b < 8; ++b) {
    const int64_t t = b % kRows;
    batch.push_back({states_[b % 2].get(), b, 1, kKeys - kRows + t});
    batch_seeds.push_back(seeds[t]);
  }
  const std::vector<float> got = Run(Queries(batch_seeds), 8, batch, nullptr);
  for (int64_t b = 0; b < 8; b += 2) {  // sequence 0's rows
    for (int64_t h = 0; h < kHeads; ++h) {
      EXPECT_TRUE(SameBits(got.data() + (h * 8 + b) * R_, want.data() + (h * kRows + b % kRows) * R_, R_))
          << "batch row " << b << ", head " << h;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(CacheDtypes, LatentAttentionTest,
                         ::testing::Values(CacheDtype::kBf16, CacheDtype::kF32),
                         [](const ::testing::TestParamInfo<CacheDtype>& info) {
                           return std::string(CacheDtypeName(info.param));
                         });

}  // namespace
}  // namespace k3::model
