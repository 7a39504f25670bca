// What a test knows of the sanitizer it is built with, and a skip for the ThreadSanitizer pass.
//
// scripts/test runs whole labels (coordinator, client, protocol, sim, threads) under
// ThreadSanitizer, which makes code about 5-40x slower. A test there that runs on one thread gives
// TSan nothing to watch; one that repeats the threads of another test in the pass adds only time.
// Such a test skips there with TRIB_SKIP_UNDER_TSAN_BECAUSE(why), `why` naming what runs instead
// (the optimized build runs every test whole).
#pragma once

#include <gtest/gtest.h>

namespace tributary::testing {

#if defined(__SANITIZE_THREAD__)
inline constexpr bool kUnderThreadSanitizer = true;
#else
inline constexpr bool kUnderThreadSanitizer = false;
#endif

}  // namespace tributary::testing

#define TRIB_SKIP_UNDER_TSAN_BECAUSE(why)                      \
  do {                                                         \
    if (::tributary::testing::kUnderThreadSanitizer)           \
      GTEST_SKIP() << "skipped under ThreadSanitizer: " << why \
                   << "; the optimized build runs this test";  \
  } while (false)
