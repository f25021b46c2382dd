// The open-files limit of this process. A server holds one descriptor per connection (idle keep-alive
// ones included), and many systems start processes with a soft limit of 1024: like vLLM, `k3 serve`
// raises the soft limit to the hard one at start-up and logs both.
#pragma once

#include <cstdint>

namespace k3 {

struct OpenFilesLimit {
  uint64_t before = 0;  // soft limit found
  uint64_t soft = 0;    // soft limit now
  uint64_t hard = 0;
  bool raised = false;
};

// Raises the soft RLIMIT_NOFILE to the hard limit (an unlimited hard limit: to the kernel's
// fs.nr_open). Never lowers it; on failure the limits are left as they were and reported as found.
OpenFilesLimit RaiseOpenFilesLimit();

}  // namespace k3
