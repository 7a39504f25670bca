// Transport / Listener / Connection: async, message-framed links between a coordinator and its
// clients. Two implementations pass one test suite: TlsTransport (TLS 1.3 over TCP, mutual TLS by
// default) and InMemoryTransport (the simulator and tests). Both run the same framing code
// (FramedConnection over a ByteStream), so caps, Error-then-close on bad input, and the frame and
// write timeouts behave the same.
//
// Threading: every connection runs on its own strand of the io_context given to the transport.
// All of a connection's handlers (message, close, send completion) run on that strand, one at a
// time, in order; they must not block (hand CPU work to a thread pool). Send, Close and Start may
// be called from any thread.
//
// Identity: on the accepting side PeerInfo::id is the authenticated client id. For TLS it comes
// from the client's certificate (PeerClientId), never from a message field; for the in-memory
// transport it is the id the connecting InMemoryTransport was configured with. A revoked id (deny
// list) or a missing one is answered with an Error (REVOKED / UNAUTHENTICATED) and the connection
// closes; the accept handler never sees it.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "crypto/client_id.h"
#include "protocol/frame.h"
#include "protocol/messages.h"
#include "protocol/wire.h"
#include "tributary/result.h"

namespace tributary {

class DenyList;
class SecurityLog;
class TransferBudget;

struct PeerInfo {
  // Accepting side: the authenticated client id. Connecting side: the server name that was
  // verified (TLS) or the listener name (in-memory).
  std::string id;
  // The remote endpoint, "ip:port" for TLS, the listener name for in-memory.
  std::string address;
  // Accepting side: whether the certificate is a client's or an aggregator's (client_id.h). Only
  // the coordinator accepts aggregators; everyone else refuses them after the handshake.
  PeerRole role = PeerRole::kClient;
};

struct TransportOptions {
  ProtocolLimits limits;
  // TCP connect plus TLS handshake must finish within this (both sides).
  std::chrono::milliseconds handshake_timeout{10'000};
  // Once a frame's first byte has arrived, the whole frame must arrive within this, and a chunked
  // message being received must gain bytes within this (frames between its chunks do not count);
  // otherwise the connection is answered with TIMEOUT and closed. An idle connection between
  // messages is not timed out here (heartbeats are the application's business), nor is the time a
  // connection waits for the transfer budget (it has stopped reading: the deadlines start afresh
  // when it resumes).
  std::chrono::milliseconds frame_read_timeout{30'000};
  // With a transfer budget (below): a chunked message holding a reservation must average at least
  // this many bytes per second, after a grace of frame_read_timeout, or the connection is
  // answered with TIMEOUT and closed and the reservation returned: by time t after its first
  // chunk it must have received (t - frame_read_timeout) x min_message_rate bytes (Apache's
  // mod_reqtimeout "MinRate" rule). Sending a tiny chunk just inside every frame_read_timeout
  // so no longer holds a reservation for good. Time spent waiting for the budget does not count.
  // 0: no minimum. Connections without a budget (clients) hold nothing shared and are not timed.
  uint64_t min_message_rate = 1024;
  // Writing one frame must finish within this, or the connection is closed (the peer stopped
  // reading). On a connection this transport dialed, a write that the peer keeps sending
  // heartbeats through (one or more in each write_timeout) goes on waiting: the server has paused
  // reading it for its transfer budget and says so (budget_wait_keepalive). Accepted connections
  // never wait so (a peer could stop reading and send heartbeats to hold the write for good).
  std::chrono::milliseconds write_timeout{30'000};
  // How long a closing connection waits for the peer's close_notify before closing the socket.
  std::chrono::milliseconds shutdown_timeout{2'000};
  // Listener: a new TCP connection must send its first bytes (the ClientHello) within this, or it
  // is closed; the rest of the handshake then has handshake_timeout. Silent connections so hold
  // a handshake slot for seconds, not handshake_timeout.
  std::chrono::milliseconds first_bytes_timeout{2'000};
  // Listener: at most this many TLS handshakes in progress at once; further TCP connections wait
  // in the kernel's accept backlog until one finishes.
  size_t max_concurrent_handshakes = 256;
  // Listener: at most this many of them from one source address; a connection over the cap is
  // closed at once (and logged), so one address cannot take the slots of everyone else.
  size_t max_handshakes_per_address = 8;
  // Listener: where security events go (refused handshakes, revoked clients, admission refusals),
  // at warning level, aggregated per minute. Null: the listener keeps its own.
  std::shared_ptr<SecurityLog> security_log;
  // Bytes all connections of this transport may hold in partly received chunked messages; a
  // connection whose next message does not fit stops reading until it does (transfer_budget.h).
  // Null: no shared budget (each connection is still bounded by its message cap).
  std::shared_ptr<TransferBudget> transfer_budget;
  // While a connection waits for the transfer budget it reads nothing, so the peer's heartbeats go
  // unanswered, and a peer that judges the link by what it hears (tributary-client gives up after
  // three heartbeat intervals of silence) would drop it and send its upload again later. So a
  // waiting connection sends the peer a Heartbeat (sequence 0) this often; set it at or below the
  // heartbeat interval announced to peers. 0: none.
  std::chrono::milliseconds budget_wait_keepalive{1'000};
  // Listener: refuse connections without an authenticated client id (mutual TLS). On by default;
  // turning it off is for tests of that very case.
  bool require_client_identity = true;
  // Listener: client ids refused after the handshake. May be null (no revocations). Shared with
  // whoever reloads it (DenyList is thread-safe).
  std::shared_ptr<const DenyList> deny_list;

  // InvalidArgument naming the field when a value is out of range.
  Status Validate() const;
};

class Connection {
 public:
  // Called once per received message, in order.
  using MessageHandler = std::function<void(Message)>;
  // Called exactly once when the connection is closed: OK after Close() or an orderly close by the
  // peer between messages; otherwise why it closed (a ProtocolError for bad input from the peer,
  // DeadlineExceeded for a timeout, Unavailable for a network failure, PermissionDenied or
  // FailedPrecondition for a TLS alert refusing this side: see protocol/tls_failure.h).
  using CloseHandler = std::function<void(Status)>;
  // OK once the whole message was handed to the network; otherwise why not (Aborted when the
  // connection closed first; the encode error when the message breaks a cap).
  using SendHandler = std::function<void(Status)>;

  virtual ~Connection() = default;

  // Starts reading. Call once. Handlers are released after the close handler has run.
  virtual void Start(MessageHandler on_message, CloseHandler on_close) = 0;
  // Encodes `message` (on the calling thread) and queues it; messages go out in the order Send was
  // called, except that a Heartbeat may overtake a large message that is being sent in chunks.
  virtual void Send(const Message& message, SendHandler done = nullptr) = 0;
  // Queues a message encoded once with EncodeOutbound (frame.h), e.g. the round's TaskAssignment
  // sent to every selected client without encoding (or copying) the model per client. The
  // encoding must respect this connection's limits; the buffer is shared, never modified.
  virtual void SendEncoded(std::shared_ptr<const OutboundMessage> message,
                           SendHandler done = nullptr) = 0;
  // Sends what is queued, then closes (TLS close_notify under shutdown_timeout). Idempotent.
  virtual void Close() = 0;
  // The largest message accepted from now on (at most limits.max_message_bytes; control messages
  // keep their own cap): a coordinator accepts nothing large before Hello, then what an update of
  // the run can take. Applies to messages whose first frame arrives after it is processed on the
  // connection's strand; call it before Start() to cover the first message.
  virtual void SetMaxMessageBytes(uint64_t max_bytes) = 0;

  // Reading stops once the read in flight (at most one read's worth of messages, or one chunk) has
  // been handed to on_message, until ResumeReading: the peer's sends back up into TCP. The owner
  // holds a peer whose messages it has not caught up with (ConnectionBacklog: a client far ahead
  // of a busy coordinator engine). While held, the read deadlines do not run (the silence is ours;
  // they start afresh on resuming) and the peer is sent a Heartbeat (sequence 0) every
  // budget_wait_keepalive, as while waiting for the transfer budget. Both are idempotent and may
  // be called from any thread, the connection's own handlers included; both are queued, never run
  // inline, so they take effect in the order called.
  virtual void HoldReading() = 0;
  virtual void ResumeReading() = 0;

  virtual const PeerInfo& peer() const = 0;
  // True while this side has stopped reading the peer because the transfer budget has no room
  // (TransportOptions::transfer_budget): the peer's silence is then this side's doing, and a
  // silence sweep should not count it. Any thread.
  virtual bool waiting_for_budget() const { return false; }
};

class Listener {
 public:
  virtual ~Listener() = default;
  // The address connectors should use, with the port resolved when 0 was asked for.
  virtual std::string address() const = 0;
  // Stops accepting. Connections already accepted are unaffected. Idempotent.
  virtual void Stop() = 0;
};

class Transport {
 public:
  // Receives each authenticated connection, not yet started, on the connection's strand.
  using AcceptHandler = std::function<void(std::shared_ptr<Connection>)>;
  // Receives the connection (not yet started) or why there is none.
  using ConnectHandler = std::function<void(Result<std::shared_ptr<Connection>>)>;

  virtual ~Transport() = default;

  // Starts accepting on `address` ("host:port" for TLS, port 0 picks a free port; a name for
  // in-memory, "" picks a fresh one).
  virtual Result<std::shared_ptr<Listener>> Listen(const std::string& address,
                                                   AcceptHandler on_accept) = 0;
  // Connects to `address`; the handler runs once, on the new connection's strand.
  virtual void Connect(const std::string& address, ConnectHandler on_connect) = 0;
};

}  // namespace tributary
