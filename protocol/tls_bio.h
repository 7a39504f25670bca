// A memory BIO for OpenSSL without copies of its own: it reads ciphertext from a span the caller
// filled from the socket and appends the ciphertext OpenSSL writes to a vector the caller sends.
// (OpenSSL's BIO_s_mem would copy the input in with BIO_write, and its output buffer may move
// while a socket write from it is in flight.)
//
// Reads return what is left of the span, then "retry" (SSL_ERROR_WANT_READ) when it is empty;
// writes always succeed. The BIO does not own the state; the state must outlive it. Not thread
// safe: use it from the one strand that uses the SSL.
#pragma once

#include <openssl/bio.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace tributary {

struct TlsBioState {
  const uint8_t* in = nullptr;          // the next unread input byte
  size_t in_left = 0;                   // unread input bytes
  std::vector<uint8_t>* out = nullptr;  // where output is appended; must be set before writing
};

// A new BIO over `state`, or nullptr when OpenSSL cannot allocate one. Free it with BIO_free, or
// hand it to SSL_set_bio (which then owns it).
BIO* NewTlsBio(TlsBioState* state);

}  // namespace tributary
