// Records the largest single operator-new request made while a tracker is alive, so tests can
// prove that a hostile header did not cause a huge allocation. alloc_tracker.cc replaces the
// global operator new/delete (plain and nothrow, not the aligned forms) for the whole test
// binary, forwarding to malloc/free.
#pragma once

#include <cstddef>

namespace tributary::testing_util {

class LargestAllocation {
 public:
  LargestAllocation();  // starts recording (not reentrant: one tracker at a time)
  ~LargestAllocation();
  LargestAllocation(const LargestAllocation&) = delete;
  LargestAllocation& operator=(const LargestAllocation&) = delete;

  // The largest request, in bytes, since construction.
  size_t bytes() const;
};

}  // namespace tributary::testing_util
