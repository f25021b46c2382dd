// Fuzzes DecodeStepPlan (what a worker rank receives from rank 0) with arbitrary bytes: it must return a
// Status that explains itself, or a plan that encodes back to exactly the bytes it came from.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "src/model/step_plan.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto plan = k3::model::DecodeStepPlan(bytes);
  if (!plan.ok()) {
    if (plan.status().message().empty()) std::abort();
    return 0;
  }
  if (k3::model::EncodeStepPlan(*plan) != bytes) std::abort();
  return 0;
}
