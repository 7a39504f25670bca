// TlsListener: accepts TCP connections and runs the server side of the TLS 1.3 handshake on each,
// then admits the client by the id in its certificate.
//
// Per connection (a TlsServerHandshake session on its own strand):
//   first bytes   the client must send something (its ClientHello) within first_bytes_timeout, or
//                 the socket is closed: a silent connection holds its slot for seconds only
//   do_handshake  TLS 1.3 only; with require_client_identity, verify_peer + fail_if_no_peer_cert;
//                 the whole handshake runs under handshake_timeout (the socket is closed when it
//                 expires, which ends the handshake)
//   on_handshake  PeerIdentityOf(ssl) gives the id and role; CheckClientIdentity refuses a missing
//   or
//                 revoked one with an Error (UNAUTHENTICATED / REVOKED) and a close; otherwise the
//                 FramedConnection goes to the accept handler.
// At most max_concurrent_handshakes run at once. When the cap is reached the listener stops
// calling accept, so further clients wait in the kernel backlog instead of being dropped, and
// resumes as soon as a handshake ends (by success, failure or timeout). At most
// max_handshakes_per_address of them come from one source address: a connection over that is
// closed at accept, so a flood from one address (reopening silent connections as they close)
// cannot take the slots honest clients elsewhere need. Every refusal and failure is a security
// event (SecurityLog: warning level, aggregated per minute).
//
// Thread safety: address(), Stop() and stats() may be called from any thread.
#pragma once

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <map>
#include <memory>
#include <string>

#include "protocol/security_log.h"
#include "protocol/transport.h"

namespace tributary {

class TlsListener final : public Listener, public std::enable_shared_from_this<TlsListener> {
 public:
  struct Stats {
    uint64_t accepted_tcp = 0;        // TCP connections accepted
    uint64_t handshakes_ok = 0;       // TLS handshakes that completed
    uint64_t handshakes_failed = 0;   // TLS handshakes that failed (bad cert, TLS 1.2, ...)
    uint64_t handshake_timeouts = 0;  // of those, how many ran out of time
    uint64_t rejected = 0;            // completed handshakes refused (revoked / no id)
    uint64_t admitted = 0;            // connections handed to the accept handler
    uint64_t active_handshakes = 0;
    uint64_t peak_handshakes = 0;   // the most handshakes ever in progress at once
    uint64_t silent = 0;            // closed for sending nothing within first_bytes_timeout
    uint64_t over_address_cap = 0;  // closed at accept: their address had too many handshakes
  };

  // Binds and listens on `endpoint` (port 0 picks a free one). IoError naming the endpoint on
  // failure. The accept loop starts at once.
  static Result<std::shared_ptr<TlsListener>> Start(boost::asio::io_context& io,
                                                    std::shared_ptr<boost::asio::ssl::context> ctx,
                                                    const TransportOptions& options,
                                                    const boost::asio::ip::tcp::endpoint& endpoint,
                                                    Transport::AcceptHandler on_accept);

  TlsListener(boost::asio::io_context& io, std::shared_ptr<boost::asio::ssl::context> ctx,
              const TransportOptions& options, Transport::AcceptHandler on_accept);
  ~TlsListener() override;

  std::string address() const override { return address_; }
  void Stop() override;
  Stats stats() const;

 private:
  friend class TlsServerHandshake;
  void do_accept();
  void on_accept(const boost::system::error_code& ec, boost::asio::ip::tcp::socket socket);
  // Called (from any strand) when a handshake session from `source` ends.
  void HandshakeEnded(const std::string& source);
  void ScheduleFlush();

  boost::asio::io_context& io_;
  std::shared_ptr<boost::asio::ssl::context> ctx_;
  const TransportOptions options_;
  const Transport::AcceptHandler on_accept_;
  boost::asio::ip::tcp::acceptor acceptor_;  // on its own strand
  boost::asio::steady_timer retry_timer_;
  boost::asio::steady_timer flush_timer_;  // summarizes the security log every minute
  std::shared_ptr<SecurityLog> security_;
  std::map<std::string, size_t> per_source_;  // strand only: handshakes in progress by address
  std::string address_;
  bool paused_ = false;   // strand only: at the handshake cap, not accepting
  bool stopped_ = false;  // strand only
  std::atomic<uint64_t> accepted_tcp_{0}, handshakes_ok_{0}, handshakes_failed_{0},
      handshake_timeouts_{0}, rejected_{0}, admitted_{0}, active_{0}, peak_{0}, silent_{0},
      over_address_cap_{0};
};

}  // namespace tributary
