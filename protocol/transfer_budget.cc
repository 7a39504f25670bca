#include "protocol/transfer_budget.h"

namespace tributary {

bool TransferBudget::TryReserve(uint64_t n) {
  uint64_t used = used_.load();
  for (;;) {
    if (used != 0 && (n > capacity_ || used > capacity_ - n)) return false;
    if (used_.compare_exchange_weak(used, used + n)) break;
  }
  const uint64_t now = used + n;
  uint64_t peak = peak_.load();
  while (now > peak && !peak_.compare_exchange_weak(peak, now)) {
  }
  return true;
}

void TransferBudget::Release(uint64_t n) { used_ -= n; }

}  // namespace tributary
