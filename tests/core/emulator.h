// EmulatorPrefix: how a test starts a program the build made. In a cross build (the aarch64 preset)
// those programs are for the target, so they run through the emulator that runs the tests
// (CMAKE_CROSSCOMPILING_EMULATOR, e.g. "qemu-aarch64 -L /", compiled in by tributary_test as
// TRIBUTARY_TEST_EMULATOR); in a native build the prefix is empty. kUnderEmulation says which.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

namespace tributary::testing {

// True when the tests run under an emulator (the aarch64 preset under qemu-user, 10-30x slower):
// the heaviest tests there cover fewer cases of the same code (each says which).
#ifdef TRIBUTARY_TEST_EMULATOR
inline constexpr bool kUnderEmulation = true;
#else
inline constexpr bool kUnderEmulation = false;
#endif

inline std::vector<std::string> EmulatorPrefix() {
  std::vector<std::string> out;
#ifdef TRIBUTARY_TEST_EMULATOR
  const std::string words = TRIBUTARY_TEST_EMULATOR;
  for (size_t at = 0; at < words.size();) {
    const size_t end = std::min(words.find(' ', at), words.size());
    if (end > at) out.push_back(words.substr(at, end - at));
    at = end + 1;
  }
#endif
  return out;
}

}  // namespace tributary::testing
