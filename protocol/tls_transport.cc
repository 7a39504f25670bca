#include "protocol/tls_transport.h"

#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>

#include "crypto/tls_context.h"
#include "protocol/framed_connection.h"
#include "protocol/tls_failure.h"
#include "protocol/tls_listener.h"
#include "protocol/tls_stream.h"
#include "protocol/transport_util.h"

namespace tributary {

namespace asio = boost::asio;
namespace ssl = boost::asio::ssl;
using asio::ip::tcp;
using boost::system::error_code;

namespace {

// The client side of one connection: resolve -> connect -> TLS handshake, all on one strand and
// under one deadline (handshake_timeout).
class TlsClientConnect : public std::enable_shared_from_this<TlsClientConnect> {
 public:
  using Done = std::function<void(Result<std::unique_ptr<TlsStream>>, std::string remote)>;

  TlsClientConnect(asio::io_context& io, std::shared_ptr<ssl::context> ctx,
                   const TransportOptions& options, std::string host, std::string port,
                   std::string verify_name, Done done)
      : strand_(asio::make_strand(io)),
        resolver_(strand_),
        ctx_(std::move(ctx)),
        socket_(strand_),
        timer_(strand_),
        options_(options),
        host_(std::move(host)),
        port_(std::move(port)),
        verify_name_(verify_name.empty() ? host_ : std::move(verify_name)),
        done_(std::move(done)) {}

  void Run() {
    asio::post(strand_, [self = shared_from_this()] { self->do_resolve(); });
  }

 private:
  std::string what() const {
    return host_ + ":" + port_ +
           (verify_name_ == host_ ? std::string() : " (as '" + verify_name_ + "')");
  }

  void do_resolve() {
    timer_.expires_after(options_.handshake_timeout);
    timer_.async_wait([self = shared_from_this()](const error_code& ec) {
      if (ec == asio::error::operation_aborted || self->finished_) return;
      self->timed_out_ = true;
      self->resolver_.cancel();
      error_code ignored;
      self->socket_.close(ignored);
      if (self->stream_) self->stream_->Close();
    });
    resolver_.async_resolve(
        host_, port_,
        [self = shared_from_this()](const error_code& ec, tcp::resolver::results_type results) {
          self->on_resolve(ec, std::move(results));
        });
  }

  void on_resolve(const error_code& ec, tcp::resolver::results_type results) {
    if (ec) return fail(ec, "resolving");
    asio::async_connect(socket_, results,
                        [self = shared_from_this()](const error_code& e, const tcp::endpoint& ep) {
                          self->on_connect(e, ep);
                        });
  }

  void on_connect(const error_code& ec, const tcp::endpoint& endpoint) {
    if (ec) return fail(ec, "connecting to");
    remote_ = endpoint.address().to_string() + ":" + std::to_string(endpoint.port());
    Result<std::unique_ptr<TlsStream>> stream = TlsStream::Create(std::move(socket_), ctx_);
    if (!stream.ok()) return finish(stream.status());
    stream_ = std::move(*stream);
    SSL* ssl = stream_->native_handle();
    SSL_set_min_proto_version(ssl, TLS1_3_VERSION);
    const Status configured = ConfigureClientSsl(ssl, verify_name_);
    if (!configured.ok()) return finish(configured);
    stream_->AsyncHandshake(
        TlsStream::Role::kClient,
        [self = shared_from_this()](const error_code& e) { self->on_handshake(e); });
  }

  void on_handshake(const error_code& ec) {
    if (ec) return fail(ec, "TLS handshake with");
    finish(std::move(stream_));
  }

  void fail(const error_code& ec, const char* step) {
    if (timed_out_) {
      return finish(
          Status::DeadlineExceeded(std::string(step) + " " + what() + " timed out after " +
                                   std::to_string(options_.handshake_timeout.count()) + " ms"));
    }
    std::string message = std::string(step) + " " + what() + ": " + ec.message();
    const long verify = stream_ ? SSL_get_verify_result(stream_->native_handle()) : X509_V_OK;
    if (verify != X509_V_OK) {
      message +=
          std::string(" (certificate verify: ") + X509_verify_cert_error_string(verify) + ")";
      return finish(Status::PermissionDenied(std::move(message)));
    }
    // The server's alert (a protocol version it does not accept, say) is classified like one
    // after the handshake; anything else (reset, refused) is Unavailable.
    finish(TlsFailureStatus(ec, std::string(step) + " " + what()));
  }

