// Sequences: drives a Model without an engine (k3 run, goldens, tests, benchmarks). It names the slots,
// records their operations in a StateOpLog, tracks each sequence's position and builds the StepPlan of
// each call; standalone states (the model grows their MLA cache itself, no block table).
//
//   Sequences seqs(*model);
//   const int32_t seq = seqs.New();
//   SequenceBatchItem items[] = {{seq, prompt_ids, /*all_logits=*/true}};
//   K3_CHECK_OK(seqs.Forward(items, &out));   // out.logits: [prompt_ids.size(), vocab]
//   const int32_t copy = seqs.Clone(seq);      // n > 1, prefix experiments
//
// Destroying it frees its slots in the model, so the model must outlive it.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

#include "src/base/status.h"
#include "src/model/model.h"
#include "src/model/state_log.h"

namespace k3::model {

struct SequenceBatchItem {
  int32_t slot = 0;
  std::span<const int32_t> tokens;       // >= 1 new tokens
  bool all_logits = false;               // true: logits for every new token; false: only the last
  std::vector<EmbeddingRun> embeddings;  // rows of `tokens` with given embeddings (images; step_plan.h)
};

class Sequences {
 public:
  // dtype: how the states' MLA latent caches store their (bf16) values; bf16 unless asked.
  explicit Sequences(Model& model, CacheDtype dtype = CacheDtype::kBf16) : model_(model), dtype_(dtype) {}
  ~Sequences();
  Sequences(const Sequences&) = delete;
  Sequences& operator=(const Sequences&) = delete;

  // An empty state's slot.
  int32_t New();
  // A copy of `slot` (KDA state, conv tails, MLA cache, position).
  int32_t Clone(int32_t slot);
  void Free(int32_t slot);
  // Tokens processed by `slot` so far (its next token's position).
  int64_t num_tokens(int32_t slot) const { return positions_.at(slot); }

  // One Execute over the items (each slot once, tokens < vocab_size): the ops since the last call, then
  // the batch. On success every item's slot has advanced by its tokens.
  Status Forward(std::span<const SequenceBatchItem> batch, ForwardOutput* out);

 private:
  Model& model_;
  CacheDtype dtype_;
  StateOpLog log_;
  std::unordered_map<int32_t, int64_t> positions_;  // live slots -> tokens processed
};

}  // namespace k3::model
