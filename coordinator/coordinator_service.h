// CoordinatorService: runs a RunDriver over a Transport (TLS in deployment, in-memory in tests).
//
// It accepts connections, expects Hello as each one's first message (protocol version, model
// layout and codec support are checked; a mismatch gets an Error naming both sides — for a layout,
// the first tensor that differs — and the connection closes before the client is registered),
// registers the client under the id the transport authenticated (its certificate). Each refusal at
// Hello goes to the security log (rate-limited per reason and address) and, as a ClientRefused run
// event naming the client, its address and the reason, to the driver's observers (the event log,
// the history), bounded by a RefusalDigest (options.refusal_window; flushed by the silence sweep
// and before the run's RunFinished). It feeds messages
// to the run's engine, delivers the engine's outbox, and wakes the engine at its deadlines. A
// client that reconnects replaces its old session. Heartbeats are echoed at once (clients measure
// the round trip and detect a vanished coordinator by it). A connection silent for longer than
// client_timeout is closed. Memory per connection is bounded: before Hello only control messages
// (ProtocolLimits::max_control_message_bytes) are accepted, after it nothing larger than an update
// of this run's model under its codec, and a client id has one connection (a newer one from the
// same certificate replaces it). When the engine finishes, or Stop() is called, the driver finishes
// the run (final model, RunFinished), every client gets a Goodbye (code RUN_FAILED when the run
// failed), connections close, the listener stops, and on_finished runs.
//
// Threading: two strands. The I/O strand (on the io_context) owns the sessions: Hello, heartbeat
// echoes, the silence sweep, sending. The engine strand (on options.engine_executor: a worker pool)
// owns the driver and its engine: validating, decoding and folding updates, checkpoints and
// evaluation run there, so a slow fold or a full test-set evaluation never delays a heartbeat's
// echo. Events cross between the strands by posting, in order; an update is judged by the time it
// arrived, not the time the engine strand got to it. The io_context may be run by several threads.
//
// Flow control: a connection's messages are counted from the moment they are read until they are
// handled, here or on the engine strand (protocol/connection_backlog.h); past its message cap
// (about one update; an aggregator's partial sum) the service stops reading it until they are, so a
// client sending update after update while the engine is busy (an evaluation, a checkpoint) holds
// about two in memory, not every one it sends. A client so held hears keepalives, is not counted
// silent by the sweep, and loses nothing: its messages are read when the engine catches up.
//
// Time (the engine's `now`, its deadlines, the silence sweep) comes from options.clock.
//
// The aggregation tier (docs/tier.md): a connection whose certificate is an aggregator's
// (PeerRole::kAggregator) must open with AggregatorHello, and is refused, naming why, when the run
// cannot go through a tier (WhyNotThroughTier). Its GroupMembership joins and leaves clients, who
// are then registered like clients connected here and routed through it: the engine's
// TaskAssignments for them leave as one GroupTask per aggregator (the task once, each client's
// fit seed), and its GroupResults reach the engine (RunEngine::OnGroupResult) once every record is
// checked to name one of its clients. When an aggregator's connection closes, its clients leave.
//
// Split learning (docs/split.md; the driver's SplitServer): a client's SplitActivations go to the
// server part on options.split_executor, one batch per client at a time (a second before the
// first's gradient is a protocol violation); its SplitGradient goes back on the same connection,
// or its refusal as an Error, and the connection closes. The message cap of a joined client is
// then the larger of an update's and one batch's activations at the run's batch size.
// A client certificate cannot speak for an aggregator, nor an aggregator's join as a client; a
// client that joins directly while routed through an aggregator (or through another) moves.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/strand.hpp>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "coordinator/refusal_digest.h"
#include "coordinator/run_driver.h"
#include "protocol/connection_backlog.h"
#include "protocol/security_log.h"
#include "protocol/transport.h"