  void finish(Result<std::unique_ptr<TlsStream>> result) {
    if (finished_) return;
    finished_ = true;
    timer_.cancel();
    if (!result.ok()) {
      error_code ignored;
      socket_.close(ignored);
      if (stream_) stream_->Close();
    }
    Done done = std::move(done_);
    done(std::move(result), remote_);
  }

  asio::any_io_executor strand_;
  tcp::resolver resolver_;
  std::shared_ptr<ssl::context> ctx_;
  tcp::socket socket_;  // until connected; then inside stream_
  std::unique_ptr<TlsStream> stream_;
  asio::steady_timer timer_;
  const TransportOptions options_;
  const std::string host_;
  const std::string port_;
  const std::string verify_name_;  // what the server's certificate must name
  std::string remote_;
  Done done_;
  bool finished_ = false;
  bool timed_out_ = false;
};

}  // namespace

Result<std::unique_ptr<TlsTransport>> TlsTransport::Create(asio::io_context& io,
                                                           TlsTransportOptions options) {
  TRIB_RETURN_IF_ERROR(options.transport.Validate());
  if (!options.server_context && !options.client_context) {
    return Status::InvalidArgument("TlsTransport needs a server_context, a client_context or both");
  }
  return std::unique_ptr<TlsTransport>(new TlsTransport(io, std::move(options)));
}

TlsTransport::TlsTransport(asio::io_context& io, TlsTransportOptions options)
    : io_(io), options_(std::move(options)) {}

Result<std::shared_ptr<Listener>> TlsTransport::Listen(const std::string& address,
                                                       AcceptHandler on_accept) {
  if (!options_.server_context) {
    return Status::FailedPrecondition("TlsTransport::Listen needs options.server_context");
  }
  if (!on_accept) return Status::InvalidArgument("Listen needs an accept handler");
  TRIB_ASSIGN_OR_RETURN(auto host_port, SplitHostPort(address));
  error_code ec;
  tcp::resolver resolver(io_);
  const auto results =
      resolver.resolve(host_port.first, host_port.second,
                       tcp::resolver::passive | tcp::resolver::numeric_service, ec);
  if (ec || results.empty()) {
    return Status::InvalidArgument("cannot resolve listen address '" + address +
                                   "': " + (ec ? ec.message() : "no addresses"));
  }
  TRIB_ASSIGN_OR_RETURN(std::shared_ptr<TlsListener> listener,
                        TlsListener::Start(io_, options_.server_context, options_.transport,
                                           results.begin()->endpoint(), std::move(on_accept)));
  return std::shared_ptr<Listener>(std::move(listener));
}

void TlsTransport::ConnectRaw(const std::string& address, RawConnectHandler on_connect) {
  Result<std::pair<std::string, std::string>> host_port = SplitHostPort(address);
  if (!options_.client_context || !host_port.ok()) {
    Status why =
        host_port.ok()
            ? Status::FailedPrecondition("TlsTransport::Connect needs options.client_context")
            : host_port.status();
    asio::post(io_, [on_connect = std::move(on_connect), why] { on_connect(why); });
    return;
  }
  std::make_shared<TlsClientConnect>(
      io_, options_.client_context, options_.transport, host_port->first, host_port->second,
      options_.server_name,
      [on_connect = std::move(on_connect)](Result<std::unique_ptr<TlsStream>> stream,
                                           const std::string&) {
        if (!stream.ok()) return on_connect(stream.status());
        on_connect(std::unique_ptr<ByteStream>(std::move(*stream)));
      })
      ->Run();
}

void TlsTransport::Connect(const std::string& address, ConnectHandler on_connect) {
  Result<std::pair<std::string, std::string>> host_port = SplitHostPort(address);
  if (!options_.client_context || !host_port.ok()) {
    Status why =
        host_port.ok()
            ? Status::FailedPrecondition("TlsTransport::Connect needs options.client_context")
            : host_port.status();
    asio::post(io_, [on_connect = std::move(on_connect), why] { on_connect(why); });
    return;
  }
  const TransportOptions& options = options_.transport;
  std::make_shared<TlsClientConnect>(
      io_, options_.client_context, options, host_port->first, host_port->second,
      options_.server_name,
      [on_connect = std::move(on_connect), options, host = host_port->first](
          Result<std::unique_ptr<TlsStream>> stream, const std::string& remote) {
        if (!stream.ok()) return on_connect(stream.status());
        on_connect(std::shared_ptr<Connection>(
            std::make_shared<FramedConnection>(std::move(*stream), PeerInfo{host, remote}, options,
                                               FramedConnection::Origin::kDialed)));
      })
      ->Run();
}

}  // namespace tributary
