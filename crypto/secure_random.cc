#include "crypto/secure_random.h"

#include <openssl/rand.h>

#include <climits>

#include "crypto/openssl_util.h"

namespace tributary {

Status SecureRandomBytes(std::span<uint8_t> out) {
  size_t done = 0;
  while (done < out.size()) {
    const size_t n = std::min<size_t>(out.size() - done, INT_MAX);
    if (RAND_priv_bytes(out.data() + done, static_cast<int>(n)) != 1)
      return crypto_internal::OpenSslStatus(StatusCode::kInternal,
                                            "OpenSSL's random generator failed");
    done += n;
  }
  return Status::Ok();
}

}  // namespace tributary
