#include "privacy/secagg/masking.h"

#include <cstring>

#include "crypto/chacha20_stream.h"

namespace tributary {
namespace {

template <typename Word>
void Apply(std::span<uint64_t> v, ChaCha20Stream& prg, bool subtract, uint64_t mask) {
  constexpr size_t kBlock = 4096;
  Word words[kBlock];
  for (size_t at = 0; at < v.size(); at += kBlock) {
    const size_t n = std::min(kBlock, v.size() - at);
    prg.Fill(std::span(reinterpret_cast<uint8_t*>(words), n * sizeof(Word)));
    uint64_t* out = v.data() + at;
    if (subtract) {
      for (size_t i = 0; i < n; ++i) out[i] = (out[i] - static_cast<uint64_t>(words[i])) & mask;
    } else {
      for (size_t i = 0; i < n; ++i) out[i] = (out[i] + static_cast<uint64_t>(words[i])) & mask;
    }
  }
}

}  // namespace

void ApplyMask(std::span<uint64_t> v, const Key32& seed, bool subtract, uint64_t mask) {
  ChaCha20Stream prg(seed);
  if (mask <= 0xffffffffULL)
    Apply<uint32_t>(v, prg, subtract, mask);
  else
    Apply<uint64_t>(v, prg, subtract, mask);
}

}  // namespace tributary
