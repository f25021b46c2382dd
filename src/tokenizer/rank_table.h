// RankTable: token bytes -> rank, the lookup at the heart of byte-level BPE. An open-addressing hash
// table over one contiguous copy of all token bytes (no per-token allocation, cache-friendly probes).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace k3::tokenizer {

using Rank = uint32_t;
inline constexpr Rank kNoRank = UINT32_MAX;

class RankTable {
 public:
  RankTable() = default;
  // tokens[r] is the byte string of rank r. Duplicate byte strings keep their lowest rank.
  explicit RankTable(const std::vector<std::string>& tokens);

  Rank Find(std::string_view bytes) const;
  size_t size() const { return num_tokens_; }

 private:
  struct Slot {
    uint32_t offset = 0;
    uint32_t length = 0;
    Rank rank = kNoRank;  // kNoRank marks an empty slot
  };
  static uint64_t Hash(std::string_view bytes);

  std::string arena_;
  std::vector<Slot> slots_;
  uint64_t mask_ = 0;
  size_t num_tokens_ = 0;
};

}  // namespace k3::tokenizer
