// FakeCoordinator: a Listener that speaks the coordinator's side of the protocol, for client tests.
//
// Each accepted connection becomes a FakeSession. On Hello it answers Welcome{client_id = the
// peer's authenticated id, heartbeat_interval_ms} — or, when told to refuse, an Error with the
// given code, then closes. Everything else the client sends is queued for the test to take with
// Next<T>(); heartbeats are counted and echoed (unless echo_heartbeats is false, which is how a
// coordinator that vanished looks). Tests send tasks with FakeSession::Send.
// Thread-safe: handlers run on connection strands, the test reads from its own thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "protocol/transport.h"

namespace tributary::testing {

struct FakeCoordinatorOptions {
  uint32_t heartbeat_interval_ms = 0;
  // When set, Hello is answered with Error{*refuse_with, "refused by the test"} and a close.
  std::optional<ErrorCode> refuse_with;
  bool echo_heartbeats = true;
  // False: Hello is recorded and never answered (a coordinator that swallows it).
  bool answer_hello = true;
};

class FakeSession {
 public:
  FakeSession(std::shared_ptr<Connection> connection, FakeCoordinatorOptions options);
  void Start();

  const std::string& peer_id() const { return connection_->peer().id; }
  void Send(Message m) { connection_->Send(std::move(m)); }
  void Close() { connection_->Close(); }

  // The oldest queued message of type T (removed from the queue), waiting up to `timeout`.
  template <class T>
  std::optional<T> Next(std::chrono::milliseconds timeout = std::chrono::seconds(20)) {
    std::unique_lock<std::mutex> lock(mu_);
    std::optional<T> found;
    cv_.wait_for(lock, timeout, [&] {
      for (auto it = inbox_.begin(); it != inbox_.end(); ++it) {
        if (auto* m = std::get_if<T>(&*it)) {
          found = std::move(*m);
          inbox_.erase(it);
          return true;
        }
      }
      return false;
    });
    return found;
  }
  std::optional<Hello> hello();
  // Waits for the Hello (false on timeout or when the connection closed first).
  bool WaitHello(std::chrono::milliseconds timeout = std::chrono::seconds(20));
  size_t heartbeats();
  // Waits until at least n heartbeats arrived.
  bool WaitForHeartbeats(size_t n, std::chrono::milliseconds timeout = std::chrono::seconds(20));
  // The close status, or nullopt on timeout.
  std::optional<Status> WaitClosed(std::chrono::milliseconds timeout = std::chrono::seconds(20));

 private:
  void OnMessage(Message m);

  std::shared_ptr<Connection> connection_;
  FakeCoordinatorOptions options_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Message> inbox_;     // GUARDED_BY(mu_)
  std::optional<Hello> hello_;    // GUARDED_BY(mu_)
  size_t heartbeats_ = 0;         // GUARDED_BY(mu_)
  std::optional<Status> closed_;  // GUARDED_BY(mu_)
};

class FakeCoordinator {
 public:
  // Listens on `address` through `transport` (which must outlive this object).
  static std::unique_ptr<FakeCoordinator> Start(Transport& transport, const std::string& address,
                                                FakeCoordinatorOptions options = {});
  ~FakeCoordinator();

  std::string address() const { return listener_->address(); }
  // The index-th accepted session (0-based), waiting for it to arrive and say Hello.
  std::shared_ptr<FakeSession> WaitSession(
      size_t index, std::chrono::milliseconds timeout = std::chrono::seconds(20));
  size_t session_count();
  void StopListening() { listener_->Stop(); }

 private:
  FakeCoordinatorOptions options_;
  std::shared_ptr<Listener> listener_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::shared_ptr<FakeSession>> sessions_;  // GUARDED_BY(mu_)
};

}  // namespace tributary::testing
