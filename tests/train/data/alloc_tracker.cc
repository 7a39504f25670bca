#include "alloc_tracker.h"

#include <atomic>
#include <cstdlib>
#include <new>

namespace {

std::atomic<bool> g_recording{false};
std::atomic<size_t> g_largest{0};

void* Allocate(size_t n) {
  if (g_recording.load(std::memory_order_relaxed)) {
    size_t seen = g_largest.load(std::memory_order_relaxed);
    while (n > seen && !g_largest.compare_exchange_weak(seen, n, std::memory_order_relaxed)) {
    }
  }
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}

}  // namespace

void* operator new(size_t n) { return Allocate(n); }
void* operator new[](size_t n) { return Allocate(n); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
void operator delete[](void* p, size_t) noexcept { std::free(p); }
// The nothrow forms too (std::stable_sort uses them), so every new pairs with our delete.
void* operator new(size_t n, const std::nothrow_t&) noexcept {
  try {
    return Allocate(n);
  } catch (const std::bad_alloc&) {
    return nullptr;
  }
}
void* operator new[](size_t n, const std::nothrow_t& tag) noexcept { return operator new(n, tag); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }

namespace tributary::testing_util {

LargestAllocation::LargestAllocation() {
  g_largest.store(0);
  g_recording.store(true);
}
LargestAllocation::~LargestAllocation() { g_recording.store(false); }
size_t LargestAllocation::bytes() const { return g_largest.load(); }

}  // namespace tributary::testing_util
