// Fnv1a64: a tiny streaming 64-bit FNV-1a hash for layout fingerprints and content hashes.
// Not cryptographic; stable across platforms of the same endianness.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tributary {

class Fnv1a64 {
 public:
  void Add(const void* data, size_t n) {
    const auto* p = static_cast<const unsigned char*>(data);
    for (size_t i = 0; i < n; ++i) {
      h_ ^= p[i];
      h_ *= 0x100000001b3ull;
    }
  }
  uint64_t value() const { return h_; }

 private:
  uint64_t h_ = 0xcbf29ce484222325ull;
};

}  // namespace tributary
