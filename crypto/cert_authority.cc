#include "crypto/cert_authority.h"

#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/rand.h>
#include <openssl/x509v3.h>

#include "crypto/client_id.h"
#include "crypto/openssl_util.h"

namespace tributary {
namespace {

using crypto_internal::CertificateToPem;
using crypto_internal::CheckKeyMatchesCert;
using crypto_internal::EvpPkeyPtr;
using crypto_internal::GeneralNamesPtr;
using crypto_internal::OpenSslStatus;
using crypto_internal::ParseCertificate;
using crypto_internal::ParsePrivateKey;
using crypto_internal::PrivateKeyToPem;
using crypto_internal::X509ExtPtr;
using crypto_internal::X509Ptr;

constexpr int64_t kMaxValidDays = 36500;
constexpr int64_t kMaxOffsetSeconds = kMaxValidDays * 86400;
constexpr size_t kMaxCommonName = 64;  // ub-common-name in RFC 5280
constexpr size_t kMaxDnsName = 253;

using BignumPtr = std::unique_ptr<BIGNUM, crypto_internal::Deleter<BN_free>>;
using Asn1OctetPtr =
    std::unique_ptr<ASN1_OCTET_STRING, crypto_internal::Deleter<ASN1_OCTET_STRING_free>>;

Status ValidateOptions(const CertOptions& o) {
  if (o.valid_days < 1 || o.valid_days > kMaxValidDays)
    return Status::InvalidArgument("valid_days is " + std::to_string(o.valid_days) +
                                   "; it must be 1.." + std::to_string(kMaxValidDays));
  if (o.not_before_offset_s < -kMaxOffsetSeconds || o.not_before_offset_s > kMaxOffsetSeconds)
    return Status::InvalidArgument("not_before_offset_s is " +
                                   std::to_string(o.not_before_offset_s) + "; it must be within " +
                                   std::to_string(kMaxOffsetSeconds) + " seconds of now");
  return Status::Ok();
}

Status ValidateCommonName(const std::string& cn) {
  if (cn.empty() || cn.size() > kMaxCommonName)
    return Status::InvalidArgument("common name must be 1.." + std::to_string(kMaxCommonName) +
                                   " characters, got " + std::to_string(cn.size()));
  for (char c : cn) {
    if (c < 0x20 || c > 0x7e)
      return Status::InvalidArgument("common name '" + cn + "' has a non-printable character");
  }
  return Status::Ok();
}

// A host name: dot-separated labels of 1..63 [A-Za-z0-9-] not starting or ending with '-'; the
// first label may be exactly "*" (a wildcard certificate).
Status ValidateDnsName(const std::string& name) {
  if (name.empty() || name.size() > kMaxDnsName)
    return Status::InvalidArgument("DNS name '" + name + "' must be 1.." +
                                   std::to_string(kMaxDnsName) + " characters");
  size_t start = 0;
  bool first = true;
  while (start <= name.size()) {
    size_t end = name.find('.', start);
    if (end == std::string::npos) end = name.size();
    std::string_view label(name.data() + start, end - start);
    const bool wildcard = first && label == "*" && end != name.size();
    if (!wildcard) {
      if (label.empty() || label.size() > 63 || label.front() == '-' || label.back() == '-')
        return Status::InvalidArgument("DNS name '" + name + "' has an invalid label '" +
                                       std::string(label) + "'");
      for (char c : label) {
        const bool ok =
            (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
        if (!ok)
          return Status::InvalidArgument("DNS name '" + name + "' has invalid character '" +
                                         std::string(1, c) + "'");
      }
    }
    first = false;
    start = end + 1;
  }
  return Status::Ok();
}

Result<EvpPkeyPtr> GenerateKey() {
  EvpPkeyPtr key(EVP_EC_gen("P-256"));
  if (!key) return OpenSslStatus(StatusCode::kInternal, "generating a P-256 key");
  return key;
}

Status SetRandomSerial(X509* cert) {
  // 127 random bits: positive, unique without bookkeeping, within RFC 5280's 20-octet limit.
  unsigned char bytes[16];
  if (RAND_bytes(bytes, sizeof(bytes)) != 1)
    return OpenSslStatus(StatusCode::kInternal, "RAND_bytes for the serial number");
  bytes[0] &= 0x7f;
  bytes[0] |= 0x01;  // never zero, so the serial is never short
  BignumPtr bn(BN_bin2bn(bytes, sizeof(bytes), nullptr));
  if (!bn || !BN_to_ASN1_INTEGER(bn.get(), X509_get_serialNumber(cert)))
    return OpenSslStatus(StatusCode::kInternal, "setting the serial number");
  return Status::Ok();
}

// A v3 certificate for `key` with subject CN=`cn`, serial and validity set; not yet signed.
Result<X509Ptr> NewCertificate(const std::string& cn, EVP_PKEY* key, const CertOptions& options) {
  X509Ptr cert(X509_new());
  if (!cert) return OpenSslStatus(StatusCode::kInternal, "X509_new");
  if (X509_set_version(cert.get(), 2) != 1)  // 2 means v3
    return OpenSslStatus(StatusCode::kInternal, "X509_set_version");
  TRIB_RETURN_IF_ERROR(SetRandomSerial(cert.get()));
  const long offset = static_cast<long>(options.not_before_offset_s);
  if (!X509_gmtime_adj(X509_getm_notBefore(cert.get()), offset) ||
      !X509_time_adj_ex(X509_getm_notAfter(cert.get()), static_cast<int>(options.valid_days),
                        offset, nullptr))
    return OpenSslStatus(StatusCode::kInternal, "setting the validity period");
  X509_NAME* subject = X509_get_subject_name(cert.get());
  if (X509_NAME_add_entry_by_txt(subject, "CN", MBSTRING_UTF8,
                                 reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1,
                                 0) != 1)
    return OpenSslStatus(StatusCode::kInternal, "setting the subject CN");
  if (X509_set_pubkey(cert.get(), key) != 1)
    return OpenSslStatus(StatusCode::kInternal, "X509_set_pubkey");
  return cert;
}

// Adds an extension written in OpenSSL's config syntax (e.g. "critical,CA:TRUE"). `issuer` is the
// signing certificate (the certificate itself for a self-signed CA).
Status AddExtension(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509ExtPtr ext(X509V3_EXT_conf_nid(nullptr, &ctx, nid, value));
  if (!ext || X509_add_ext(cert, ext.get(), -1) != 1)
    return OpenSslStatus(StatusCode::kInternal,
                         std::string("adding extension ") + OBJ_nid2sn(nid) + "=" + value);
  return Status::Ok();
}

Status AddGeneralName(GENERAL_NAMES* names, int type, const std::string& value) {
  GENERAL_NAME* gn = GENERAL_NAME_new();
  ASN1_IA5STRING* ia5 = ASN1_IA5STRING_new();
  if (gn == nullptr || ia5 == nullptr ||
      ASN1_STRING_set(ia5, value.data(), static_cast<int>(value.size())) != 1) {
    GENERAL_NAME_free(gn);
    ASN1_IA5STRING_free(ia5);
    return OpenSslStatus(StatusCode::kInternal, "building a subjectAltName entry");
  }
  GENERAL_NAME_set0_value(gn, type, ia5);
  if (sk_GENERAL_NAME_push(names, gn) == 0) {
    GENERAL_NAME_free(gn);
    return OpenSslStatus(StatusCode::kInternal, "sk_GENERAL_NAME_push");
  }
  return Status::Ok();
}

Status AddIpName(GENERAL_NAMES* names, const std::string& address) {
  Asn1OctetPtr octets(a2i_IPADDRESS(address.c_str()));
  if (!octets) {
    crypto_internal::DrainOpenSslErrors();
    return Status::InvalidArgument("'" + address + "' is not an IPv4 or IPv6 address");
  }
  GENERAL_NAME* gn = GENERAL_NAME_new();
  if (gn == nullptr) return OpenSslStatus(StatusCode::kInternal, "GENERAL_NAME_new");
  GENERAL_NAME_set0_value(gn, GEN_IPADD, octets.release());
  if (sk_GENERAL_NAME_push(names, gn) == 0) {
    GENERAL_NAME_free(gn);
    return OpenSslStatus(StatusCode::kInternal, "sk_GENERAL_NAME_push");
  }
  return Status::Ok();
}

Status AddSubjectAltNames(X509* cert, GENERAL_NAMES* names) {
  if (X509_add1_ext_i2d(cert, NID_subject_alt_name, names, 0, X509V3_ADD_DEFAULT) != 1)
    return OpenSslStatus(StatusCode::kInternal, "adding subjectAltName");
  return Status::Ok();
}

Status Sign(X509* cert, X509* issuer, EVP_PKEY* issuer_key) {
  if (X509_set_issuer_name(cert, X509_get_subject_name(issuer)) != 1)
    return OpenSslStatus(StatusCode::kInternal, "X509_set_issuer_name");
  if (X509_sign(cert, issuer_key, EVP_sha256()) <= 0)
    return OpenSslStatus(StatusCode::kInternal, "signing the certificate");
  return Status::Ok();
}

Result<PemPair> Encode(X509* cert, EVP_PKEY* key) {
  PemPair pair;
  TRIB_ASSIGN_OR_RETURN(pair.cert_pem, CertificateToPem(cert));
  TRIB_ASSIGN_OR_RETURN(pair.key_pem, PrivateKeyToPem(key));
  return pair;
}

struct LoadedCa {
  X509Ptr cert;
  EvpPkeyPtr key;
};

Result<LoadedCa> LoadCa(const PemPair& ca) {
  LoadedCa out;
  TRIB_ASSIGN_OR_RETURN(out.cert, ParseCertificate(ca.cert_pem, "CA certificate"));
  TRIB_ASSIGN_OR_RETURN(out.key, ParsePrivateKey(ca.key_pem, "CA key"));
  TRIB_RETURN_IF_ERROR(
      CheckKeyMatchesCert(out.cert.get(), "CA certificate", out.key.get(), "CA key"));
  if (X509_check_ca(out.cert.get()) < 1)
    return Status::InvalidArgument("the CA certificate is not a CA (no basicConstraints CA:TRUE)");
  return out;
}

// Makes a leaf certificate for a fresh key, with the extensions every leaf shares plus `eku` and
// the given SANs, signed by `ca`.
Result<PemPair> IssueLeaf(const PemPair& ca_pair, const std::string& cn, const char* eku,
                          GENERAL_NAMES* sans, const CertOptions& options) {
  TRIB_ASSIGN_OR_RETURN(LoadedCa ca, LoadCa(ca_pair));
  TRIB_ASSIGN_OR_RETURN(EvpPkeyPtr key, GenerateKey());
  TRIB_ASSIGN_OR_RETURN(X509Ptr cert, NewCertificate(cn, key.get(), options));
  X509* c = cert.get();
  TRIB_RETURN_IF_ERROR(AddExtension(c, ca.cert.get(), NID_basic_constraints, "critical,CA:FALSE"));
  TRIB_RETURN_IF_ERROR(AddExtension(c, ca.cert.get(), NID_key_usage, "critical,digitalSignature"));
  TRIB_RETURN_IF_ERROR(AddExtension(c, ca.cert.get(), NID_ext_key_usage, eku));
  TRIB_RETURN_IF_ERROR(AddExtension(c, ca.cert.get(), NID_subject_key_identifier, "hash"));
  TRIB_RETURN_IF_ERROR(
      AddExtension(c, ca.cert.get(), NID_authority_key_identifier, "keyid:always"));
  TRIB_RETURN_IF_ERROR(AddSubjectAltNames(c, sans));
  TRIB_RETURN_IF_ERROR(Sign(c, ca.cert.get(), ca.key.get()));
  return Encode(c, key.get());
}

}  // namespace

Result<PemPair> MakeCaCertificate(const std::string& common_name, const CertOptions& options) {
  TRIB_RETURN_IF_ERROR(ValidateCommonName(common_name));
  TRIB_RETURN_IF_ERROR(ValidateOptions(options));
  TRIB_ASSIGN_OR_RETURN(EvpPkeyPtr key, GenerateKey());
  TRIB_ASSIGN_OR_RETURN(X509Ptr cert, NewCertificate(common_name, key.get(), options));
  X509* c = cert.get();
  TRIB_RETURN_IF_ERROR(AddExtension(c, c, NID_basic_constraints, "critical,CA:TRUE"));
  TRIB_RETURN_IF_ERROR(AddExtension(c, c, NID_key_usage, "critical,keyCertSign,cRLSign"));
  TRIB_RETURN_IF_ERROR(AddExtension(c, c, NID_subject_key_identifier, "hash"));
  TRIB_RETURN_IF_ERROR(Sign(c, c, key.get()));
  return Encode(c, key.get());
}

namespace {

// The SANs of a server: DNS names and IP addresses (at least one); the CN is the first name that
// fits in a CN (informational: clients match SANs).
Status AddServerNames(GENERAL_NAMES* sans, const std::vector<std::string>& dns_names,
                      const std::vector<std::string>& ip_addresses, std::string* cn) {
  if (dns_names.empty() && ip_addresses.empty())
    return Status::InvalidArgument(
        "a server certificate needs at least one DNS name or IP address");
  for (const std::string& name : dns_names) {
    TRIB_RETURN_IF_ERROR(ValidateDnsName(name));
    TRIB_RETURN_IF_ERROR(AddGeneralName(sans, GEN_DNS, name));
  }
  for (const std::string& ip : ip_addresses) TRIB_RETURN_IF_ERROR(AddIpName(sans, ip));
  for (const std::string& name : dns_names.empty() ? ip_addresses : dns_names) {
    if (name.size() <= kMaxCommonName) {
      *cn = name;
      break;
    }
  }
  return Status::Ok();
}

}  // namespace

Result<PemPair> MakeServerCertificate(const PemPair& ca, const std::vector<std::string>& dns_names,
                                      const std::vector<std::string>& ip_addresses,
                                      const CertOptions& options) {
  TRIB_RETURN_IF_ERROR(ValidateOptions(options));
  GeneralNamesPtr sans(sk_GENERAL_NAME_new_null());
  if (!sans) return OpenSslStatus(StatusCode::kInternal, "sk_GENERAL_NAME_new_null");
  std::string cn = "tributary-server";
  TRIB_RETURN_IF_ERROR(AddServerNames(sans.get(), dns_names, ip_addresses, &cn));
  return IssueLeaf(ca, cn, "serverAuth", sans.get(), options);
}

Result<PemPair> MakeAggregatorCertificate(const PemPair& ca, const std::string& aggregator_id,
                                          const std::vector<std::string>& dns_names,
                                          const std::vector<std::string>& ip_addresses,
                                          const CertOptions& options) {
  TRIB_RETURN_IF_ERROR(ValidateClientId(aggregator_id));
  TRIB_RETURN_IF_ERROR(ValidateOptions(options));
  GeneralNamesPtr sans(sk_GENERAL_NAME_new_null());
  if (!sans) return OpenSslStatus(StatusCode::kInternal, "sk_GENERAL_NAME_new_null");
  std::string unused_cn;
  TRIB_RETURN_IF_ERROR(AddServerNames(sans.get(), dns_names, ip_addresses, &unused_cn));
  TRIB_RETURN_IF_ERROR(AddGeneralName(sans.get(), GEN_URI, AggregatorIdUri(aggregator_id)));
  return IssueLeaf(ca, aggregator_id, "serverAuth,clientAuth", sans.get(), options);
}

Result<PemPair> MakeClientCertificate(const PemPair& ca, const std::string& client_id,
                                      const CertOptions& options) {
  TRIB_RETURN_IF_ERROR(ValidateClientId(client_id));
  TRIB_RETURN_IF_ERROR(ValidateOptions(options));
  GeneralNamesPtr sans(sk_GENERAL_NAME_new_null());
  if (!sans) return OpenSslStatus(StatusCode::kInternal, "sk_GENERAL_NAME_new_null");
  TRIB_RETURN_IF_ERROR(AddGeneralName(sans.get(), GEN_URI, ClientIdUri(client_id)));
  return IssueLeaf(ca, client_id, "clientAuth", sans.get(), options);
}

}  // namespace tributary
