// TokenConstraint: restricts which token ids may be generated next (structured output, forced tool calls).
//
// The engine owns one per constrained sequence (Clone() for n > 1) and, each decode step:
//   constraint->FillAllowed(mask);          // mask: bitset over the vocabulary, (vocab+63)/64 words
//   ...logits of disallowed ids -> -inf, sample...
//   constraint->Accept(token);              // advance; false = the token was not allowed (engine error)
// When the constrained value is complete, FillAllowed allows only the end-of-output ids the constraint was
// built with, so generation ends with one of them (the engine treats it as a normal stop). Masks are
// computed incrementally from the current state, not by rescanning the output.
// Implementations live in src/chat (json_schema_grammar.h); the engine sees only this interface.
#pragma once

#include <cstdint>
#include <memory>
#include <span>

namespace k3::chat {

class TokenConstraint {
 public:
  virtual ~TokenConstraint() = default;
  // Sets bit id of `mask` (word id / 64, bit id % 64) for every allowed next token and clears the rest.
  // mask.size() == (vocab_size + 63) / 64.
  virtual void FillAllowed(std::span<uint64_t> mask) = 0;
  // Advances past `token`. Returns false (state unchanged) if the token is not allowed.
  virtual bool Accept(int32_t token) = 0;
  // True once the output so far is a complete value (only end ids are allowed now).
  virtual bool IsComplete() const = 0;
  virtual std::unique_ptr<TokenConstraint> Clone() const = 0;
};

}  // namespace k3::chat
