// AggregatorService: a tributary-aggregator (docs/tier.md) over two Transports: it serves clients
// exactly as a coordinator does (mutual TLS, Hello checked against the run, Welcome, heartbeat
// echoes, silent connections closed) and is one connection to the coordinator, which it serves
// as the clients' aggregator.
//
// Upstream: it connects to the coordinator with its aggregator certificate and says
// AggregatorHello; the AggregatorWelcome gives it the run (TierConfig, the layout), and only then
// does it listen for clients. Every client that completes Hello is announced in a GroupMembership
// (and every one that leaves), batched per turn of the strand; a client's update goes up before
// its departure does (a member of a running secure session is announced as gone when the session
// ends), since the coordinator refuses a result naming a client that is not this aggregator's,
// whole. A client that leaves and comes back before the coordinator heard is announced once, as
// joined (a reconnect there); one that joins and leaves before it heard, not at all. A GroupTask
// starts a GroupShare: each named client connected here gets its TaskAssignment (one model,
// shared), its update is judged and folded (an Error names a refusal), and the share's GroupResults
// go up when due: when every member has answered or left, or options.flush_margin before the task's
// deadline. A GroupTask with secure aggregation starts a SecureGroupShare instead: one session over
// the members connected here, the clients' secure aggregation messages fed to it, and its sum (or
// its failure) sent up once the session is over. With pace.max_idle, the clients connected here
// that hold no task of the round, beyond that many, are sent away until a window later (the
// coordinator's pace steering, applied by each process that holds client connections).
// If the coordinator's connection drops, the share is dropped (the coordinator's round treats it
// as missing updates), the clients stay connected, and the service reconnects after
// reconnect_delay (with up to 50% jitter), announcing its clients again. A Goodbye from the
// coordinator (the run is over) is passed to every client, connections close and on_finished runs
// with its code.
//
// Threading: one strand for everything (sessions, the share, the upstream connection); decoding
// and folding run on it, so an aggregator of many clients wants its own core per busy group. A
// client's messages waiting for the strand are bounded by about one update
// (protocol/connection_backlog.h): past that its reading holds until the strand catches up.
// Time comes from options.clock.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/strand.hpp>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>

#include "aggregator/group_share.h"
#include "aggregator/secure_group_share.h"
#include "coordinator/client_registry.h"
#include "coordinator/pace_window.h"
#include "coordinator/tier_config.h"
#include "core/clock.h"
#include "protocol/connection_backlog.h"
#include "protocol/security_log.h"
#include "protocol/transport.h"

