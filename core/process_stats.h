// Memory figures of the running process, for progress output, reports and benchmarks (Linux).
#pragma once

#include <cstdint>

namespace tributary {

// Resident set size now (VmRSS from /proc/self/status), in bytes; 0 when unavailable.
uint64_t CurrentRssBytes();
// Peak resident set size so far (getrusage ru_maxrss), in bytes.
uint64_t PeakRssBytes();

}  // namespace tributary
