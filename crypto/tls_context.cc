#include "crypto/tls_context.h"

#include <arpa/inet.h>
#include <openssl/x509v3.h>

#include <boost/system/system_error.hpp>
#include <string_view>
#include <vector>

#include "crypto/client_id.h"
#include "crypto/openssl_util.h"

namespace tributary {
namespace {

using crypto_internal::Asn1ToString;
using crypto_internal::CheckKeyMatchesCert;
using crypto_internal::EvpPkeyPtr;
using crypto_internal::GeneralNamesPtr;
using crypto_internal::OpenSslStatus;
using crypto_internal::ParseCertificates;
using crypto_internal::ParsePrivateKey;
using crypto_internal::ReadPemFile;
using crypto_internal::X509Ptr;
namespace ssl = boost::asio::ssl;

enum class Role { kServer, kClient };

// Names for the three inputs in error messages: file paths, or the TlsPem field names.
struct Sources {
  std::string ca, cert, key;
};

constexpr char kTls13Ciphersuites[] =
    "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256";
constexpr unsigned char kSessionIdContext[] = "tributary";

Result<TlsPem> ReadConfigFiles(const TlsConfig& config) {
  const std::pair<const std::string*, const char*> fields[] = {
      {&config.ca_cert_file, "ca_cert_file"},
      {&config.cert_file, "cert_file"},
      {&config.key_file, "key_file"}};
  for (const auto& [path, name] : fields) {
    if (path->empty()) return Status::InvalidArgument(std::string("TLS ") + name + " is not set");
  }
  TlsPem pem;
  TRIB_ASSIGN_OR_RETURN(pem.ca_cert_pem, ReadPemFile(config.ca_cert_file));
  TRIB_ASSIGN_OR_RETURN(pem.cert_pem, ReadPemFile(config.cert_file));
  TRIB_ASSIGN_OR_RETURN(pem.key_pem, ReadPemFile(config.key_file));
  return pem;
}

Sources FileSources(const TlsConfig& c) { return {c.ca_cert_file, c.cert_file, c.key_file}; }
Sources PemSources() { return {"ca_cert_pem", "cert_pem", "key_pem"}; }

Status Wrap(const boost::system::error_code& ec, std::string_view what) {
  if (!ec) return Status::Ok();
  return OpenSslStatus(StatusCode::kInternal, std::string(what) + ": " + ec.message());
}

Result<SslContextPtr> BuildContext(Role role, const TlsPem& pem, const Sources& src,
                                   bool require_client_cert) {
  // Parse everything first so that errors name the input rather than an OpenSSL call.
  TRIB_ASSIGN_OR_RETURN(std::vector<X509Ptr> cas, ParseCertificates(pem.ca_cert_pem, src.ca));
  TRIB_ASSIGN_OR_RETURN(std::vector<X509Ptr> chain, ParseCertificates(pem.cert_pem, src.cert));
  TRIB_ASSIGN_OR_RETURN(EvpPkeyPtr key, ParsePrivateKey(pem.key_pem, src.key));
  TRIB_RETURN_IF_ERROR(CheckKeyMatchesCert(chain.front().get(), src.cert, key.get(), src.key));

  SslContextPtr ctx;
  try {
    ctx = std::make_shared<ssl::context>(role == Role::kServer ? ssl::context::tls_server
                                                               : ssl::context::tls_client);
  } catch (const boost::system::system_error& e) {
    return OpenSslStatus(StatusCode::kInternal,
                         std::string("creating an SSL context: ") + e.what());
  }
  SSL_CTX* native = ctx->native_handle();
  if (SSL_CTX_set_min_proto_version(native, TLS1_3_VERSION) != 1 ||
      SSL_CTX_set_max_proto_version(native, TLS1_3_VERSION) != 1)
    return OpenSslStatus(StatusCode::kInternal, "restricting the context to TLS 1.3");
  // AES-128-GCM first (TLS 1.3's mandatory suite; fewer AES rounds than OpenSSL's default first
  // choice, AES-256-GCM); the server's order decides, so both ends agree on it.
  if (SSL_CTX_set_ciphersuites(native, kTls13Ciphersuites) != 1)
    return OpenSslStatus(StatusCode::kInternal, "setting the TLS 1.3 cipher suites");
  if (role == Role::kServer) {
    SSL_CTX_set_options(native, SSL_OP_CIPHER_SERVER_PREFERENCE);
    // No session tickets: clients do not resume (each connection is a full mutual-TLS handshake,
    // so a revoked client cannot ride an old session), and each ticket costs the client memory
    // and both ends bytes.
    SSL_CTX_set_num_tickets(native, 0);
  }

  // Trust exactly the given CAs.
  X509_STORE* store = SSL_CTX_get_cert_store(native);
  for (const X509Ptr& ca : cas) {
    if (X509_STORE_add_cert(store, ca.get()) != 1)
      return OpenSslStatus(StatusCode::kInvalidArgument, "adding a CA certificate from " + src.ca);
  }

  if (SSL_CTX_use_certificate(native, chain.front().get()) != 1)
    return OpenSslStatus(StatusCode::kInvalidArgument, "using certificate " + src.cert);
  for (size_t i = 1; i < chain.size(); ++i) {
    if (SSL_CTX_add1_chain_cert(native, chain[i].get()) != 1)
      return OpenSslStatus(StatusCode::kInvalidArgument,
                           "adding chain certificate " + std::to_string(i) + " of " + src.cert);
  }
  if (SSL_CTX_use_PrivateKey(native, key.get()) != 1)
    return OpenSslStatus(StatusCode::kInvalidArgument, "using private key " + src.key);

  // OpenSSL decodes a certificate's extensions (key identifiers, basic constraints, key usage)
  // lazily, on first use, under the certificate's own lock, and later readers skip the lock once
  // a flag says the cache is filled. Every connection made from this context shares these
  // certificates, so the first concurrent handshakes would race on that fill (ThreadSanitizer
  // reports it). Fill the caches now, while one thread owns the context.
  for (const std::vector<X509Ptr>* certs : {&cas, &chain}) {
    for (const X509Ptr& cert : *certs) X509_check_purpose(cert.get(), -1, 0);
  }

  boost::system::error_code ec;
  if (role == Role::kServer) {
    ssl::verify_mode mode = ssl::verify_peer;
    if (require_client_cert) mode |= ssl::verify_fail_if_no_peer_cert;
    ctx->set_verify_mode(mode, ec);
    TRIB_RETURN_IF_ERROR(Wrap(ec, "set_verify_mode"));
    // Tell clients which CAs we accept (CertificateRequest certificate_authorities).
    for (const X509Ptr& ca : cas) {
      if (SSL_CTX_add_client_CA(native, ca.get()) != 1)
        return OpenSslStatus(StatusCode::kInternal, "SSL_CTX_add_client_CA");
    }
    // Required for session resumption when client certificates are verified.
    if (SSL_CTX_set_session_id_context(native, kSessionIdContext, sizeof(kSessionIdContext) - 1) !=
        1)
      return OpenSslStatus(StatusCode::kInternal, "SSL_CTX_set_session_id_context");
  } else {
    ctx->set_verify_mode(ssl::verify_peer, ec);
    TRIB_RETURN_IF_ERROR(Wrap(ec, "set_verify_mode"));
  }
  return ctx;
}

bool IsIpLiteral(const std::string& host) {
  unsigned char buf[16];
  return inet_pton(AF_INET, host.c_str(), buf) == 1 || inet_pton(AF_INET6, host.c_str(), buf) == 1;
}

}  // namespace

Result<SslContextPtr> MakeServerTlsContext(const TlsConfig& config, bool require_client_cert) {
  TRIB_ASSIGN_OR_RETURN(TlsPem pem, ReadConfigFiles(config));
  return BuildContext(Role::kServer, pem, FileSources(config), require_client_cert);
}

Result<SslContextPtr> MakeServerTlsContext(const TlsPem& pem, bool require_client_cert) {
  return BuildContext(Role::kServer, pem, PemSources(), require_client_cert);
}

Result<SslContextPtr> MakeClientTlsContext(const TlsConfig& config) {
  TRIB_ASSIGN_OR_RETURN(TlsPem pem, ReadConfigFiles(config));
  return BuildContext(Role::kClient, pem, FileSources(config), false);
}

Result<SslContextPtr> MakeClientTlsContext(const TlsPem& pem) {
  return BuildContext(Role::kClient, pem, PemSources(), false);
}

Status ConfigureClientSsl(SSL* ssl, const std::string& server_host) {
  if (ssl == nullptr) return Status::InvalidArgument("ConfigureClientSsl: SSL* is null");
  std::string host = server_host;
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  if (host.empty()) return Status::InvalidArgument("server host name is empty");
  if (host.find('\0') != std::string::npos)
    return Status::InvalidArgument("server host name contains a NUL byte");
  X509_VERIFY_PARAM* param = SSL_get0_param(ssl);
  if (IsIpLiteral(host)) {
    if (X509_VERIFY_PARAM_set1_ip_asc(param, host.c_str()) != 1)
      return OpenSslStatus(StatusCode::kInvalidArgument, "verifying server address " + host);
    return Status::Ok();
  }
  if (SSL_set_tlsext_host_name(ssl, host.c_str()) != 1)
    return OpenSslStatus(StatusCode::kInvalidArgument, "setting SNI to " + host);
  SSL_set_hostflags(ssl, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
  if (SSL_set1_host(ssl, host.c_str()) != 1)
    return OpenSslStatus(StatusCode::kInvalidArgument, "verifying server name " + host);
  return Status::Ok();
}

Result<std::string> PeerClientId(SSL* ssl) {
  TRIB_ASSIGN_OR_RETURN(PeerIdentity who, PeerIdentityOf(ssl));
  if (who.role != PeerRole::kClient)
    return Status::PermissionDenied("the peer certificate is aggregator '" + who.id +
                                    "''s, not a client's");
  return who.id;
}

Result<PeerIdentity> PeerIdentityOf(SSL* ssl) {
  if (ssl == nullptr) return Status::InvalidArgument("PeerIdentityOf: SSL* is null");
  X509* peer = SSL_get0_peer_certificate(ssl);
  if (peer == nullptr) return Status::PermissionDenied("the peer presented no certificate");
  const long verify = SSL_get_verify_result(ssl);
  if (verify != X509_V_OK)
    return Status::PermissionDenied(std::string("the peer certificate did not verify: ") +
                                    X509_verify_cert_error_string(verify));
  return crypto_internal::IdentityOfCertificate(peer);
}

namespace crypto_internal {

Result<PeerIdentity> IdentityOfCertificate(X509* peer) {
  // The SAN URI is authoritative; several URIs must agree on one id and one role.
  PeerIdentity who;
  bool from_uri = false;
  GeneralNamesPtr sans(
      static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(peer, NID_subject_alt_name, nullptr, nullptr)));
  for (int i = 0; sans && i < sk_GENERAL_NAME_num(sans.get()); ++i) {
    const GENERAL_NAME* gn = sk_GENERAL_NAME_value(sans.get(), i);
    if (gn->type != GEN_URI) continue;
    const std::string uri = Asn1ToString(gn->d.uniformResourceIdentifier);
    PeerRole role;
    std::string candidate;
    if (uri.starts_with(kClientIdUriPrefix)) {
      role = PeerRole::kClient;
      candidate = uri.substr(kClientIdUriPrefix.size());
    } else if (uri.starts_with(kAggregatorIdUriPrefix)) {
      role = PeerRole::kAggregator;
      candidate = uri.substr(kAggregatorIdUriPrefix.size());
    } else {
      continue;
    }
    if (from_uri && role != who.role)
      return Status::PermissionDenied(
          "the peer certificate carries both a client and an aggregator id ('" + who.id +
          "' and '" + candidate + "')");
    if (from_uri && candidate != who.id)
      return Status::PermissionDenied("the peer certificate carries two " +
                                      std::string(PeerRoleName(role)) + " ids: '" + who.id +
                                      "' and '" + candidate + "'");
    who.id = std::move(candidate);
    who.role = role;
    from_uri = true;
  }
  if (!from_uri) {
    X509_NAME* subject = X509_get_subject_name(peer);
    const int idx = X509_NAME_get_index_by_NID(subject, NID_commonName, -1);
    if (idx < 0)
      return Status::PermissionDenied("the peer certificate carries no client id (no SAN URI " +
                                      std::string(kClientIdUriPrefix) + "<id> and no CN)");
    if (X509_NAME_get_index_by_NID(subject, NID_commonName, idx) >= 0)
      return Status::PermissionDenied("the peer certificate has more than one CN");
    who.id = Asn1ToString(X509_NAME_ENTRY_get_data(X509_NAME_get_entry(subject, idx)));
  }
  Status valid = ValidateClientId(who.id);
  if (!valid.ok())
    return Status::PermissionDenied("the peer certificate's " +
                                    std::string(PeerRoleName(who.role)) +
                                    " id is invalid: " + valid.message());
  return who;
}

Result<std::string> ClientIdOfCertificate(X509* peer) {
  TRIB_ASSIGN_OR_RETURN(PeerIdentity who, IdentityOfCertificate(peer));
  if (who.role != PeerRole::kClient)
    return Status::PermissionDenied("the peer certificate is aggregator '" + who.id +
                                    "''s, not a client's");
  return who.id;
}

}  // namespace crypto_internal
}  // namespace tributary
