#include "crypto/cert_info.h"

#include <arpa/inet.h>
#include <openssl/x509v3.h>

#include <ctime>

#include "crypto/openssl_util.h"

namespace tributary {
namespace {

using crypto_internal::Asn1ToString;
using crypto_internal::GeneralNamesPtr;
using crypto_internal::ParseCertificate;
using crypto_internal::X509Ptr;

std::string FormatTime(const ASN1_TIME* t) {
  struct tm tm {};
  if (t == nullptr || ASN1_TIME_to_tm(t, &tm) != 1) return "?";
  char buf[64];
  std::strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S UTC", &tm);
  return buf;
}

std::string FormatIp(const ASN1_OCTET_STRING* ip) {
  char buf[INET6_ADDRSTRLEN] = {};
  const int n = ASN1_STRING_length(ip);
  const unsigned char* data = ASN1_STRING_get0_data(ip);
  if (n == 4)
    inet_ntop(AF_INET, data, buf, sizeof(buf));
  else if (n == 16)
    inet_ntop(AF_INET6, data, buf, sizeof(buf));
  else
    return "?";
  return buf;
}

}  // namespace

Result<CertificateInfo> DescribeCertificate(const std::string& cert_pem) {
  TRIB_ASSIGN_OR_RETURN(X509Ptr cert, ParseCertificate(cert_pem, "certificate"));
  CertificateInfo info;
  X509_NAME* subject = X509_get_subject_name(cert.get());
  int idx = X509_NAME_get_index_by_NID(subject, NID_commonName, -1);
  if (idx >= 0)
    info.subject_cn = Asn1ToString(X509_NAME_ENTRY_get_data(X509_NAME_get_entry(subject, idx)));
  GeneralNamesPtr sans(static_cast<GENERAL_NAMES*>(
      X509_get_ext_d2i(cert.get(), NID_subject_alt_name, nullptr, nullptr)));
  for (int i = 0; sans && i < sk_GENERAL_NAME_num(sans.get()); ++i) {
    const GENERAL_NAME* gn = sk_GENERAL_NAME_value(sans.get(), i);
    if (gn->type == GEN_DNS)
      info.dns_names.push_back(Asn1ToString(gn->d.dNSName));
    else if (gn->type == GEN_URI)
      info.uris.push_back(Asn1ToString(gn->d.uniformResourceIdentifier));
    else if (gn->type == GEN_IPADD)
      info.ip_addresses.push_back(FormatIp(gn->d.iPAddress));
  }
  info.not_before = FormatTime(X509_get0_notBefore(cert.get()));
  info.not_after = FormatTime(X509_get0_notAfter(cert.get()));
  info.is_ca = X509_check_ca(cert.get()) >= 1;
  return info;
}

}  // namespace tributary
