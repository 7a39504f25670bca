// ClientRuntime: the client side of the protocol, over any Transport.
//
// The same code serves the TLS client (tributary::Client, tributary-client), the simulator and
// the tests (InMemoryTransport). Create() asks the trainer for its parameters once, for the layout
// every Hello declares. A session goes:
//   connect -> Hello{capabilities: device, SupportedCodecs(), num_examples, model layout}
//           <- Welcome{client_id, heartbeat_interval_ms}      (or Error, then the coordinator
//           closes)
//           <- TaskAssignment  -> fit on the worker thread -> UpdateSubmission (or Error)
//           <- EvaluateTask    -> evaluate on the worker   -> EvaluateResult (or Error)
//           -> Heartbeat every heartbeat interval while connected (the coordinator echoes it)
//           <- Goodbye: the run is over; Wait() returns OK, or Aborted when its code is RUN_FAILED;
//              with a come-back window (pace steering) only the session is: the client
//              reconnects to the same endpoint at a time it draws uniformly in the window
// An Error from the coordinator is logged (a rejected update is not fatal), except REVOKED,
// UNAUTHENTICATED, UNSUPPORTED_VERSION and LAYOUT_MISMATCH, and PROTOCOL_VIOLATION before the
// Welcome (the coordinator refusing the Hello), which end the run: retrying cannot help.
// When a connection attempt fails, or the connection is lost, the failure's StatusCode decides:
// PermissionDenied or FailedPrecondition cannot heal by waiting (a TLS certificate either side
// refuses, protocol/tls_failure.h and TlsTransport; no TLS or frame version both accept), so the
// run ends with that status, after one attempt; anything else (Unavailable, DeadlineExceeded, ...:
// nothing listening, a reset, a timeout, a coordinator going away) is retried after
// Backoff::NextDelay(). After backoff.max_attempts consecutive attempts without a Welcome, Wait()
// returns Unavailable naming the last error. A connection on which nothing (not even a heartbeat
// echo) arrived for heartbeat_timeout is taken as lost: the coordinator vanished without closing
// it (a crash, a network partition, a NAT that forgot the flow).
//
// Work for a lost connection is not done: the coordinator has counted this client out of that
// round, and a restarted coordinator sends its tasks again. A task still queued on the worker when
// its connection is lost is dropped without calling the Trainer; a fit in progress sees its
// FitConfig::stop requested (trainer.h) and may stop at its next batch; the result of either is
// dropped, neither sent nor reported to on_task nor counted in the state dir.
//
// Time (heartbeats, the silence check, backoff delays) comes from `clock`, so tests drive it with
// a ManualClock.
//
// The latest global model of a fit or evaluate task is kept for Predict, in memory and in the
// state dir (client/global_model_holder.h); Create takes the one saved there by an earlier
// runtime when it matches the trainer's layout.
//
// Threading: network events run on a strand of the caller's io_context, which the caller must run
// (on any number of threads) until Wait() has returned. Trainer calls run on one worker thread
// owned by the runtime, so fit() never blocks the strand; Predict calls the Trainer on the
// caller's thread, taking turns with the worker. Start/Stop/Wait may be called from any
// thread except an io_context thread or the worker (Wait blocks). The destructor calls Stop() and
// Wait(), then waits for a Trainer call in progress to return.
#pragma once

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "client/client_state.h"
#include "client/secagg_task.h"
#include "core/clock.h"
#include "protocol/transport.h"
#include "tributary/client.h"
#include "tributary/trainer.h"

namespace tributary {

class ThreadPool;
class RuntimeCore;

struct ClientRuntimeOptions {
  // What Transport::Connect is given: one address, or several separated by commas (failover:
  // SplitEndpoints). The first is tried first; each attempt that fails and each connection that is
  // lost moves the next attempt to another endpoint, drawn uniformly among the others with the
  // backoff's seeded generator (Backoff::Pick), after Backoff::NextDelay(): so the clients of an
  // aggregator that died spread over the other aggregators, and over time. The backoff's attempt
  // count is over all endpoints together.
  std::string address;
  std::string device = "cpu";
  uint64_t num_examples = 0;
  std::string software_version;  // empty: this build's version
  BackoffOptions backoff;
  // 0: the coordinator's Welcome::heartbeat_interval_ms (none when that is 0).
  std::chrono::milliseconds heartbeat_interval{0};
  // A connection silent this long is lost. 0: 3 heartbeat intervals (never, without heartbeats).
  std::chrono::milliseconds heartbeat_timeout{0};
  // A connection whose Welcome has not come this long after Hello is lost (heartbeats begin only
  // with the Welcome: a coordinator or network that swallows the Hello would hold the client).
  std::chrono::milliseconds welcome_timeout{30'000};
  // Null: Clock::Real(). Must outlive the runtime.
  Clock* clock = nullptr;
  // Runs on the worker thread after each task.
  std::function<void(const TaskReport&)> on_task;
  // Split learning: tasks train through Trainer::fit_split, the batches' activations and
  // gradients exchanged over the connection (client/split_exchange.h).
  bool split = false;
  // The cuts this client's model was made for (ClientOptions::split_cut); 0: not checked.
  uint32_t split_cut = 0;
  uint32_t split_head = 0;
  // The signing key, certificate and CA for rounds with secure aggregation (docs/privacy.md);
  // null: this client answers such rounds with an error.
  std::shared_ptr<const SecAggIdentity> secagg_identity;
};

class ClientRuntime {
 public:
  // `transport` must outlive the runtime; `state` may be null (no local state). InvalidArgument
  // for bad options or a null trainer.
  static Result<std::unique_ptr<ClientRuntime>> Create(
      boost::asio::io_context& io, Transport& transport, std::shared_ptr<Trainer> trainer,
      ClientRuntimeOptions options, std::unique_ptr<ClientState> state = nullptr);
  ~ClientRuntime();
  ClientRuntime(const ClientRuntime&) = delete;
  ClientRuntime& operator=(const ClientRuntime&) = delete;

  // Begins connecting. FailedPrecondition when already started or stopped.
  Status Start();
  // Says Goodbye (when connected), closes, and ends the run with Aborted. Idempotent.
  void Stop();
  // Blocks until the run ends; see tributary::Client::wait() for the statuses.
  Status Wait();
  // Start() then Wait().
  Status Run();

  // From the last Welcome; empty before the first.
  std::string client_id() const;
  // Welcomes received so far (1 + successful reconnects).
  int64_t sessions() const;

  // tributary::Client::predict / global_model (client.h describes them). Any thread (also the
  // worker in on_task); Predict waits for a Trainer call in progress on the worker, and is refused
  // from inside one.
  Result<std::vector<float>> Predict(std::span<const float> inputs, int64_t count);
  std::optional<GlobalModelInfo> global_model() const;

 private:
  ClientRuntime() = default;
  std::unique_ptr<ThreadPool> worker_;
  std::shared_ptr<RuntimeCore> core_;
};

}  // namespace tributary
