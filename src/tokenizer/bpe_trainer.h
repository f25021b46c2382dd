// Byte-level BPE vocabulary building and tokenizer-file writing, for generated checkpoints and tests.
//
// TrainByteLevelBpe returns tokens by rank: ranks 0..255 are the single bytes 0x00..0xff in byte order,
// then one token per learned merge (the concatenation of two lower-rank tokens), most frequent pair
// first, ties broken deterministically. Text is split into pieces with the K3 pre-tokeniser first, so
// no token crosses a piece boundary (what tiktoken assumes).
//
// WriteTokenizerFiles writes, into dir:
//   tiktoken.model         "<base64 token> <rank>" per line, ranks 0..n-1
//   tokenizer_config.json  added_tokens_decoder: the 256 special ids n..n+255 named as in K3 (spec §4.1;
//                          offsets kept: [BOS] at n, <|end_of_msg|> at n+2, ...), unnamed ones
//                          <|reserved_token_ID|>; bos_token / eos_token; model_max_length
//   merges.txt             one "left right" pair per merge (readable; not needed for encoding)
// The vocabulary size of the model is then n + 256.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "src/base/status.h"

namespace k3::tokenizer {

std::vector<std::string> TrainByteLevelBpe(std::string_view corpus, size_t num_ranks);

Status WriteTokenizerFiles(const std::string& dir, const std::vector<std::string>& ranks);

// A few hundred KB of mixed-script text written for this project (data/tokenizer-corpus/), compiled in
// so the embedded model's tokenizer can be generated anywhere.
std::string_view EmbeddedCorpus();

}  // namespace k3::tokenizer
