#include "protocol/tls_listener.h"

#include <fmt/format.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>

#include "core/log.h"
#include "crypto/tls_context.h"
#include "protocol/framed_connection.h"
#include "protocol/tls_stream.h"
#include "protocol/transport_util.h"

namespace tributary {

namespace asio = boost::asio;
namespace ssl = boost::asio::ssl;
using asio::ip::tcp;
using boost::system::error_code;

namespace {

std::string EndpointString(const tcp::endpoint& ep) {
  const std::string ip = ep.address().to_string();
  return (ep.address().is_v6() ? "[" + ip + "]" : ip) + ":" + std::to_string(ep.port());
}

}  // namespace

// The server side of one TLS handshake. Holds the listener's handshake slot until it ends.
class TlsServerHandshake : public std::enable_shared_from_this<TlsServerHandshake> {
 public:
  TlsServerHandshake(std::unique_ptr<TlsStream> stream, std::string remote,
                     std::shared_ptr<TlsListener> listener)
      : listener_(std::move(listener)),
        stream_(std::move(stream)),
        timer_(stream_->executor()),
        remote_(std::move(remote)),
        source_(SourceAddress(remote_)) {}

  void Run() {
    asio::dispatch(stream_->executor(), [self = shared_from_this()] { self->wait_first_bytes(); });
  }

 private:
  // A connection that sends nothing is closed after first_bytes_timeout, long before the whole
  // handshake's deadline: it cannot sit on a slot.
  void wait_first_bytes() {
    timer_.expires_after(listener_->options_.first_bytes_timeout);
    timer_.async_wait([self = shared_from_this()](const error_code& ec) {
      if (ec == asio::error::operation_aborted || self->started_) return;
      self->silent_ = true;
      error_code ignored;
      self->stream_->socket().close(ignored);  // ends the wait with an error
    });
    stream_->socket().async_wait(tcp::socket::wait_read,
                                 [self = shared_from_this()](const error_code& ec) {
                                   self->timer_.cancel();
                                   if (ec || self->silent_) return self->end_silent(ec);
                                   self->started_ = true;
                                   self->do_handshake();
                                 });
  }

  void end_silent(const error_code& ec) {
    listener_->HandshakeEnded(source_);
    ++listener_->handshakes_failed_;
    if (silent_) {
      ++listener_->silent_;
      listener_->security_->Note("no ClientHello in time", source_,
                                 fmt::format("{} sent nothing within {} ms", remote_,
                                             listener_->options_.first_bytes_timeout.count()));
    } else {
      listener_->security_->Note("connection closed before the handshake", source_, ec.message());
    }
    stream_->Close();
  }

  void do_handshake() {
    SSL* ssl = stream_->native_handle();
    // Defence in depth: whatever the context says, this session speaks TLS 1.3 only and (unless
    // the options say otherwise) demands a client certificate.
    SSL_set_min_proto_version(ssl, TLS1_3_VERSION);
    if (listener_->options_.require_client_identity) {
      SSL_set_verify(ssl, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT,
                     SSL_get_verify_callback(ssl));
    }
    timer_.expires_after(listener_->options_.handshake_timeout);
    timer_.async_wait([self = shared_from_this()](const error_code& ec) {
      if (ec == asio::error::operation_aborted || self->done_) return;
      self->timed_out_ = true;
      error_code ignored;
      self->stream_->socket().close(ignored);  // ends the handshake with an error
    });
    stream_->AsyncHandshake(
        TlsStream::Role::kServer,
        [self = shared_from_this()](const error_code& ec) { self->on_handshake(ec); });
  }

  void on_handshake(const error_code& ec) {
    done_ = true;
    timer_.cancel();
    listener_->HandshakeEnded(source_);
    if (ec) return fail(ec);
    ++listener_->handshakes_ok_;
    const TransportOptions& options = listener_->options_;
    std::string client_id;
    PeerRole role = PeerRole::kClient;
    Result<PeerIdentity> id = PeerIdentityOf(stream_->native_handle());
    Status admitted;
    if (id.ok()) {
      client_id = id->id;
      role = id->role;
      admitted = CheckClientIdentity(options, client_id);
    } else if (options.require_client_identity) {
      admitted = ProtocolError(ErrorCode::kUnauthenticated, id.status().message());
    }
    auto connection = std::make_shared<FramedConnection>(
        std::move(stream_), PeerInfo{client_id, remote_, role}, options);
    if (!admitted.ok()) {
      ++listener_->rejected_;
      listener_->security_->Note(
          "client refused after the TLS handshake", source_,
          fmt::format("client '{}' from {}: {}", client_id, remote_, admitted.message()));
      connection->Reject(admitted);
      return;
    }
    ++listener_->admitted_;
    listener_->on_accept_(connection);
  }

  void fail(const error_code& ec) {
    ++listener_->handshakes_failed_;
    if (timed_out_) ++listener_->handshake_timeouts_;
    std::string why = timed_out_ ? "timed out" : ec.message();
    if (!timed_out_) {
      const long verify = SSL_get_verify_result(stream_->native_handle());
      if (verify != X509_V_OK)
        why += std::string(" (") + X509_verify_cert_error_string(verify) + ")";
    }
    listener_->security_->Note(timed_out_ ? "TLS handshake timed out" : "TLS handshake failed",
                               source_, fmt::format("{}: {}", remote_, why));
    stream_->Close();
  }

