// EmulatorPrefix: how a test starts a program the build made. In a cross build (the aarch64 preset)
// those programs are for the target, so they run through the emulator that runs the tests
// (CMAKE_CROSSCOMPILING_EMULATOR, e.g. "qemu-aarch64 -L /", compiled in by tributary_test as
// TRIBUTARY_TEST_EMULATOR); in a native build the prefix is empty.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

namespace tributary::testing {

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
