#include "protocol/tls_failure.h"

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <boost/asio/ssl/error.hpp>
#include <string>

namespace tributary {
namespace {

struct Meaning {
  StatusCode code;
  const char* text;  // nullptr: OpenSSL's reason says it all
};

// What an OpenSSL reason (ERR_GET_REASON of a queued error) means for retrying.
Meaning MeaningOf(int reason) {
  switch (reason) {
    case SSL_R_TLSV1_ALERT_UNKNOWN_CA:
      return {StatusCode::kPermissionDenied,
              "the peer does not trust the CA that issued this side's certificate"};
    case SSL_R_SSLV3_ALERT_CERTIFICATE_EXPIRED:
      return {StatusCode::kPermissionDenied,
              "the peer says this side's certificate has expired (or is not valid yet)"};
    case SSL_R_SSLV3_ALERT_CERTIFICATE_REVOKED:
      return {StatusCode::kPermissionDenied, "the peer says this side's certificate is revoked"};
    case SSL_R_SSLV3_ALERT_BAD_CERTIFICATE:
    case SSL_R_SSLV3_ALERT_UNSUPPORTED_CERTIFICATE:
    case SSL_R_SSLV3_ALERT_CERTIFICATE_UNKNOWN:
      return {StatusCode::kPermissionDenied, "the peer refused this side's certificate"};
    case SSL_R_TLSV1_ALERT_ACCESS_DENIED:
      return {StatusCode::kPermissionDenied, "the peer denied this side access"};
    case SSL_R_TLSV13_ALERT_CERTIFICATE_REQUIRED:
      return {StatusCode::kPermissionDenied,
              "the peer requires a certificate and this side sent none"};
    case SSL_R_TLSV1_ALERT_PROTOCOL_VERSION:
    case SSL_R_UNSUPPORTED_PROTOCOL:
    case SSL_R_NO_PROTOCOLS_AVAILABLE:
      return {StatusCode::kFailedPrecondition, "no TLS version is acceptable to both sides"};
    default:
      return {StatusCode::kUnavailable, nullptr};
  }
}

}  // namespace

Status TlsFailureStatus(const boost::system::error_code& ec, std::string_view what) {
  std::string message(what);
  message += ": ";
  message += ec.message();
  Meaning meaning{StatusCode::kUnavailable, nullptr};
  if (ec.category() == boost::asio::error::get_ssl_category()) {
    const auto packed = static_cast<unsigned long>(ec.value());  // TlsStream keeps ERR_get_error()
    if (ERR_GET_LIB(packed) == ERR_LIB_SSL) meaning = MeaningOf(ERR_GET_REASON(packed));
  }
  if (meaning.text) {
    message += " (";
    message += meaning.text;
    message += ")";
  }
  return Status(meaning.code, std::move(message));
}

}  // namespace tributary
