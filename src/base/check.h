// K3_CHECK: invariants inside kernels and the forward pass (programming errors, never user input).
// A failed check logs file:line and the condition, then aborts.
#pragma once

#include <cstdio>
#include <cstdlib>

#define K3_CHECK(cond)                                                                 \
  do {                                                                                 \
    if (!(cond)) [[unlikely]] {                                                        \
      std::fprintf(stderr, "%s:%d: K3_CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                    \
    }                                                                                  \
  } while (0)

#ifdef NDEBUG
#define K3_DCHECK(cond) \
  do {                  \
  } while (0)
#else
#define K3_DCHECK(cond) K3_CHECK(cond)
#endif
