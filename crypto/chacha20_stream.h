// ChaCha20Stream: the ChaCha20 keystream (RFC 8439, OpenSSL's EVP_chacha20) as a pseudorandom
// generator: a 32-byte seed expands to as many bytes as asked, the same bytes on every machine.
// Secure aggregation expands mask seeds with it (privacy/secagg).
//
//   ChaCha20Stream prg(seed);   // nonce 0, counter 0
//   prg.Fill(bytes);            // successive calls continue the stream
//
// Not thread-safe; one object per stream.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>

namespace tributary {

class ChaCha20Stream {
 public:
  explicit ChaCha20Stream(const std::array<uint8_t, 32>& seed, uint64_t nonce = 0);
  ~ChaCha20Stream();
  ChaCha20Stream(const ChaCha20Stream&) = delete;
  ChaCha20Stream& operator=(const ChaCha20Stream&) = delete;

  // Overwrites `out` with the next out.size() bytes of the stream.
  void Fill(std::span<uint8_t> out);

 private:
  struct Ctx;
  std::unique_ptr<Ctx> ctx_;
};

}  // namespace tributary
