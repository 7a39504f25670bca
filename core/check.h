// Invariant checks. A failed TRIB_CHECK is a bug in Tributary, not bad input: it prints the
// condition with file:line and aborts. Bad input from outside gets a Status instead.
#pragma once

#include <cstdio>
#include <cstdlib>

namespace tributary::internal {
[[noreturn]] inline void CheckFailed(const char* cond, const char* file, int line,
                                     const char* msg) {
  std::fprintf(stderr, "%s:%d: check failed: %s%s%s\n", file, line, cond, msg[0] ? ": " : "", msg);
  std::fflush(stderr);
  std::abort();
}
}  // namespace tributary::internal

// TRIB_CHECK(cond) or TRIB_CHECK(cond, "message"): abort with file:line when cond is false.
#define TRIB_CHECK(cond, ...)                                                        \
  do {                                                                               \
    if (!(cond)) [[unlikely]]                                                        \
      ::tributary::internal::CheckFailed(#cond, __FILE__, __LINE__, "" __VA_ARGS__); \
  } while (0)

#define TRIB_CHECK_EQ(a, b, ...) TRIB_CHECK((a) == (b), __VA_ARGS__)
#define TRIB_CHECK_LE(a, b, ...) TRIB_CHECK((a) <= (b), __VA_ARGS__)
#define TRIB_CHECK_LT(a, b, ...) TRIB_CHECK((a) < (b), __VA_ARGS__)

#ifdef NDEBUG
#define TRIB_DCHECK(cond, ...) \
  do {                         \
  } while (0)
#else
#define TRIB_DCHECK(cond, ...) TRIB_CHECK(cond, __VA_ARGS__)
#endif
