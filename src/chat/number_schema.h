// JSON Schema numeric keywords -> the byte DFA of a bounded kNumber node (grammar.h): `minimum`,
// `maximum`, `exclusiveMinimum`, `exclusiveMaximum` (numbers, or draft-4 booleans beside minimum /
// maximum) and `multipleOf`, enforced exactly in the grammar.
//
// A bounded number is written in plain decimal notation, without an exponent: -?(0|[1-9]d*)(.d+)? with at
// most kMaxIntegerDigits integer and kMaxFractionDigits fraction digits (integers: no fraction). Each
// bound is compared digit by digit with its exact decimal expansion (the shortest text that reads back
// as the bound's double, so 0.1 means 0.1), tracking whether the text so far is below, equal to or above
// the bound's digits; multipleOf m = M * 10^-s (s fraction digits) allows at most s fraction digits and
// tracks the scaled value's remainder mod M. The automata are intersected (regex_dfa.h).
//
// Errors (InvalidArgument naming the keyword, its JSON pointer and why): a bound or multipleOf that is not
// a number, multipleOf <= 0 or with more than kMaxFractionDigits fraction digits, minimum above maximum
// (after exclusive bounds), a range or multiple no generated number reaches (e.g. minimum 1e20: numbers
// have at most kMaxIntegerDigits integer digits), and an automaton above kMaxNumberDfaStates states
// (a multipleOf with a large scaled value, e.g. 123457).
#pragma once

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "src/base/status.h"
#include "src/chat/regex_dfa.h"

namespace k3::chat::grammar {

inline constexpr uint32_t kMaxNumberDfaStates = 8192;

// Whether the schema has numeric keywords that need a bounded number node.
bool HasNumberKeywords(const nlohmann::json& schema);

// The number DFA for `schema` at JSON pointer `ptr` (integer: no fraction part). Never empty.
Result<std::shared_ptr<const regex::ByteDfa>> CompileNumberKeywords(const nlohmann::json& schema,
                                                                    bool integer, const std::string& ptr);

}  // namespace k3::chat::grammar
