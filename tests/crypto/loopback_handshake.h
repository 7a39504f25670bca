// A real TLS handshake over TCP on 127.0.0.1 between two Boost.Asio ssl::streams on one
// io_context, bounded by a wall-clock limit instead of sleeps.
//
// The server accepts, handshakes, reads the peer's client id, writes one byte 'k' and closes. The
// client connects, (optionally) runs ConfigureClientSsl, handshakes and reads one byte. In TLS 1.3
// the client finishes its handshake before the server has checked the client certificate, so
// "the server accepted me" shows up on the client as receiving that byte.
#pragma once

#include <gtest/gtest.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/write.hpp>
#include <chrono>
#include <optional>
#include <string>

#include "crypto/tls_context.h"

namespace tributary::testing {

struct HandshakeOutcome {
  bool finished = false;                     // everything completed within the time limit
  boost::system::error_code server_ec;       // server accept + handshake
  boost::system::error_code client_ec;       // client connect + handshake
  boost::system::error_code client_read_ec;  // client reading the server's byte
  bool client_got_byte = false;
  long server_verify = X509_V_OK;  // SSL_get_verify_result on each side after its handshake
  long client_verify = X509_V_OK;
  int server_version = 0;     // SSL_version after a successful handshake
  std::string cipher;         // the negotiated cipher suite (server side)
  int client_resumable = -1;  // SSL_SESSION_is_resumable on the client after reading the byte
  Result<std::string> peer_id = Status::Internal("server handshake did not complete");
  Result<PeerIdentity> peer_identity = Status::Internal("server handshake did not complete");
  Status configure_status;

  // Both sides agreed: the client was accepted and read the server's byte.
  bool Accepted() const { return finished && !server_ec && !client_ec && client_got_byte; }
};

// OpenSSL's reason code inside an Asio ssl error_code (0 for other categories).
inline int SslReason(const boost::system::error_code& ec) {
  if (ec.category() != boost::asio::error::get_ssl_category()) return 0;
  return ERR_GET_REASON(static_cast<unsigned long>(ec.value()));
}

inline HandshakeOutcome RunLoopbackHandshake(
    boost::asio::ssl::context& server_ctx, boost::asio::ssl::context& client_ctx,
    std::optional<std::string> server_host,
    std::chrono::milliseconds limit = std::chrono::seconds(20)) {
  namespace asio = boost::asio;
  namespace ssl = asio::ssl;
  using asio::ip::tcp;
  HandshakeOutcome out;
  asio::io_context ioc;
  tcp::acceptor acceptor(ioc, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  ssl::stream<tcp::socket> server(ioc, server_ctx);
  ssl::stream<tcp::socket> client(ioc, client_ctx);
  const char kByte = 'k';
  char received = 0;
  boost::system::error_code ignored;

  acceptor.async_accept(server.next_layer(), [&](const boost::system::error_code& ec) {
    if (ec) {
      out.server_ec = ec;
      return;
    }
    server.async_handshake(ssl::stream_base::server, [&](const boost::system::error_code& hec) {
      out.server_ec = hec;
      out.server_verify = SSL_get_verify_result(server.native_handle());
      if (hec) {
        server.next_layer().close(ignored);
        return;
      }
      out.server_version = SSL_version(server.native_handle());
      out.cipher = SSL_get_cipher_name(server.native_handle());
      out.peer_id = PeerClientId(server.native_handle());
      out.peer_identity = PeerIdentityOf(server.native_handle());
      asio::async_write(
          server, asio::buffer(&kByte, 1),
          [&](const boost::system::error_code&, size_t) { server.next_layer().close(ignored); });
    });
  });

  if (server_host) {
    out.configure_status = ConfigureClientSsl(client.native_handle(), *server_host);
    EXPECT_TRUE(out.configure_status.ok()) << out.configure_status;
  }
  client.next_layer().async_connect(
      acceptor.local_endpoint(), [&](const boost::system::error_code& ec) {
        if (ec) {
          out.client_ec = ec;
          return;
        }
        client.async_handshake(ssl::stream_base::client, [&](const boost::system::error_code& hec) {
          out.client_ec = hec;
          out.client_verify = SSL_get_verify_result(client.native_handle());
          if (hec) {
            client.next_layer().close(ignored);
            return;
          }
          asio::async_read(client, asio::buffer(&received, 1),
                           [&](const boost::system::error_code& rec, size_t n) {
                             out.client_read_ec = rec;
                             out.client_got_byte = (n == 1 && received == kByte);
                             // Any session ticket came before the byte.
                             out.client_resumable =
                                 SSL_SESSION_is_resumable(SSL_get_session(client.native_handle()));
                             client.next_layer().close(ignored);
                           });
        });
      });

  ioc.run_for(limit);
  out.finished = ioc.stopped();
  EXPECT_TRUE(out.finished) << "handshake did not finish within " << limit.count() << " ms";
  return out;
}

}  // namespace tributary::testing
