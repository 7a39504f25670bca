// TLS 1.3 contexts for mutual TLS between coordinator and clients, on Boost.Asio + OpenSSL.
//
// Every context allows TLS 1.3 only (min and max protocol version TLS1_3): a TLS 1.2 peer fails the
// handshake. Each side presents its certificate chain and verifies the peer against the CA
// certificate(s) it was given, and nothing else (no system trust store).
//   Server: verify_peer | verify_fail_if_no_peer_cert, so a client without a certificate from the
//           CA is refused (unless require_client_cert=false, for tests of that very case). OpenSSL
//           also checks the client certificate's EKU (clientAuth) and validity period.
//   Client: verify_peer; call ConfigureClientSsl on each connection's SSL* before the handshake to
//           send SNI and check the server's name (EKU serverAuth, SAN match).
// Cipher suites, in order: TLS_AES_128_GCM_SHA256, TLS_AES_256_GCM_SHA384 and
// TLS_CHACHA20_POLY1305_SHA256; the server's order decides.
// After the handshake the server reads the client's identity with PeerClientId; a client id never
// comes from a message field.
//
// Errors name the file (or, for TlsPem, the field) that was missing, unreadable, not PEM, or whose
// key does not match its certificate. The returned context is immutable in use: share it across
// threads and streams freely. ConfigureClientSsl and PeerClientId touch only their SSL*, which the
// caller must not use concurrently (one strand per stream).
#pragma once

#include <openssl/ssl.h>

#include <boost/asio/ssl/context.hpp>
#include <memory>
#include <string>

#include "crypto/client_id.h"
#include "tributary/result.h"

namespace tributary {

// PEM file paths. ca_cert_file may hold several CA certificates (a bundle); cert_file may hold the
// leaf certificate followed by intermediates.
struct TlsConfig {
  std::string ca_cert_file;
  std::string cert_file;
  std::string key_file;
};

// The same material in memory (tests, embedding apps that keep keys elsewhere).
struct TlsPem {
  std::string ca_cert_pem;
  std::string cert_pem;
  std::string key_pem;
};

using SslContextPtr = std::shared_ptr<boost::asio::ssl::context>;

Result<SslContextPtr> MakeServerTlsContext(const TlsConfig& config,
                                           bool require_client_cert = true);
Result<SslContextPtr> MakeServerTlsContext(const TlsPem& pem, bool require_client_cert = true);

Result<SslContextPtr> MakeClientTlsContext(const TlsConfig& config);
Result<SslContextPtr> MakeClientTlsContext(const TlsPem& pem);

// Prepares one client connection to `server_host` (a DNS name, or an IPv4/IPv6 literal, brackets
// allowed: "[::1]"): sends it as SNI (DNS names only; RFC 6066 forbids IP literals in SNI) and
// makes the handshake fail unless the server certificate has a matching SAN (DNS, no partial
// wildcards; or IP). InvalidArgument for an empty host.
Status ConfigureClientSsl(SSL* ssl, const std::string& server_host);

// After a completed handshake on the server side: the authenticated client id. It comes from the
// peer certificate's SAN URI tributary://client/<id>, or, when there is none, from its CN.
// PermissionDenied when there is no peer certificate, it did not verify, it carries conflicting
// ids, or the id is malformed (client_id.h).
Result<std::string> PeerClientId(SSL* ssl);
// The same for a peer that may be a client or an aggregator of the tier (client_id.h): its id and
// role. The coordinator's listener uses this; PeerClientId refuses an aggregator's certificate.
Result<PeerIdentity> PeerIdentityOf(SSL* ssl);

}  // namespace tributary