  std::shared_ptr<TlsListener> listener_;
  std::unique_ptr<TlsStream> stream_;
  asio::steady_timer timer_;
  std::string remote_;
  std::string source_;
  bool started_ = false;  // the first bytes arrived
  bool silent_ = false;   // they did not, in time
  bool done_ = false;
  bool timed_out_ = false;
};

Result<std::shared_ptr<TlsListener>> TlsListener::Start(asio::io_context& io,
                                                        std::shared_ptr<ssl::context> ctx,
                                                        const TransportOptions& options,
                                                        const tcp::endpoint& endpoint,
                                                        Transport::AcceptHandler on_accept) {
  auto listener = std::make_shared<TlsListener>(io, std::move(ctx), options, std::move(on_accept));
  error_code ec;
  tcp::acceptor& a = listener->acceptor_;
  a.open(endpoint.protocol(), ec);
  if (!ec) a.set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec) a.bind(endpoint, ec);
  if (!ec) a.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    return Status::IoError("listening on " + EndpointString(endpoint) + ": " + ec.message());
  }
  listener->address_ = EndpointString(a.local_endpoint(ec));
  asio::dispatch(a.get_executor(), [listener] {
    listener->do_accept();
    listener->ScheduleFlush();
  });
  return listener;
}

TlsListener::TlsListener(asio::io_context& io, std::shared_ptr<ssl::context> ctx,
                         const TransportOptions& options, Transport::AcceptHandler on_accept)
    : io_(io),
      ctx_(std::move(ctx)),
      options_(options),
      on_accept_(std::move(on_accept)),
      acceptor_(asio::make_strand(io)),
      retry_timer_(acceptor_.get_executor()),
      flush_timer_(acceptor_.get_executor()),
      security_(options_.security_log ? options_.security_log : std::make_shared<SecurityLog>()) {}

TlsListener::~TlsListener() = default;

void TlsListener::Stop() {
  asio::dispatch(acceptor_.get_executor(), [self = shared_from_this()] {
    self->stopped_ = true;
    self->retry_timer_.cancel();
    self->flush_timer_.cancel();
    self->security_->Flush(/*force=*/true);
    error_code ignored;
    self->acceptor_.close(ignored);
  });
}

TlsListener::Stats TlsListener::stats() const {
  Stats s;
  s.accepted_tcp = accepted_tcp_;
  s.handshakes_ok = handshakes_ok_;
  s.handshakes_failed = handshakes_failed_;
  s.handshake_timeouts = handshake_timeouts_;
  s.rejected = rejected_;
  s.admitted = admitted_;
  s.active_handshakes = active_;
  s.peak_handshakes = peak_;
  s.silent = silent_;
  s.over_address_cap = over_address_cap_;
  return s;
}

void TlsListener::ScheduleFlush() {
  flush_timer_.expires_after(std::chrono::seconds(10));
  flush_timer_.async_wait([weak = weak_from_this()](const error_code& ec) {
    auto self = weak.lock();
    if (ec || !self || self->stopped_) return;
    self->security_->Flush();
    self->ScheduleFlush();
  });
}

void TlsListener::do_accept() {
  if (stopped_) return;
  if (active_ >= options_.max_concurrent_handshakes) {
    paused_ = true;  // HandshakeEnded resumes
    return;
  }
  // Each connection gets its own strand; the accepted socket (and so the whole session) uses it.
  acceptor_.async_accept(asio::make_strand(io_),
                         [self = shared_from_this()](const error_code& ec, tcp::socket socket) {
                           self->on_accept(ec, std::move(socket));
                         });
}

void TlsListener::on_accept(const error_code& ec, tcp::socket socket) {
  if (stopped_ || ec == asio::error::operation_aborted) return;
  if (ec) {
    // Out of file descriptors and the like: try again shortly rather than spin.
    Log().warn("accept on {} failed: {}", address_, ec.message());
    retry_timer_.expires_after(std::chrono::milliseconds(100));
    retry_timer_.async_wait([self = shared_from_this()](const error_code& e) {
      if (!e) self->do_accept();
    });
    return;
  }
  ++accepted_tcp_;
  error_code remote_ec;
  const tcp::endpoint remote_endpoint = socket.remote_endpoint(remote_ec);
  std::string remote = remote_ec ? std::string("unknown") : EndpointString(remote_endpoint);
  const std::string source = SourceAddress(remote);
  size_t& from_source = per_source_[source];
  if (from_source >= options_.max_handshakes_per_address) {
    ++over_address_cap_;
    security_->Note("too many handshakes in progress from one address", source,
                    fmt::format("{} closed: {} already in progress (the cap per address)", remote,
                                from_source));
    error_code ignored;
    socket.close(ignored);
    do_accept();
    return;
  }
  ++from_source;
  const uint64_t active = ++active_;
  uint64_t peak = peak_.load();
  while (active > peak && !peak_.compare_exchange_weak(peak, active)) {
  }
  Result<std::unique_ptr<TlsStream>> stream = TlsStream::Create(std::move(socket), ctx_);
  if (!stream.ok()) {
    Log().warn("connection from {} dropped: {}", remote, stream.status().ToString());
    HandshakeEnded(source);
  } else {
    std::make_shared<TlsServerHandshake>(std::move(*stream), std::move(remote), shared_from_this())
        ->Run();
  }
  do_accept();
}

void TlsListener::HandshakeEnded(const std::string& source) {
  asio::post(acceptor_.get_executor(), [self = shared_from_this(), source] {
    --self->active_;
    if (auto it = self->per_source_.find(source);
        it != self->per_source_.end() && --it->second == 0)
      self->per_source_.erase(it);
    if (self->paused_ && !self->stopped_) {
      self->paused_ = false;
      self->do_accept();
    }
  });
}

}  // namespace tributary
