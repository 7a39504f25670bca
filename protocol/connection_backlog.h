// ConnectionBacklog: the bytes of one connection's received messages that wait for a slower
// consumer, and the hold on the connection's reading that bounds them.
//
// A service that reads on one strand and hands messages to another (CoordinatorService: the
// connection's handler reads, the engine strand validates and folds) takes a Ticket for each
// message as it is read, sized by the message (EncodedBodyBytes), and lets the ticket go when the
// consumer is done with it (or drops it). When what waits passes the cap, the connection's reading
// is held (Connection::HoldReading: the peer's sends back up into TCP, it hears keepalives) until
// the consumer has let every ticket go, then resumes. So with the cap at the connection's message
// cap, a peer sending large message after large message while the consumer is busy keeps about two
// of them (and one read's worth of small ones) in memory, not every one it sends; a peer that sends
// one and waits for an answer is never held.
//
// Thread-safe: Take on one thread at a time (the reading strand), tickets let go on any. Each stall
// holds the connection once and resumes it once, in that order; the lock is taken only past the
// cap and when the backlog empties.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>

#include "protocol/transport.h"

namespace tributary {

class ConnectionBacklog : public std::enable_shared_from_this<ConnectionBacklog> {
 public:
  // Releases its bytes when destroyed (moved-from: nothing).
  class Ticket {
   public:
    Ticket() = default;
    Ticket(Ticket&& other) noexcept;
    Ticket& operator=(Ticket&& other) noexcept;
    Ticket(const Ticket&) = delete;
    Ticket& operator=(const Ticket&) = delete;
    ~Ticket();

   private:
    friend class ConnectionBacklog;
    Ticket(std::shared_ptr<ConnectionBacklog> owner, uint64_t bytes)
        : owner_(std::move(owner)), bytes_(bytes) {}
    std::shared_ptr<ConnectionBacklog> owner_;
    uint64_t bytes_ = 0;
  };

  // Holds `connection` while more than cap_bytes wait.
  static std::shared_ptr<ConnectionBacklog> Create(const std::shared_ptr<Connection>& connection,
                                                   uint64_t cap_bytes);

  // Counts `bytes` of a message handed on, until the ticket goes; may hold the connection.
  Ticket Take(uint64_t bytes);

  uint64_t waiting_bytes() const { return waiting_.load(); }
  // Reading is held now (a silence sweep should not count the peer silent).
  bool held() const { return held_.load(); }
  // How many times reading was held, and the most bytes that ever waited at once.
  uint64_t holds() const { return holds_.load(); }
  uint64_t peak_bytes() const { return peak_.load(); }

 private:
  ConnectionBacklog(std::weak_ptr<Connection> connection, uint64_t cap_bytes)
      : connection_(std::move(connection)), cap_(cap_bytes) {}
  // Asks the connection, when it still exists.
  void Hold();
  void Resume();
  void Release(uint64_t bytes);

  // Weak: the connection's read handler may hold this backlog (no cycle), and a ticket that
  // outlives the connection (an engine job dropped at shutdown) holds neither it nor its I/O.
  const std::weak_ptr<Connection> connection_;
  const uint64_t cap_;
  std::atomic<uint64_t> waiting_{0}, peak_{0}, holds_{0};
  std::mutex mu_;                  // orders the holds and resumes
  std::atomic<bool> held_{false};  // written under mu_
};

}  // namespace tributary
