// TlsTransport: the Transport over TCP + TLS 1.3 (Boost.Asio + OpenSSL), mutual TLS by default.
//
// Contexts come from crypto/tls_context.h (MakeServerTlsContext / MakeClientTlsContext); each
// session additionally pins TLS 1.3 as its minimum version. The server side is TlsListener (the
// handshake cap and timeout, client id from the certificate, deny list). The client side resolves,
// connects and handshakes under handshake_timeout, sending SNI and checking the server
// certificate's SAN against the host it dialled, or against options.server_name when that is set
// (ConfigureClientSsl); a mismatch, an unknown CA or
// an expired certificate fails the connect with PermissionDenied naming OpenSSL's verify error; an
// alert from the server fails it as TlsFailureStatus (tls_failure.h) says; other failures
// (nothing listening, a reset, a timeout) are Unavailable or DeadlineExceeded.
//
// Note that in TLS 1.3 the client finishes its handshake before the server has checked the client
// certificate: a client whose certificate the server refuses sees Connect succeed and then the
// connection close with the server's alert (PermissionDenied, from the connection's first read).
//
// Thread safety: all methods may be called from any thread.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ssl/context.hpp>
#include <memory>

#include "protocol/byte_stream.h"
#include "protocol/transport.h"

namespace tributary {

struct TlsTransportOptions {
  TransportOptions transport;
  // Needed by Listen: a server context (MakeServerTlsContext).
  std::shared_ptr<boost::asio::ssl::context> server_context;
  // Needed by Connect: a client context with this client's certificate (MakeClientTlsContext).
  std::shared_ptr<boost::asio::ssl::context> client_context;
  // Connect: the name (or IP address) the server's certificate must carry, also sent as SNI.
  // Empty: the host of the address dialled. Set it to dial an address the certificate does not
  // name (an IP, a load balancer's name) while verifying the name it does.
  std::string server_name = {};
};

class TlsTransport final : public Transport {
 public:
  using RawConnectHandler = std::function<void(Result<std::unique_ptr<ByteStream>>)>;

  // InvalidArgument when the options are out of range or neither context is set.
  static Result<std::unique_ptr<TlsTransport>> Create(boost::asio::io_context& io,
                                                      TlsTransportOptions options);

  // `address` is "host:port" ("127.0.0.1:0" picks a free port; see Listener::address()). The
  // listener is a TlsListener (for its stats). Call Stop() on it to stop accepting: the accept
  // loop keeps it alive until then.
  Result<std::shared_ptr<Listener>> Listen(const std::string& address,
                                           AcceptHandler on_accept) override;
  void Connect(const std::string& address, ConnectHandler on_connect) override;

  // Connects and handshakes like Connect, then hands back the raw TLS byte stream instead of a
  // framed connection (tests send hand-made bytes through it).
  void ConnectRaw(const std::string& address, RawConnectHandler on_connect);

 private:
  TlsTransport(boost::asio::io_context& io, TlsTransportOptions options);

  boost::asio::io_context& io_;
  TlsTransportOptions options_;
};

}  // namespace tributary
