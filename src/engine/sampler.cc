// Sampler: filters, penalties and the draw.
#include "src/engine/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace k3::engine {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// Ids with finite logits sorted by logit descending, ties by lower id.
std::vector<int32_t> SortedFiniteIds(std::span<const float> logits) {
  std::vector<int32_t> ids;
  for (size_t i = 0; i < logits.size(); ++i)
    if (logits[i] != kNegInf) ids.push_back(static_cast<int32_t>(i));
  std::sort(ids.begin(), ids.end(),
            [&](int32_t a, int32_t b) { return logits[a] != logits[b] ? logits[a] > logits[b] : a < b; });
  return ids;
}

float MaxLogit(std::span<const float> logits) {
  float m = kNegInf;
  for (float v : logits) m = std::max(m, v);
  return m;
}

}  // namespace

void ApplyTopK(std::span<float> logits, int64_t k) {
  if (k <= 0 || k >= static_cast<int64_t>(logits.size())) return;
  std::vector<int32_t> ids;
  for (size_t i = 0; i < logits.size(); ++i)
    if (logits[i] != kNegInf) ids.push_back(static_cast<int32_t>(i));
  if (static_cast<int64_t>(ids.size()) <= k) return;
  // O(N) selection: ids[0, k) become the k first in (logit descending, id ascending) order.
  std::nth_element(ids.begin(), ids.begin() + (k - 1), ids.end(), [&](int32_t a, int32_t b) {
    return logits[a] != logits[b] ? logits[a] > logits[b] : a < b;
  });
  for (size_t i = static_cast<size_t>(k); i < ids.size(); ++i) logits[ids[i]] = kNegInf;
}

void ApplyTopP(std::span<float> logits, float p) {
  if (p >= 1.0f) return;
  const std::vector<int32_t> ids = SortedFiniteIds(logits);
  if (ids.empty()) return;
  const float m = logits[ids[0]];
  double total = 0;
  for (int32_t id : ids) total += std::exp(static_cast<double>(logits[id] - m));
  double cum = 0;
  size_t keep = ids.size();
  for (size_t i = 0; i < ids.size(); ++i) {
    cum += std::exp(static_cast<double>(logits[ids[i]] - m)) / total;
    if (cum >= static_cast<double>(p)) {
      keep = i + 1;
      break;
    }
  }
  for (size_t i = keep; i < ids.size(); ++i) logits[ids[i]] = kNegInf;
}

void ApplyMinP(std::span<float> logits, float min_p) {
  if (min_p <= 0.0f) return;
  const float m = MaxLogit(logits);
  if (m == kNegInf) return;
  // p_i / p_max = exp(l_i - m) >= min_p  <=>  l_i >= m + log(min_p)
  const float threshold = m + std::log(min_p);
  for (float& v : logits)
    if (v < threshold) v = kNegInf;
}

void LogSoftmax(std::span<float> row) {
  const float m = MaxLogit(row);
  if (m == kNegInf) return;
  double total = 0;
  for (float v : row) total += std::exp(static_cast<double>(v - m));
  const float log_total = static_cast<float>(std::log(total));
  for (float& v : row) v = v - m - log_total;
}

int32_t ArgMax(std::span<const float> logits) {
  int32_t best = -1;
  for (size_t i = 0; i < logits.size(); ++i) {
    if (logits[i] == kNegInf) continue;
    if (best < 0 || logits[i] > logits[best]) best = static_cast<int32_t>(i);
  }
  return best;
}

int32_t DrawFromLogits(std::span<const float> logits, double u) {
  const float m = MaxLogit(logits);
  if (m == kNegInf) return -1;
  double total = 0;
  for (float v : logits) total += v == kNegInf ? 0.0 : std::exp(static_cast<double>(v - m));
  const double target = u * total;
  double cum = 0;
  int32_t last = -1;
  for (size_t i = 0; i < logits.size(); ++i) {
    if (logits[i] == kNegInf) continue;
    cum += std::exp(static_cast<double>(logits[i] - m));
    last = static_cast<int32_t>(i);
    if (cum > target) return last;
  }
  return last;
}

TokenLogprob MakeTokenLogprob(std::span<const float> logprobs, int32_t token, int32_t k) {
  TokenLogprob out;
  out.token = token;
  out.logprob = logprobs[token];
  out.rank = 1 + static_cast<int32_t>(std::count_if(logprobs.begin(), logprobs.end(),
                                                    [&](float lp) { return lp > out.logprob; }));
  if (k > 0) {
    std::vector<int32_t> ids(logprobs.size());
    std::iota(ids.begin(), ids.end(), 0);
    const size_t top = std::min(ids.size(), static_cast<size_t>(k));
    std::partial_sort(ids.begin(), ids.begin() + top, ids.end(), [&](int32_t a, int32_t b) {
      return logprobs[a] != logprobs[b] ? logprobs[a] > logprobs[b] : a < b;
    });
    for (size_t i = 0; i < top; ++i) out.top.push_back({ids[i], logprobs[ids[i]]});
  }
  return out;
}

Sampler::Sampler(const SamplingParams& params, uint64_t seed, std::span<const int32_t> prompt)
    : params_(params), rng_(seed), prompt_ids_(prompt.begin(), prompt.end()) {
  std::sort(prompt_ids_.begin(), prompt_ids_.end());
  prompt_ids_.erase(std::unique(prompt_ids_.begin(), prompt_ids_.end()), prompt_ids_.end());
}

void Sampler::Accept(int32_t token) { ++output_counts_[token]; }

int32_t Sampler::Sample(std::span<const float> logits, const uint64_t* allowed,
                        std::span<const int32_t> banned, TokenLogprob* logprob) {
  const int64_t N = static_cast<int64_t>(logits.size());
  // One draw per sampled token, taken first so the stream never depends on the filters' outcome.
  const double u = static_cast<double>(rng_() >> 11) * 0x1.0p-53;
  work_.assign(logits.begin(), logits.end());
  std::span<float> w(work_);
  for (const auto& [id, bias] : params_.logit_bias)
    if (id >= 0 && id < N) w[id] += bias;
  if (allowed != nullptr) {
    for (int64_t i = 0; i < N; ++i)
      if (((allowed[i / 64] >> (i % 64)) & 1) == 0) w[i] = kNegInf;
  }
  for (int32_t id : banned)
    if (id >= 0 && id < N) w[id] = kNegInf;
  if (params_.repetition_penalty != 1.0f) {
    const float r = params_.repetition_penalty;
    auto penalise = [&](int32_t id) { w[id] = w[id] > 0 ? w[id] / r : w[id] * r; };
    for (int32_t id : prompt_ids_) penalise(id);
    for (const auto& [id, count] : output_counts_)
      if (!std::binary_search(prompt_ids_.begin(), prompt_ids_.end(), id)) penalise(id);
  }
  for (const auto& [id, count] : output_counts_) {
    w[id] -= params_.frequency_penalty * static_cast<float>(count) + params_.presence_penalty;
  }
  int32_t token;
  if (params_.temperature <= 0.0f) {
    token = ArgMax(w);
  } else {
    for (float& v : w) v /= params_.temperature;
    ApplyTopK(w, params_.top_k);
    ApplyTopP(w, params_.top_p);
    ApplyMinP(w, params_.min_p);
    token = DrawFromLogits(w, u);
  }
  if (token >= 0 && params_.logprobs >= 0 && logprob != nullptr) {
    work_.assign(logits.begin(), logits.end());
    LogSoftmax(work_);
    *logprob = MakeTokenLogprob(work_, token, params_.logprobs);
  }
  return token;
}

}  // namespace k3::engine
