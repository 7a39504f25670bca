#include "crypto/openssl_util.h"

#include <openssl/err.h>
#include <openssl/pem.h>

#include <climits>

#include "core/file_util.h"

namespace tributary::crypto_internal {
namespace {

// Refuses to prompt for a passphrase: keys must be unencrypted files guarded by file mode.
int NoPassword(char* /*buf*/, int /*size*/, int /*rwflag*/, void* /*u*/) { return -1; }

Result<BioPtr> MemoryBio(std::string_view bytes, std::string_view source) {
  if (bytes.size() > static_cast<size_t>(INT_MAX))
    return Status::OutOfRange(std::string(source) + " is too large for PEM parsing");
  BioPtr bio(BIO_new_mem_buf(bytes.data(), static_cast<int>(bytes.size())));
  if (!bio) return OpenSslStatus(StatusCode::kInternal, "BIO_new_mem_buf");
  return bio;
}

Result<std::string> BioContents(BIO* bio) {
  char* data = nullptr;
  long n = BIO_get_mem_data(bio, &data);
  if (n < 0 || data == nullptr) return OpenSslStatus(StatusCode::kInternal, "BIO_get_mem_data");
  return std::string(data, static_cast<size_t>(n));
}

}  // namespace

std::string DrainOpenSslErrors() {
  std::string out;
  while (unsigned long e = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof(buf));
    if (!out.empty()) out += "; ";
    out += buf;
  }
  return out;
}

Status OpenSslStatus(StatusCode code, std::string_view what) {
  std::string errors = DrainOpenSslErrors();
  std::string msg(what);
  if (!errors.empty()) msg += ": " + errors;
  return Status(code, std::move(msg));
}

Result<std::string> ReadPemFile(const std::string& path) {
  Result<std::vector<uint8_t>> bytes = ReadFileBytes(path, kMaxPemFileBytes);
  if (!bytes.ok()) return bytes.status();
  return std::string(bytes->begin(), bytes->end());
}

Result<std::vector<X509Ptr>> ParseCertificates(std::string_view pem, std::string_view source) {
  ERR_clear_error();
  TRIB_ASSIGN_OR_RETURN(BioPtr bio, MemoryBio(pem, source));
  std::vector<X509Ptr> certs;
  while (true) {
    X509Ptr cert(PEM_read_bio_X509(bio.get(), nullptr, NoPassword, nullptr));
    if (!cert) break;
    certs.push_back(std::move(cert));
  }
  // Reaching the end of the input after at least one certificate is the normal way out.
  unsigned long last = ERR_peek_last_error();
  if (!certs.empty() && ERR_GET_REASON(last) == PEM_R_NO_START_LINE) {
    ERR_clear_error();
    return certs;
  }
  if (certs.empty())
    return OpenSslStatus(StatusCode::kInvalidArgument,
                         std::string(source) + " holds no PEM certificate");
  return OpenSslStatus(StatusCode::kInvalidArgument,
                       std::string(source) + " has a malformed PEM certificate after certificate " +
                           std::to_string(certs.size()));
}

Result<X509Ptr> ParseCertificate(std::string_view pem, std::string_view source) {
  TRIB_ASSIGN_OR_RETURN(std::vector<X509Ptr> certs, ParseCertificates(pem, source));
  return std::move(certs.front());
}

Result<EvpPkeyPtr> ParsePrivateKey(std::string_view pem, std::string_view source) {
  if (pem.find("ENCRYPTED") != std::string_view::npos)
    return Status::InvalidArgument(
        std::string(source) +
        " holds an encrypted private key; Tributary needs an unencrypted "
        "key protected by file mode 0600");
  ERR_clear_error();
  TRIB_ASSIGN_OR_RETURN(BioPtr bio, MemoryBio(pem, source));
  EvpPkeyPtr key(PEM_read_bio_PrivateKey(bio.get(), nullptr, NoPassword, nullptr));
  if (!key)
    return OpenSslStatus(StatusCode::kInvalidArgument,
                         std::string(source) + " holds no valid PEM private key");
  return key;
}

std::string Asn1ToString(const ASN1_STRING* s) {
  return std::string(reinterpret_cast<const char*>(ASN1_STRING_get0_data(s)),
                     static_cast<size_t>(ASN1_STRING_length(s)));
}

Result<std::string> CertificateToPem(X509* cert) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  if (!bio || PEM_write_bio_X509(bio.get(), cert) != 1)
    return OpenSslStatus(StatusCode::kInternal, "PEM_write_bio_X509");
  return BioContents(bio.get());
}

Result<std::string> PrivateKeyToPem(EVP_PKEY* key) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  if (!bio || PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr) != 1)
    return OpenSslStatus(StatusCode::kInternal, "PEM_write_bio_PrivateKey");
  return BioContents(bio.get());
}

Status CheckKeyMatchesCert(X509* cert, std::string_view cert_source, EVP_PKEY* key,
                           std::string_view key_source) {
  ERR_clear_error();
  if (X509_check_private_key(cert, key) != 1) {
    DrainOpenSslErrors();
    return Status::InvalidArgument("private key " + std::string(key_source) +
                                   " does not match certificate " + std::string(cert_source));
  }
  return Status::Ok();
}

}  // namespace tributary::crypto_internal
