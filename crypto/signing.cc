#include "crypto/signing.h"

#include <openssl/evp.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>

#include <climits>

#include "crypto/openssl_util.h"

namespace tributary {
namespace {

using crypto_internal::EvpPkeyPtr;
using crypto_internal::OpenSslStatus;
using crypto_internal::X509Ptr;
using crypto_internal::X509StoreCtxPtr;
using crypto_internal::X509StorePtr;
using MdCtxPtr = std::unique_ptr<EVP_MD_CTX, crypto_internal::Deleter<EVP_MD_CTX_free>>;

// Ed25519 and Ed448 sign the message itself; every other key type signs its SHA-256.
const EVP_MD* DigestFor(EVP_PKEY* key) {
  const int id = EVP_PKEY_get_id(key);
  return id == EVP_PKEY_ED25519 || id == EVP_PKEY_ED448 ? nullptr : EVP_sha256();
}

}  // namespace

struct SigningKey::Key {
  EvpPkeyPtr pkey;
};

SigningKey::SigningKey(std::unique_ptr<Key> key) : key_(std::move(key)) {}
SigningKey::SigningKey(SigningKey&&) noexcept = default;
SigningKey& SigningKey::operator=(SigningKey&&) noexcept = default;
SigningKey::~SigningKey() = default;

Result<SigningKey> SigningKey::FromPem(std::string_view key_pem, std::string_view source) {
  TRIB_ASSIGN_OR_RETURN(EvpPkeyPtr pkey, crypto_internal::ParsePrivateKey(key_pem, source));
  auto key = std::make_unique<Key>();
  key->pkey = std::move(pkey);
  return SigningKey(std::move(key));
}

Result<SigningKey> SigningKey::FromPemFile(const std::string& path) {
  TRIB_ASSIGN_OR_RETURN(std::string pem, crypto_internal::ReadPemFile(path));
  return FromPem(pem, path);
}

Result<std::vector<uint8_t>> SigningKey::Sign(std::span<const uint8_t> message) const {
  MdCtxPtr md(EVP_MD_CTX_new());
  size_t n = 0;
  if (!md ||
      EVP_DigestSignInit(md.get(), nullptr, DigestFor(key_->pkey.get()), nullptr,
                         key_->pkey.get()) != 1 ||
      EVP_DigestSign(md.get(), nullptr, &n, message.data(), message.size()) != 1)
    return OpenSslStatus(StatusCode::kInternal, "starting a signature");
  std::vector<uint8_t> sig(n);
  if (EVP_DigestSign(md.get(), sig.data(), &n, message.data(), message.size()) != 1)
    return OpenSslStatus(StatusCode::kInternal, "signing");
  sig.resize(n);
  return sig;
}

struct CertificateVerifier::Store {
  X509StorePtr store;
};

CertificateVerifier::CertificateVerifier(std::unique_ptr<Store> store) : store_(std::move(store)) {}
CertificateVerifier::CertificateVerifier(CertificateVerifier&&) noexcept = default;
CertificateVerifier& CertificateVerifier::operator=(CertificateVerifier&&) noexcept = default;
CertificateVerifier::~CertificateVerifier() = default;

Result<CertificateVerifier> CertificateVerifier::FromPem(std::string_view ca_pem,
                                                         std::string_view source) {
  TRIB_ASSIGN_OR_RETURN(std::vector<X509Ptr> cas,
                        crypto_internal::ParseCertificates(ca_pem, source));
  auto store = std::make_unique<Store>();
  store->store.reset(X509_STORE_new());
  if (!store->store) return OpenSslStatus(StatusCode::kInternal, "making a certificate store");
  for (X509Ptr& ca : cas)
    if (X509_STORE_add_cert(store->store.get(), ca.get()) != 1)
      return OpenSslStatus(StatusCode::kInvalidArgument,
                           std::string("adding the CA of ") + std::string(source));
  return CertificateVerifier(std::move(store));
}

Result<CertificateVerifier> CertificateVerifier::FromPemFile(const std::string& path) {
  TRIB_ASSIGN_OR_RETURN(std::string pem, crypto_internal::ReadPemFile(path));
  return FromPem(pem, path);
}

Result<std::string> CertificateVerifier::VerifySignature(std::string_view cert_pem,
                                                         std::span<const uint8_t> message,
                                                         std::span<const uint8_t> signature) const {
  Result<X509Ptr> cert = crypto_internal::ParseCertificate(cert_pem, "the signer's certificate");
  if (!cert.ok()) return Status::PermissionDenied(cert.status().message());
  X509StoreCtxPtr ctx(X509_STORE_CTX_new());
  if (!ctx || X509_STORE_CTX_init(ctx.get(), store_->store.get(), cert->get(), nullptr) != 1)
    return OpenSslStatus(StatusCode::kInternal, "starting certificate verification");
  X509_STORE_CTX_set_purpose(ctx.get(), X509_PURPOSE_SSL_CLIENT);
  if (X509_verify_cert(ctx.get()) != 1) {
    crypto_internal::DrainOpenSslErrors();
    return Status::PermissionDenied(
        std::string("the signer's certificate does not verify against the CA: ") +
        X509_verify_cert_error_string(X509_STORE_CTX_get_error(ctx.get())));
  }
  TRIB_ASSIGN_OR_RETURN(std::string id, crypto_internal::ClientIdOfCertificate(cert->get()));
  EVP_PKEY* pub = X509_get0_pubkey(cert->get());
  MdCtxPtr md(EVP_MD_CTX_new());
  if (!pub || !md || EVP_DigestVerifyInit(md.get(), nullptr, DigestFor(pub), nullptr, pub) != 1)
    return OpenSslStatus(StatusCode::kInternal, "starting signature verification");
  if (EVP_DigestVerify(md.get(), signature.data(), signature.size(), message.data(),
                       message.size()) != 1) {
    crypto_internal::DrainOpenSslErrors();
    return Status::PermissionDenied("the signature of '" + id +
                                    "' does not verify: the signed message was changed");
  }
  return id;
}

}  // namespace tributary
