// Signatures with the keys of a deployment's certificates, so a party can prove to its peers,
// through a relay it does not trust, that a message is its own.
//
//   SigningKey key = *SigningKey::FromPemFile("pki/clients/edge-1.key");
//   std::vector<uint8_t> sig = *key.Sign(message);
//
//   CertificateVerifier ca = *CertificateVerifier::FromPem(ca_pem);
//   Result<std::string> id = ca.VerifySignature(cert_pem, message, sig);  // "edge-1"
//
// VerifySignature checks that the certificate chains to the CA (validity dates included), reads
// the client id it carries (crypto/client_id.h), and checks the signature with its public key.
// Signatures are over SHA-256 (ECDSA for the P-256 keys tributary-certs makes; Ed25519 keys sign
// the message directly). Both classes are immutable after creation and thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tributary/result.h"

namespace tributary {

class SigningKey {
 public:
  static Result<SigningKey> FromPem(std::string_view key_pem, std::string_view source = "key");
  static Result<SigningKey> FromPemFile(const std::string& path);
  SigningKey(SigningKey&&) noexcept;
  SigningKey& operator=(SigningKey&&) noexcept;
  ~SigningKey();

  Result<std::vector<uint8_t>> Sign(std::span<const uint8_t> message) const;

 private:
  struct Key;
  explicit SigningKey(std::unique_ptr<Key> key);
  std::unique_ptr<Key> key_;
};

class CertificateVerifier {
 public:
  static Result<CertificateVerifier> FromPem(std::string_view ca_pem,
                                             std::string_view source = "CA");
  static Result<CertificateVerifier> FromPemFile(const std::string& path);
  CertificateVerifier(CertificateVerifier&&) noexcept;
  CertificateVerifier& operator=(CertificateVerifier&&) noexcept;
  ~CertificateVerifier();

  // The client id of `cert_pem` when it chains to the CA and `signature` is its key's over
  // `message`; PermissionDenied saying which check failed otherwise.
  Result<std::string> VerifySignature(std::string_view cert_pem, std::span<const uint8_t> message,
                                      std::span<const uint8_t> signature) const;

 private:
  struct Store;
  explicit CertificateVerifier(std::unique_ptr<Store> store);
  std::unique_ptr<Store> store_;
};

}  // namespace tributary
