// Sha256: SHA-256 (OpenSSL's EVP implementation) over data given in pieces, for integrity checks
// of files Tributary writes and reads back (checkpoints).
//
//   Sha256 h;
//   h.Update(header);
//   h.Update(data);
//   std::string hex = h.HexDigest();  // 64 lowercase hex digits; the object is spent after this
//
// Not thread-safe; one object per digest.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

namespace tributary {

class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  void Update(std::span<const uint8_t> data);
  void Update(std::string_view text);
  std::string HexDigest();

 private:
  struct Ctx;
  std::unique_ptr<Ctx> ctx_;
};

}  // namespace tributary
