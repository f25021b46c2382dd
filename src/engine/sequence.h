// Sequence and RequestState: the engine thread's bookkeeping for one choice and for one request.
//
// A request starts as one sequence (choice 0, the leader) that prefills the prompt; when the prompt is
// done and n > 1, the leader's state is forked into choices 1..n-1, which sample from the same logits.
// A sequence's `tokens` are prompt + generated ids; its model state has processed a prefix of them (all
// but the last sampled token while decoding; none after a preemption, which recomputes them).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "src/cache/paged_sequence.h"
#include "src/chat/token_constraint.h"
#include "src/engine/engine.h"
#include "src/engine/sampler.h"
#include "src/engine/stop_strings.h"
#include "src/tokenizer/incremental_decoder.h"

namespace k3::engine {

struct RequestState;

struct Sequence {
  RequestState* request = nullptr;
  int32_t choice = 0;
  std::vector<int32_t> tokens;  // prompt + generated
  int64_t prompt_len = 0;
  std::unique_ptr<cache::PagedSequence> state;  // null while waiting
  int64_t slots_held = 0;                       // KDA slots (the leader holds n until it forks)
  std::unique_ptr<Sampler> sampler;
  std::unique_ptr<chat::TokenConstraint> constraint;
  std::unique_ptr<tokenizer::IncrementalDecoder> decoder;
  std::unique_ptr<StopStringMatcher> stop;
  std::vector<float> ready_logits;  // logits restored from a full prefix-cache hit (sample without forward)
  int64_t chunk = 0;                // tokens scheduled this step
  bool finished = false;
  bool prompt_logprobs_sent = false;  // the choice's first event carried RequestState::prompt_logprobs

  int64_t num_generated() const { return static_cast<int64_t>(tokens.size()) - prompt_len; }
};

struct RequestState {
  uint64_t id = 0;
  Request request;
  EventCallback on_event;
  int64_t max_tokens = 0;                          // resolved
  uint64_t seed = 0;                               // resolved (random when the request has none)
  std::vector<std::unique_ptr<Sequence>> choices;  // [0] from the start; the rest after the fork
  bool forked = false;
  bool admitted_once = false;
  int32_t finished_choices = 0;
  Usage usage;
  // With sampling.prompt_logprobs: entries for prompt tokens 1 .. collected so far (the leader's forward
  // fills them in order; a recompute after preemption does not add them twice).
  std::vector<TokenLogprob> prompt_logprobs;

  // With request.embed: the sum of the final hidden rows of prompt positions 0 .. pooled_rows - 1 [D]
  // (a recompute after preemption does not add a position twice).
  std::vector<float> pooled_sum;
  int64_t pooled_rows = 0;

  // request.images' encoded rows, fetched when a chunk first reaches them (null until then).
  std::vector<std::shared_ptr<const std::vector<uint16_t>>> image_rows;

  // True while the leader still has prompt positions whose logprobs are not collected.
  bool CollectingPromptLogprobs() const {
    return request.sampling.prompt_logprobs >= 0 &&
           static_cast<int64_t>(prompt_logprobs.size()) + 1 < static_cast<int64_t>(request.prompt.size());
  }
};

}  // namespace k3::engine
