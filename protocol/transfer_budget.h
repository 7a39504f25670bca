// TransferBudget: a cap on the bytes all of a process's connections may hold in partly received
// messages, with backpressure instead of refusal.
//
// A connection reserves a chunked message's announced size when its first chunk arrives. When the
// budget cannot cover it, the connection stops reading (the peer's sends back up into TCP) and
// tries again every few milliseconds; a message whose size is reserved always completes, so
// transfers never wait on each other in a cycle. One message larger than the whole budget may
// proceed when nothing else is reserved. Plain (one-frame) messages are not counted: they are
// bounded by the frame cap.
//
// Thread-safe (atomics); shared by every connection of a transport (TransportOptions).
#pragma once

#include <atomic>
#include <cstdint>

namespace tributary {

class TransferBudget {
 public:
  explicit TransferBudget(uint64_t capacity_bytes) : capacity_(capacity_bytes) {}

  // Reserves n bytes when they fit (or when nothing is reserved); false otherwise.
  bool TryReserve(uint64_t n);
  void Release(uint64_t n);

  uint64_t capacity() const { return capacity_; }
  uint64_t used() const { return used_; }
  // The most ever reserved at once, and how many reservations had to wait.
  uint64_t peak() const { return peak_; }
  uint64_t waits() const { return waits_; }
  void CountWait() { ++waits_; }

 private:
  const uint64_t capacity_;
  std::atomic<uint64_t> used_{0}, peak_{0}, waits_{0};
};

}  // namespace tributary
