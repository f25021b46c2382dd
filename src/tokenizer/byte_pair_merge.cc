// Byte-pair merging: a linear-scan version for short pieces and a heap + linked-list version for long ones.
#include "src/tokenizer/byte_pair_merge.h"

#include <cstdint>
#include <queue>

namespace k3::tokenizer {
namespace {

constexpr size_t kLinearMaxBytes = 48;

Rank FindBelow(const RankTable& ranks, std::string_view bytes, Rank max_rank) {
  const Rank rank = ranks.Find(bytes);
  return rank < max_rank ? rank : kNoRank;
}

}  // namespace

void BytePairMergeLinear(std::string_view piece, const RankTable& ranks, std::vector<Rank>& out,
                         Rank max_rank) {
  if (piece.size() == 1) {
    out.push_back(FindBelow(ranks, piece, max_rank));
    return;
  }
  // parts[i] = (start byte of part i, rank of merging part i with part i+1).
  struct Part {
    size_t start;
    Rank rank;
  };
  std::vector<Part> parts;
  parts.reserve(piece.size() + 1);
  for (size_t i = 0; i + 1 < piece.size(); ++i)
    parts.push_back({i, FindBelow(ranks, piece.substr(i, 2), max_rank)});
  parts.push_back({piece.size() - 1, kNoRank});
  parts.push_back({piece.size(), kNoRank});
  const auto pair_rank = [&](size_t i) {
    if (i + 3 >= parts.size()) return kNoRank;
    return FindBelow(ranks, piece.substr(parts[i].start, parts[i + 3].start - parts[i].start), max_rank);
  };
  while (true) {
    Rank min_rank = kNoRank;
    size_t min_index = 0;
    for (size_t i = 0; i + 1 < parts.size(); ++i) {
      if (parts[i].rank < min_rank) {
        min_rank = parts[i].rank;
        min_index = i;
      }
    }
    if (min_rank == kNoRank) break;
    if (min_index > 0) parts[min_index - 1].rank = pair_rank(min_index - 1);
    parts[min_index].rank = pair_rank(min_index);
    parts.erase(parts.begin() + static_cast<std::ptrdiff_t>(min_index) + 1);
  }
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    out.push_back(
        FindBelow(ranks, piece.substr(parts[i].start, parts[i + 1].start - parts[i].start), max_rank));
  }
}

void BytePairMergeHeap(std::string_view piece, const RankTable& ranks, std::vector<Rank>& out,
                       Rank max_rank) {
  const size_t n = piece.size();
  if (n == 1) {
    out.push_back(FindBelow(ranks, piece, max_rank));
    return;
  }
  // Part i starts at byte i while alive; next/prev link the live parts; end[i] is its end byte.
  std::vector<uint32_t> next(n), prev(n), end(n);
  std::vector<Rank> pair_rank(n, kNoRank);  // current rank of merging part i with its successor
  std::vector<bool> alive(n, true);
  for (size_t i = 0; i < n; ++i) {
    next[i] = static_cast<uint32_t>(i + 1);
    prev[i] = static_cast<uint32_t>(i == 0 ? UINT32_MAX : i - 1);
    end[i] = static_cast<uint32_t>(i + 1);
  }
  // Heap entries (rank, start): smallest rank first, then leftmost, as tiktoken's scan picks.
  using Entry = std::pair<Rank, uint32_t>;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> heap;
  const auto update = [&](uint32_t i) {
    const uint32_t j = next[i];
    pair_rank[i] = j >= n ? kNoRank : FindBelow(ranks, piece.substr(i, end[j] - i), max_rank);
    if (pair_rank[i] != kNoRank) heap.push({pair_rank[i], i});
  };
  for (uint32_t i = 0; i + 1 < n; ++i) update(i);
  while (!heap.empty()) {
    const auto [rank, i] = heap.top();
    heap.pop();
    if (!alive[i] || pair_rank[i] != rank) continue;  // stale entry
    const uint32_t j = next[i];
    end[i] = end[j];
    next[i] = next[j];
    if (next[i] < n) prev[next[i]] = i;
    alive[j] = false;
    update(i);
    if (prev[i] != UINT32_MAX) update(prev[i]);
  }
  for (uint32_t i = 0; i < n; i = next[i])
    out.push_back(FindBelow(ranks, piece.substr(i, end[i] - i), max_rank));
}

void BytePairMerge(std::string_view piece, const RankTable& ranks, std::vector<Rank>& out, Rank max_rank) {
  if (piece.size() <= kLinearMaxBytes) {
    BytePairMergeLinear(piece, ranks, out, max_rank);
  } else {
    BytePairMergeHeap(piece, ranks, out, max_rank);
  }
}

}  // namespace k3::tokenizer