namespace tributary {

struct CoordinatorServiceOptions {
  std::string listen_address = "0.0.0.0:7700";
  std::chrono::milliseconds heartbeat_interval{5'000};  // announced to clients in Welcome
  std::chrono::milliseconds client_timeout{30'000};     // close a session silent this long
  std::string software_version;
  Clock* clock = nullptr;  // null: Clock::Real(); must outlive the service
  // Where the engine strand runs (e.g. a boost::asio::thread_pool's executor); none: the
  // io_context. Must outlive the service.
  boost::asio::any_io_executor engine_executor;
  // Where a split run's server part trains on the clients' batches (docs/split.md): a pool of its
  // own, so that a batch never waits for a fold, nor a fold for a batch; none: engine_executor's
  // (the io_context when that is none too). Must outlive the service.
  boost::asio::any_io_executor split_executor;
  // Security events (refusals at Hello, peers closed for bad input or timeouts), shared with the
  // TLS listener's in tributary-coordinator. Null: the service keeps its own.
  std::shared_ptr<SecurityLog> security_log;
  // The window over which repeated refusals at Hello of one client for one reason are reported as
  // one ClientRefused event (coordinator/refusal_digest.h).
  std::chrono::milliseconds refusal_window{10'000};
};

// Lifetime: whoever made it holds the shared_ptr for as long as it serves. Its timers hold it
// weakly (a callback that finds it gone does nothing), so one dropped before its run ended is
// freed, not kept alive by its own armed timers.
class CoordinatorService : public std::enable_shared_from_this<CoordinatorService> {
 public:
  // `transport` and `driver` must outlive the service. The driver's observers run on the engine
  // strand; call driver.Start() before Start().
  CoordinatorService(boost::asio::io_context& io, Transport& transport, RunDriver& driver,
                     CoordinatorServiceOptions options);

  // Starts listening and, if the engine can, the first round.
  Status Start();
  // The bound address (with the real port when port 0 was asked for). Valid after Start().
  std::string address() const { return address_; }
  // Stops serving the run (SIGTERM): the driver finishes it (OK; the checkpoints resume it),
  // every client and aggregator gets Goodbye(reason, SHUTTING_DOWN), which tells it to reconnect
  // (a restarted coordinator, `--resume`, takes it back), connections close, listening stops, then
  // on_finished(OK). Thread-safe; idempotent.
  void Stop(const std::string& reason);
  // Runs once, on the I/O strand, when the run has ended: with the driver's outcome (OK after all
  // rounds or Stop, else why the run failed).
  void set_on_finished(std::function<void(Status)> cb) { on_finished_ = std::move(cb); }
  // Runs once, on the I/O strand, after on_finished, when every connection has finished closing
  // (its Goodbye written and the peer's close seen, or the transport's shutdown_timeout passed).
  // A program stops its io_context here: stopping it earlier can lose the Goodbyes, and a client
  // that never reads one keeps reconnecting to a coordinator that is gone.
  void set_on_closed(std::function<void()> cb) { on_closed_ = std::move(cb); }
  // Runs `fn` on the engine strand, where the driver's observers run and the engine may be read
  // (monitors sample the client registry this way between events); not once the run is over.
  // Thread-safe.
  void RunOnEngine(std::function<void()> fn);

 private:
  using Strand = boost::asio::strand<boost::asio::any_io_executor>;
  struct Session {
    std::shared_ptr<Connection> conn;
    std::string id;  // empty until Hello (AggregatorHello)
    TimePoint last_heard{};
    bool aggregator = false;        // an aggregator of the tier, after its AggregatorHello
    std::set<std::string> members;  // an aggregator's clients
    bool split_in_flight = false;   // a split batch is with the server part
    // Its messages read and not yet handled (on this strand or the engine's).
    std::shared_ptr<ConnectionBacklog> backlog;
  };
  using Outbox = std::vector<RunEngine::Outgoing>;

  // I/O strand.
  void OnAccept(std::shared_ptr<Connection> conn);
  // `ticket` counts the message against the session's backlog until it is dropped (here, or by
  // the engine's job that takes it).
  void OnMessage(Connection* conn, Message msg, ConnectionBacklog::Ticket ticket);
  void OnClosed(Connection* conn, const Status& why);
  void OnHello(Session& s, const Hello& hello);
  // The tier: an aggregator's hello, its membership changes and results.
  void OnAggregatorHello(Session& s, const AggregatorHello& hello);
  void OnAggregatorMessage(Session& s, Message msg, TimePoint now, ConnectionBacklog::Ticket t);
  void OnMembership(Session& s, GroupMembership m, TimePoint now, ConnectionBacklog::Ticket ticket);
  // Takes `id` off whichever session holds it (a direct one closes; an aggregator's forgets it)
  // before it joins through another.
  void Supersede(const std::string& id, Connection* keep);
  void Refuse(Session& s, ErrorCode code, const std::string& why);
  // Split learning: a client's split message (a batch's activations; in a U-shaped split also its
  // head's gradient) goes to the server part on split_executor_, its answer (or its refusal)
  // comes back here. One message per client at a time.
  void OnSplitBatch(Session& s, Message batch);
  void Deliver(Outbox outbox);
  void Sweep();
  // Goodbye(reason, code) to every session, then closes them and stops listening.
  void CloseAll(Status result, const std::string& reason, uint32_t code);
  void NotifyClosedWhenDrained();  // on_closed once the run is over and no session is left

  // RunEngine strand.
  template <class F>
  void OnEngine(F&& fn);
  void AfterEngine();
  // The Goodbye's code: RUN_FAILED when the run failed, else `code` (0: the run is over;
  // SHUTTING_DOWN from Stop: come back).
  void FinishRun(Status outcome, const std::string& reason, uint32_t code = 0);
  void PublishRefusals(const std::vector<ClientRefused>& events);

  Transport& transport_;
  RunDriver& driver_;
  CoordinatorServiceOptions options_;
  Clock* clock_;
  Strand io_strand_;
  Strand engine_strand_;
  boost::asio::any_io_executor split_executor_;
  std::shared_ptr<Listener> listener_;
  std::string address_;
  // The run's layout, fixed for the run (read on the I/O strand without touching the engine).
  const ModelLayout run_layout_;
  const uint64_t run_fingerprint_;
  const uint64_t max_update_bytes_;      // the largest message a joined client may send
  const uint64_t max_aggregator_bytes_;  // ... and an aggregator (a partial sum, records)
  const size_t max_update_dim_;          // the model's values (a partial sum's length)
  const std::string tier_refusal_;       // why the run cannot go through a tier ("" : it can)
  const std::string tier_config_;        // the run as an aggregator needs it (TierConfigToml)
  std::shared_ptr<SecurityLog> security_;

  // I/O strand only.
  std::unique_ptr<Timer> sweep_timer_;
  std::map<Connection*, Session> sessions_;  // every open connection
  // Joined clients: their own connection, or their aggregator's.
  std::map<std::string, Connection*> by_id_;
  std::function<void(Status)> on_finished_;
  std::function<void()> on_closed_;
  bool closed_ = false;

  // RunEngine strand only.
  std::unique_ptr<Timer> deadline_timer_;
  bool run_over_ = false;
  RefusalDigest refusals_;
};

}  // namespace tributary
