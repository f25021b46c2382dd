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

// K3_CHECK_OK(expr): expr is a Status (or anything with ok() and ToString()) that must be ok; otherwise
// logs it and aborts. For tests and tools where a failure is a bug, never for user input.
#define K3_CHECK_OK(expr)                                                         \
  do {                                                                            \
    const auto& k3_check_ok_status = (expr);                                      \
    if (!k3_check_ok_status.ok()) [[unlikely]] {                                  \
      std::fprintf(stderr, "%s:%d: K3_CHECK_OK failed: %s\n", __FILE__, __LINE__, \
                   k3_check_ok_status.ToString().c_str());                        \
      std::abort();                                                               \
    }                                                                             \
  } while (0)
