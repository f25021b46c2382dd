// Open-addressing (linear probing) hash table from token bytes to rank.
#include "src/tokenizer/rank_table.h"

#include <cstring>

namespace k3::tokenizer {

uint64_t RankTable::Hash(std::string_view bytes) {
  // 8 bytes at a time, multiply-xorshift mixing; short tokens (the common case) take one or two rounds.
  uint64_t h = 0x9E3779B97F4A7C15ull ^ (bytes.size() * 0xC2B2AE3D27D4EB4Full);
  size_t i = 0;
  for (; i + 8 <= bytes.size(); i += 8) {
    uint64_t word;
    std::memcpy(&word, bytes.data() + i, 8);
    h = (h ^ word) * 0xFF51AFD7ED558CCDull;
    h ^= h >> 32;
  }
  if (i < bytes.size()) {
    uint64_t word = 0;
    std::memcpy(&word, bytes.data() + i, bytes.size() - i);
    h = (h ^ word) * 0xFF51AFD7ED558CCDull;
    h ^= h >> 32;
  }
  h *= 0xC4CEB9FE1A85EC53ull;
  return h ^ (h >> 29);
}

RankTable::RankTable(const std::vector<std::string>& tokens) {
  size_t capacity = 16;
  while (capacity < tokens.size() * 2) capacity *= 2;
  slots_.assign(capacity, Slot{});
  mask_ = capacity - 1;
  size_t total = 0;
  for (const std::string& token : tokens) total += token.size();
  arena_.reserve(total);
  for (size_t rank = 0; rank < tokens.size(); ++rank) {
    const std::string& token = tokens[rank];
    uint64_t index = Hash(token) & mask_;
    bool duplicate = false;
    while (slots_[index].rank != kNoRank) {
      const Slot& slot = slots_[index];
      if (std::string_view(arena_.data() + slot.offset, slot.length) == token) {
        duplicate = true;
        break;
      }
      index = (index + 1) & mask_;
    }
    if (duplicate) continue;
    slots_[index] = Slot{static_cast<uint32_t>(arena_.size()), static_cast<uint32_t>(token.size()),
                         static_cast<Rank>(rank)};
    arena_.append(token);
    ++num_tokens_;
  }
}

Rank RankTable::Find(std::string_view bytes) const {
  if (slots_.empty()) return kNoRank;
  uint64_t index = Hash(bytes) & mask_;
  while (true) {
    const Slot& slot = slots_[index];
    if (slot.rank == kNoRank) return kNoRank;
    if (slot.length == bytes.size() &&
        std::memcmp(arena_.data() + slot.offset, bytes.data(), bytes.size()) == 0) {
      return slot.rank;
    }
    index = (index + 1) & mask_;
  }
}

}  // namespace k3::tokenizer