namespace tributary {

struct AggregatorOptions {
  std::string listen_address = "0.0.0.0:7701";
  std::string coordinator_address;  // "host:port"
  std::string software_version;
  std::chrono::milliseconds heartbeat_interval{5'000};  // announced to clients in Welcome
  std::chrono::milliseconds client_timeout{30'000};     // close a client silent this long
  // A share's result goes up this long before its task's deadline even if clients are missing.
  std::chrono::milliseconds flush_margin{2'000};
  std::chrono::milliseconds reconnect_delay{1'000};  // after losing the coordinator (+ jitter)
  Clock* clock = nullptr;                            // null: Clock::Real()
  std::shared_ptr<SecurityLog> security_log;         // null: its own
};

// Lifetime: whoever made it holds the shared_ptr for as long as it serves. Its timers hold it
// weakly (a callback that finds it gone does nothing), so one dropped before its run ended is
// freed, not kept alive by its own armed timers.
class AggregatorService : public std::enable_shared_from_this<AggregatorService> {
 public:
  // `clients` accepts the clients' connections, `upstream` connects to the coordinator; both
  // (possibly one transport) must outlive the service.
  AggregatorService(boost::asio::io_context& io, Transport& clients, Transport& upstream,
                    AggregatorOptions options);

  // Connects to the coordinator (retrying until it answers).
  void Start();
  // Closes every connection (its clients get Goodbye(reason, SHUTTING_DOWN) and reconnect) and
  // stops listening; on_finished(OK). Thread-safe; idempotent.
  void Stop(const std::string& reason);
  // Runs once, on the strand, when the service stopped: OK after Stop or a Goodbye of a run that
  // completed, else why (the coordinator refused it, or its run failed).
  void set_on_finished(std::function<void(Status)> cb) { on_finished_ = std::move(cb); }
  // Runs once, on the strand, after on_finished, when every client connection has finished
  // closing (Goodbye written and the peer's close seen, or shutdown_timeout passed).
  void set_on_closed(std::function<void()> cb) { on_closed_ = std::move(cb); }
  // Runs on the strand once it listens for clients, with the bound address.
  void set_on_listening(std::function<void(const std::string&)> cb) {
    on_listening_ = std::move(cb);
  }

 private:
  using Strand = boost::asio::strand<boost::asio::any_io_executor>;
  struct Session {
    std::shared_ptr<Connection> conn;
    std::string id;  // empty until Hello
    TimePoint last_heard{};
    ClientRecord record;
    std::shared_ptr<ConnectionBacklog> backlog;  // its messages not yet handled on the strand
  };

  // The largest message a joined client may send: an update of the run's model.
  uint64_t MaxUpdateBytes() const;
  // Upstream.
  void Connect();
  void OnUpstream(Message msg);
  void OnUpstreamClosed(const Status& why);
  void OnWelcome(const AggregatorWelcome& w);
  void OnGroupTask(GroupTask task);
  void Heartbeat();
  // Downstream.
  void OnAccept(std::shared_ptr<Connection> conn);
  void OnMessage(Connection* key, Message msg);
  void OnHello(Session& s, const Hello& hello);
  void OnClosed(Connection* key, const Status& why);
  void Refuse(Session& s, ErrorCode code, const std::string& why);
  void Sweep();
  // The share.
  void MaybeFlush();
  void ArmFlush();
  // With secure aggregation: a GroupTask starts a SecureGroupShare; its messages go out, and its
  // result up once the session is over.
  void StartSecure(const GroupTask& task);
  // Pace steering (pace.max_idle, docs/tier.md): after a round's tasks, the connected clients
  // beyond the cap that hold none are told to come back later (PaceWindow, its round cycle the
  // time between group tasks), and their connections close.
  void PaceIdle(const GroupTask& task);
  void AfterSecure();
  void QueueMembership();
  // A client left: queued for the coordinator (or cancels its join, if that is still queued).
  void NoteLeft(const std::string& id);
  // The departures held while a secure session could still name them go up (those not back).
  void ReleaseHeldLeft();
  // The share's waiting records and their sum go up now.
  void SendResult();
  void Finish(Status result, const std::string& reason, uint32_t code);
  void NotifyClosedWhenDrained();  // on_closed once finished and no session is left

  Transport& clients_;
  Transport& upstream_transport_;
  AggregatorOptions options_;
  Clock* clock_;
  Strand strand_;
  std::shared_ptr<SecurityLog> security_;
  std::unique_ptr<Timer> sweep_timer_, flush_timer_, reconnect_timer_, heartbeat_timer_,
      secure_timer_;
  std::mt19937_64 jitter_{std::random_device{}()};

  std::shared_ptr<Connection> upstream_;
  bool welcomed_ = false;
  std::string id_;  // this aggregator's, from the coordinator's Welcome
  std::chrono::milliseconds upstream_heartbeat_{5'000};
  std::optional<TierConfig> config_;
  ModelWeights zero_;  // a model of the run's layout
  ModelLayout layout_;
  uint64_t fingerprint_ = 0;
  std::shared_ptr<Listener> listener_;

  std::map<Connection*, Session> sessions_;
  std::map<std::string, Connection*> by_id_;  // clients past Hello
  GroupMembership membership_;                // changes not yet sent
  std::set<std::string> held_left_;           // members of secure_ that left (sent when it ends)
  std::set<std::string> known_;  // clients the coordinator was told joined and not yet told left
  bool membership_queued_ = false;
  std::unique_ptr<GroupShare> share_;
  RoundCycle pace_cycle_;                     // pace steering: the time between group tasks
  std::unique_ptr<SecureGroupShare> secure_;  // this round's, with secure aggregation
  std::string secure_phase_;                  // its phase last logged
  bool finished_ = false;
  uint32_t finish_code_ = 0;  // the Goodbye code of Finish, for clients that connect after it
  std::function<void(Status)> on_finished_;
  std::function<void()> on_closed_;
  std::function<void(const std::string&)> on_listening_;
};

}  // namespace tributary
