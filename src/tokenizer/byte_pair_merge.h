// Byte-level BPE inside one pre-tokenised piece, with tiktoken's semantics: start from single bytes and
// repeatedly merge the adjacent pair whose concatenated bytes have the lowest rank (leftmost pair on
// ties) until no adjacent pair is a token.
//
// Short pieces use tiktoken's linear scan; long ones a min-heap over a linked list of parts, so a piece
// of n bytes costs O(n log n) (never quadratic). Both give identical results.
#pragma once

#include <string_view>
#include <vector>

#include "src/tokenizer/rank_table.h"

namespace k3::tokenizer {

// Appends the ranks of the parts of piece (piece must be non-empty; every single byte must have a rank
// below max_rank). Ranks >= max_rank are treated as absent (used to recover merges from a vocabulary).
void BytePairMerge(std::string_view piece, const RankTable& ranks, std::vector<Rank>& out,
                   Rank max_rank = kNoRank);

// The two algorithms, exposed so tests can check they agree.
void BytePairMergeLinear(std::string_view piece, const RankTable& ranks, std::vector<Rank>& out,
                         Rank max_rank = kNoRank);
void BytePairMergeHeap(std::string_view piece, const RankTable& ranks, std::vector<Rank>& out,
                       Rank max_rank = kNoRank);

}  // namespace k3::tokenizer
