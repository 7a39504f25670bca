// CoordinatorService: runs a RoundEngine over a Transport (TLS in deployment, in-memory in tests).
//
// It accepts connections, expects Hello as each one's first message (protocol version and codec
// support are checked; a mismatch gets an Error naming both sides and the connection closes),
// registers the client under the id the transport authenticated (its certificate), feeds messages
// to the engine, delivers the engine's outbox, and wakes the engine at its deadlines. A client that
// reconnects replaces its old session. Heartbeats are echoed at once (clients measure the round
// trip and detect a vanished coordinator by it). A connection silent for longer than
// client_timeout is closed. When the engine finishes, or Stop() is called, every client gets a
// Goodbye, connections close, the listener stops, and on_finished runs.
//
// Time (the engine's `now`, its deadlines, the silence sweep) comes from options.clock.
//
// Threading: all engine calls and session bookkeeping run on one strand of the io_context; the
// io_context may be run by several threads.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/strand.hpp>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "coordinator/round_engine.h"
#include "protocol/transport.h"

namespace tributary {

struct CoordinatorServiceOptions {
  std::string listen_address = "0.0.0.0:7700";
  std::chrono::milliseconds heartbeat_interval{5'000};  // announced to clients in Welcome
  std::chrono::milliseconds client_timeout{30'000};     // close a session silent this long
  std::string software_version;
  Clock* clock = nullptr;  // null: Clock::Real(); must outlive the service
};

class CoordinatorService : public std::enable_shared_from_this<CoordinatorService> {
 public:
  // `transport` and `engine` must outlive the service.
  CoordinatorService(boost::asio::io_context& io, Transport& transport, RoundEngine& engine,
                     CoordinatorServiceOptions options);

  // Starts listening and, if the engine can, the first round.
  Status Start();
  // The bound address (with the real port when port 0 was asked for). Valid after Start().
  std::string address() const { return address_; }
  // Ends the run: Goodbye(reason) to every client, close, stop listening, then on_finished(OK).
  // Thread-safe; idempotent.
  void Stop(const std::string& reason);
  // Runs once on the strand when the run ends: OK after all rounds (or Stop), else the engine's
  // failure.
  void set_on_finished(std::function<void(Status)> cb) { on_finished_ = std::move(cb); }
  size_t connected_clients() const { return by_id_.size(); }

 private:
  struct Session {
    std::shared_ptr<Connection> conn;
    std::string id;  // empty until Hello
    TimePoint last_heard{};
  };
  void OnAccept(std::shared_ptr<Connection> conn);
  void OnMessage(Connection* conn, Message msg);
  void OnClosed(Connection* conn, const Status& why);
  void OnHello(Session& s, const Hello& hello);
  void Refuse(Session& s, ErrorCode code, const std::string& why);
  void Flush();
  void ArmTimer();
  void Sweep();
  void Finish(Status result, const std::string& reason);

  boost::asio::io_context& io_;
  boost::asio::strand<boost::asio::io_context::executor_type> strand_;
  Transport& transport_;
  RoundEngine& engine_;
  CoordinatorServiceOptions options_;
  Clock* clock_;
  std::shared_ptr<Listener> listener_;
  std::string address_;
  std::unique_ptr<Timer> deadline_timer_;
  std::unique_ptr<Timer> sweep_timer_;
  std::map<Connection*, Session> sessions_;   // every open connection
  std::map<std::string, Connection*> by_id_;  // joined clients
  std::function<void(Status)> on_finished_;
  bool finished_ = false;
};

}  // namespace tributary
