#include "aggregator/aggregator_service.h"

#include <fmt/format.h>

#include <algorithm>
#include <boost/asio/post.hpp>
#include <set>
#include <span>
#include <string_view>

#include "compression/codec_spec.h"
#include "coordinator/engine_parts.h"
#include "core/log.h"
#include "core/rng.h"
#include "protocol/message_codec.h"
#include "protocol/task_failed_text.h"
#include "protocol/wire.h"

namespace tributary {

namespace asio = boost::asio;

namespace {

constexpr uint64_t kAggregatorPaceStream = 0x9ace'a99;

Result<ModelWeights> ZeroModelOf(const ModelLayout& layout) {
  ModelWeights::LayoutSpec spec;
  spec.reserve(layout.size());
  for (const TensorLayout& t : layout) {
    if (t.dtype != "F32")
      return Status::InvalidArgument("tensor '" + t.name + "' has dtype " + t.dtype +
                                     "; the run's layout must be F32");
    spec.emplace_back(t.name, t.shape);
  }
  return ModelWeights::Create(spec);
}

}  // namespace

AggregatorService::AggregatorService(asio::io_context& io, Transport& clients, Transport& upstream,
                                     AggregatorOptions options)
    : clients_(clients),
      upstream_transport_(upstream),
      options_(std::move(options)),
      clock_(options_.clock ? options_.clock : Clock::Real()),
      strand_(asio::make_strand(asio::any_io_executor(io.get_executor()))),
      security_(options_.security_log ? options_.security_log : std::make_shared<SecurityLog>()),
      sweep_timer_(clock_->MakeTimer(strand_)),
      flush_timer_(clock_->MakeTimer(strand_)),
      reconnect_timer_(clock_->MakeTimer(strand_)),
      heartbeat_timer_(clock_->MakeTimer(strand_)),
      secure_timer_(clock_->MakeTimer(strand_)) {}

void AggregatorService::Start() {
  asio::post(strand_, [self = shared_from_this()] {
    self->Connect();
    self->Sweep();
  });
}

void AggregatorService::Stop(const std::string& reason) {
  asio::post(strand_, [self = shared_from_this(), reason] {
    // Its clients reconnect (to it when it is back, or to another aggregator).
    self->Finish(Status::Ok(), reason, static_cast<uint32_t>(ErrorCode::kShuttingDown));
  });
}

// ---- upstream ----

void AggregatorService::Connect() {
  if (finished_) return;
  std::weak_ptr<AggregatorService> weak = weak_from_this();
  upstream_transport_.Connect(
      options_.coordinator_address, [weak](Result<std::shared_ptr<Connection>> c) {
        auto self = weak.lock();
        if (!self) return;
        asio::post(self->strand_, [self, c = std::move(c)]() mutable {
          if (self->finished_) {
            if (c.ok()) (*c)->Close();
            return;
          }
          if (!c.ok()) return self->OnUpstreamClosed(c.status());
          self->upstream_ = *c;
          std::weak_ptr<AggregatorService> w = self;
          self->upstream_->Start(
              [w](Message m) {
                if (auto s = w.lock())
                  asio::post(s->strand_,
                             [s, m = std::move(m)]() mutable { s->OnUpstream(std::move(m)); });
              },
              [w, conn = self->upstream_.get()](Status why) {
                if (auto s = w.lock())
                  asio::post(s->strand_, [s, conn, why] {
                    if (s->upstream_.get() == conn) s->OnUpstreamClosed(why);
                  });
              });
          self->upstream_->Send(AggregatorHello{kProtocolVersion, self->options_.software_version});
        });
      });
}

void AggregatorService::OnUpstreamClosed(const Status& why) {
  if (finished_) return;
  if (upstream_ || welcomed_)
    Log().warn("aggregator: lost the coordinator at {}: {}; its share of round {} is dropped",
               options_.coordinator_address, why.ok() ? "closed" : why.message(),
               share_ ? std::to_string(share_->round()) : std::string("(none)"));
  else
    Log().warn("aggregator: cannot reach the coordinator at {}: {}", options_.coordinator_address,
               why.message());
  upstream_.reset();
  share_.reset();
  secure_.reset();
  held_left_.clear();  // the next connection's membership lists who is here
  known_.clear();
  secure_timer_->Cancel();
  flush_timer_->Cancel();
  heartbeat_timer_->Cancel();
  const auto base = options_.reconnect_delay.count();
  const auto delay = std::chrono::milliseconds(
      base + static_cast<int64_t>(jitter_() % static_cast<uint64_t>(base / 2 + 1)));
  reconnect_timer_->ExpiresAfter(delay, [weak = weak_from_this()] {
    if (auto self = weak.lock()) self->Connect();
  });
}

void AggregatorService::OnUpstream(Message msg) {
  if (finished_) return;
  if (auto* w = std::get_if<AggregatorWelcome>(&msg)) return OnWelcome(*w);
  if (auto* t = std::get_if<GroupTask>(&msg)) return OnGroupTask(std::move(*t));
  if (auto* e = std::get_if<Error>(&msg)) {
    Log().error("aggregator: the coordinator reports {}", DescribeError(e->code, e->message));
    if (!welcomed_)  // refused at its hello: nothing a retry changes
      Finish(Status::FailedPrecondition("the coordinator refused this aggregator: " + e->message),
             "the aggregator was refused by the coordinator",
             static_cast<uint32_t>(ErrorCode::kRunFailed));
    return;
  }
  if (auto* g = std::get_if<Goodbye>(&msg)) {
    if (g->code == static_cast<uint32_t>(ErrorCode::kShuttingDown)) {
      // Stopped, not over: the coordinator closes the link and we reconnect until it is back.
      Log().warn("aggregator: the coordinator is shutting down ({}); reconnecting", g->reason);
      return;
    }
    Finish(g->code == 0 ? Status::Ok()
                        : Status::FailedPrecondition("the coordinator's run failed: " + g->reason),
           g->reason, g->code);
    return;
  }
  if (std::holds_alternative<tributary::Heartbeat>(msg)) return;  // the coordinator's echo
  Log().warn("aggregator: unexpected {} from the coordinator", MessageTypeName(TypeOf(msg)));
}

void AggregatorService::OnWelcome(const AggregatorWelcome& w) {
  Result<TierConfig> config = ParseTierConfig(w.run_config);
  Result<ModelWeights> zero =
      config.ok() ? ZeroModelOf(w.layout) : Result<ModelWeights>(config.status());
  Status ok = zero.status();
  if (ok.ok() && zero->fingerprint() != w.layout_fingerprint)
    ok = Status::InvalidArgument("the run's layout does not match its fingerprint");
  if (ok.ok() && welcomed_ && w.layout_fingerprint != fingerprint_)
    ok = Status::FailedPrecondition("the coordinator now runs another model than before");
  if (!ok.ok()) {
    Finish(ok.WithContext("the coordinator's welcome"), "the aggregator cannot serve this run",
           static_cast<uint32_t>(ErrorCode::kRunFailed));
    return;
  }
  const bool first = !welcomed_;
  welcomed_ = true;
  id_ = w.aggregator_id;
  config_ = std::move(*config);
  zero_ = std::move(*zero);
  layout_ = w.layout;
  fingerprint_ = w.layout_fingerprint;
  upstream_heartbeat_ = std::chrono::milliseconds(std::max<uint32_t>(w.heartbeat_interval_ms, 100));
  Log().info("aggregator {}: connected to the coordinator at {} (codec {}, strategy {})", id_,
             options_.coordinator_address, config_->round.codec, config_->strategy);
  Heartbeat();
  if (first) {
    std::weak_ptr<AggregatorService> weak = weak_from_this();
    Result<std::shared_ptr<Listener>> l =
        clients_.Listen(options_.listen_address, [weak](std::shared_ptr<Connection> c) {
          if (auto self = weak.lock()) asio::post(self->strand_, [self, c] { self->OnAccept(c); });
        });
    if (!l.ok()) {
      Finish(l.status().WithContext("listen on " + options_.listen_address),
             "the aggregator cannot listen", static_cast<uint32_t>(ErrorCode::kShuttingDown));
      return;
    }
    listener_ = *l;
    Log().info("aggregator {}: listening for clients on {}", id_, listener_->address());
    if (on_listening_) on_listening_(listener_->address());
    return;
  }
  // A new connection to the coordinator (it restarted, or the link dropped): every client here
  // joins again.
  membership_ = GroupMembership{};
  for (const auto& [id, conn] : by_id_) {
    ClientCapabilities caps = sessions_.at(conn).record.capabilities;
    caps.layout.clear();
    membership_.joined.push_back({id, std::move(caps)});
  }
  QueueMembership();
}

void AggregatorService::Heartbeat() {
  if (!upstream_ || finished_) return;
  upstream_->Send(tributary::Heartbeat{0, 0});
  heartbeat_timer_->ExpiresAfter(upstream_heartbeat_, [weak = weak_from_this()] {
    if (auto self = weak.lock()) self->Heartbeat();
  });
}

void AggregatorService::OnGroupTask(GroupTask task) {
  if (!config_) return;
  if (share_ && share_->has_records() && upstream_) {
    // What the previous share still holds goes first (the coordinator judges whether it counts).
    if (Result<GroupResult> r = share_->TakeResult(); r.ok()) upstream_->Send(std::move(*r));
  }
  if (task.secagg.round != 0) return StartSecure(task);
  const TimePoint now = clock_->Now();
  const TimePoint deadline = now + std::chrono::milliseconds(task.task.deadline_ms);
  Result<std::unique_ptr<GroupShare>> share =
      GroupShare::Start(*config_, task, zero_, now, deadline - options_.flush_margin);
  if (!share.ok()) {
    Log().error("aggregator {}: cannot serve round {}: {}", id_, task.task.round,
                share.status().message());
    upstream_->Send(Error{static_cast<uint32_t>(ErrorCode::kInternal),
                          "aggregator " + id_ + " cannot serve round " +
                              std::to_string(task.task.round) + ": " + share.status().message()});
    return;
  }
  share_ = std::move(*share);
  size_t sent = 0;
  for (auto& [id, t] : share_->Tasks()) {
    auto it = by_id_.find(id);
    if (it == by_id_.end()) {  // left before its task came: it will not answer
      share_->OnLeft(id);
      continue;
    }
    sessions_.at(it->second).conn->Send(std::move(t));
    ++sent;
  }
  Log().info("aggregator {}: round {}: {} tasks sent", id_, share_->round(), sent);
  PaceIdle(task);
  ArmFlush();
  MaybeFlush();
}

// ---- the share ----

void AggregatorService::PaceIdle(const GroupTask& task) {
  const RoundConfig& run = config_->round;
  if (run.pace_max_idle <= 0) return;
  std::set<std::string_view> busy;
  for (const GroupAssignee& m : task.members) busy.insert(m.client_id);
  std::vector<Connection*> idle;  // in id order (by_id_ is a map), then the seed's draw
  for (const auto& [id, conn] : by_id_)
    if (!busy.count(id)) idle.push_back(conn);
  pace_cycle_.OnRoundStart(task.task.round, clock_->Now());
  const size_t keep = static_cast<size_t>(run.pace_max_idle);
  if (idle.size() <= keep) return;
  Rng rng = Rng::Stream(run.seed, {kAggregatorPaceStream, task.task.round, ClientIdHash(id_)});
  rng.Shuffle(std::span<Connection*>(idle));
  const uint64_t after = static_cast<uint64_t>(run.pace_come_back.count());
  const uint64_t window = static_cast<uint64_t>(
      PaceWindow(run, idle.size() - keep, task.members.size(),
                 pace_cycle_.cycle(std::chrono::milliseconds(task.task.deadline_ms)))
          .count());
  for (size_t i = keep; i < idle.size(); ++i) {
    Session& s = sessions_.at(idle[i]);
    s.conn->Send(Goodbye{fmt::format("pace steering: aggregator {} keeps {} idle clients "
                                     "(pace.max_idle); come back in {}-{} s",
                                     id_, keep, after / 1000, (after + window) / 1000),
                         0, after, window});
    s.conn->Close();  // it leaves (OnClosed), and the coordinator hears so
  }
  Log().info("aggregator {}: round {}: pace steering sent {} of {} idle clients away for {}-{} s",
             id_, task.task.round, idle.size() - keep, idle.size(), after / 1000,
             (after + window) / 1000);
}

void AggregatorService::StartSecure(const GroupTask& task) {
  std::vector<std::string> connected;
  for (const GroupAssignee& m : task.members)
    if (by_id_.count(m.client_id)) connected.push_back(m.client_id);
  if (secure_)
    Log().warn(
        "aggregator {}: round {}'s secure aggregation ends unfinished (phase '{}'): "
        "round {} begins",
        id_, secure_->round(), secure_->phase_name(), task.task.round);
  secure_timer_->Cancel();
  ReleaseHeldLeft();  // the unfinished session sends no result that could name them
  Result<std::unique_ptr<SecureGroupShare>> s =
      SecureGroupShare::Start(*config_, task, connected, clock_->Now());
  if (!s.ok()) {
    Log().error("aggregator {}: cannot run round {}'s secure aggregation: {}", id_, task.task.round,
                s.status().message());
    GroupResult failed;
    failed.round = task.task.round;
    failed.task_id = task.task.task_id;
    failed.model_version = task.task.model_version;
    failed.secagg_bits = task.secagg.sum_bits;
    failed.secagg_length = task.secagg.vector_length;
    failed.secagg_failure = "aggregator " + id_ + ": " + s.status().message();
    upstream_->Send(std::move(failed));
    secure_.reset();
    return;
  }
  secure_ = std::move(*s);
  secure_phase_.clear();
  Log().info("aggregator {}: round {}: secure aggregation over {} of its {} members", id_,
             task.task.round, connected.size(), task.members.size());
  PaceIdle(task);
  AfterSecure();
}

void AggregatorService::AfterSecure() {
  if (!secure_) return;
  for (SecureGroupShare::Outgoing& o : secure_->TakeOutbox()) {
    auto it = by_id_.find(o.client_id);
    if (it != by_id_.end()) sessions_.at(it->second).conn->Send(std::move(o.message));
  }
  if (secure_->phase_name() != secure_phase_) {
    secure_phase_ = secure_->phase_name();
    Log().info("aggregator {}: round {}: secure aggregation phase '{}'", id_, secure_->round(),
               secure_phase_);
  }
  if (secure_->over()) {
    GroupResult r = secure_->TakeResult();
    if (r.secagg_failure.empty())
      Log().info(
          "aggregator {}: round {}: the secure sum of {} survivors sent up ({} dropped after "
          "sharing keys)",
          id_, r.round, r.records.size(), secure_->dropped_after_sharing());
    else
      Log().warn("aggregator {}: round {}: secure aggregation failed: {}", id_, r.round,
                 r.secagg_failure);
    if (upstream_) upstream_->Send(std::move(r));
    secure_.reset();
    secure_timer_->Cancel();
    ReleaseHeldLeft();
    return;
  }
  if (std::optional<TimePoint> at = secure_->next_deadline())
    secure_timer_->ExpiresAt(*at, [weak = weak_from_this()] {
      auto self = weak.lock();
      if (!self || !self->secure_) return;
      self->secure_->OnTick(self->clock_->Now());
      self->AfterSecure();
    });
}

void AggregatorService::ArmFlush() {
  if (!share_) return;
  flush_timer_->ExpiresAt(share_->flush_at(), [weak = weak_from_this()] {
    if (auto self = weak.lock()) self->MaybeFlush();
  });
}

void AggregatorService::SendResult() {
  if (!share_ || !upstream_ || !share_->has_records()) return;
  Result<GroupResult> r = share_->TakeResult();
  if (!r.ok()) {
    Log().error("aggregator {}: round {}: {}", id_, share_->round(), r.status().message());
    return;
  }
  size_t accepted = 0;
  for (const GroupRecord& rec : r->records) accepted += rec.accepted() ? 1 : 0;
  Log().info("aggregator {}: round {}: {} updates ({} accepted) sent up", id_, r->round,
             r->records.size(), accepted);
  upstream_->Send(std::move(*r));
}

void AggregatorService::MaybeFlush() {
  if (!share_ || !upstream_) return;
  if (share_->Due(clock_->Now())) SendResult();
  if (share_->Done()) {
    share_.reset();
    flush_timer_->Cancel();
  }
}

void AggregatorService::QueueMembership() {
  if (membership_queued_) return;
  membership_queued_ = true;
  // Every change of this turn of the strand (a burst of joins) goes in one message.
  asio::post(strand_, [self = shared_from_this()] {
    self->membership_queued_ = false;
    if (!self->upstream_ || !self->welcomed_ || self->finished_) return;
    if (self->membership_.joined.empty() && self->membership_.left.empty()) return;
    for (const GroupMember& m : self->membership_.joined) self->known_.insert(m.client_id);
    for (const std::string& id : self->membership_.left) self->known_.erase(id);
    self->upstream_->Send(std::move(self->membership_));
    self->membership_ = GroupMembership{};
  });
}

// ---- downstream ----

void AggregatorService::OnAccept(std::shared_ptr<Connection> conn) {
  if (finished_) {
    conn->Start([](Message) {}, [](Status) {});
    conn->Send(Goodbye{"the aggregator is shutting down", finish_code_});
    conn->Close();
    return;
  }
  Connection* key = conn.get();
  // What the client sent and the strand has not handled yet is bounded by about one update: past
  // that its reading holds until the strand catches up (a fold, a secure session's unmasking).
  auto backlog = ConnectionBacklog::Create(conn, MaxUpdateBytes());
  sessions_[key] = Session{conn, "", clock_->Now(), {}, backlog};
  conn->SetMaxMessageBytes(ProtocolLimits{}.max_control_message_bytes);
  std::weak_ptr<AggregatorService> weak = weak_from_this();
  conn->Start(
      [weak, key, backlog](Message m) {
        auto self = weak.lock();
        if (!self) return;
        ConnectionBacklog::Ticket t = backlog->Take(EncodedBodyBytes(m));
        asio::post(self->strand_, [self, key, m = std::move(m), t = std::move(t)]() mutable {
          self->OnMessage(key, std::move(m));
        });
      },
      [weak, key](Status why) {
        if (auto self = weak.lock())
          asio::post(self->strand_, [self, key, why] { self->OnClosed(key, why); });
      });
}

uint64_t AggregatorService::MaxUpdateBytes() const {
  // The largest update of this run's model under its codec (as the coordinator's bound).
  const uint64_t n = zero_.size();
  return 8 * n + n / 8 + (uint64_t{512} << 10);
}

void AggregatorService::Refuse(Session& s, ErrorCode code, const std::string& why) {
  const std::string& address = s.conn->peer().address;
  security_->Note(
      "client refused at Hello", SourceAddress(address),
      fmt::format("aggregator {}: refusing {} ({}): {}", id_, s.conn->peer().id, address, why));
  s.conn->Send(Error{static_cast<uint32_t>(code), why});
  s.conn->Close();
}

void AggregatorService::OnHello(Session& s, const Hello& hello) {
  if (s.conn->peer().role != PeerRole::kClient)
    return Refuse(s, ErrorCode::kUnauthenticated,
                  "an aggregator's certificate cannot join an aggregator as a client");
  if (hello.protocol_version != kProtocolVersion)
    return Refuse(s, ErrorCode::kUnsupportedVersion,
                  "client speaks protocol version " + std::to_string(hello.protocol_version) +
                      ", this aggregator speaks version " + std::to_string(kProtocolVersion));
  const ClientCapabilities& caps = hello.capabilities;
  if (caps.layout_fingerprint != fingerprint_ ||
      LayoutFingerprint(caps.layout) != caps.layout_fingerprint) {
    std::string diff = LayoutDifference(layout_, "the run's model", caps.layout, "the client's");
    if (diff.empty()) diff = "the declared tensor list does not match the layout fingerprint";
    return Refuse(s, ErrorCode::kLayoutMismatch,
                  "the client's model layout is not this run's: " + diff);
  }
  const RoundConfig& run = config_->round;
  for (const std::string* spec : {&run.codec, &run.download_codec}) {
    if (!CanEncodeCodec(caps.codecs, *spec))
      return Refuse(s, ErrorCode::kProtocolViolation,
                    "this run uses codec '" + *spec + "', which the client does not support");
  }
  if (caps.num_examples > run.max_num_examples)
    return Refuse(s, ErrorCode::kProtocolViolation,
                  fmt::format("the client announces {} examples, more than this run's cap "
                              "run.max_num_examples = {}",
                              caps.num_examples, run.max_num_examples));
  const std::string id = s.conn->peer().id;
  if (id.empty()) return Refuse(s, ErrorCode::kUnauthenticated, "no authenticated client id");
  if (auto it = by_id_.find(id); it != by_id_.end() && it->second != s.conn.get()) {
    auto os = sessions_.find(it->second);
    if (os != sessions_.end()) {
      os->second.id.clear();
      os->second.conn->Send(Goodbye{"superseded by a new connection from the same client",
                                    static_cast<uint32_t>(ErrorCode::kSuperseded)});
      os->second.conn->Close();
    }
    by_id_.erase(it);
    if (share_) share_->OnLeft(id);  // the old session's task is forfeit, as at the coordinator
    if (secure_) secure_->OnLeft(id, clock_->Now());
  }
  s.id = id;
  s.record.id = id;
  s.record.capabilities = caps;
  s.record.joined = s.record.last_seen = clock_->Now();
  by_id_[id] = s.conn.get();
  s.conn->SetMaxMessageBytes(MaxUpdateBytes());
  s.conn->Send(Welcome{kProtocolVersion, id, options_.software_version,
                       static_cast<uint32_t>(options_.heartbeat_interval.count())});
  Log().info("aggregator {}: client {} joined from {} ({} examples)", id_, id,
             s.conn->peer().address, caps.num_examples);
  ClientCapabilities up = caps;
  up.layout.clear();
  // Back before the coordinator heard it left: the join alone tells it (a join of a client it
  // has is a reconnect), and a "left" after it in the same message would remove the client.
  held_left_.erase(id);
  std::erase(membership_.left, id);
  membership_.joined.push_back({id, std::move(up)});
  QueueMembership();
}

void AggregatorService::OnMessage(Connection* key, Message msg) {
  auto it = sessions_.find(key);
  if (it == sessions_.end() || finished_) return;
  Session& s = it->second;
  const TimePoint now = clock_->Now();
  s.last_heard = now;
  if (s.id.empty()) {
    if (const Hello* hello = std::get_if<Hello>(&msg)) return OnHello(s, *hello);
    return Refuse(s, ErrorCode::kProtocolViolation,
                  "expected Hello, got " + MessageTypeName(TypeOf(msg)));
  }
  if (auto* u = std::get_if<UpdateSubmission>(&msg)) {
    if (!share_) {
      s.conn->Send(Error{
          static_cast<uint32_t>(ErrorCode::kProtocolViolation),
          "update refused: round " + std::to_string(u->round) + " is not open at this aggregator"});
      return;
    }
    if (std::optional<UpdateRefusal> no = share_->OnUpdate(s.id, *u, &s.record, now)) {
      Log().warn("aggregator {}: update of {} for round {} refused: {}", id_, s.id, u->round,
                 no->reason);
      s.conn->Send(Error{static_cast<uint32_t>(no->code), "update refused: " + no->reason});
    }
    MaybeFlush();
  } else if (std::holds_alternative<SecAggKeysMsg>(msg) ||
             std::holds_alternative<SecAggSharesMsg>(msg) ||
             std::holds_alternative<SecAggMaskedInputMsg>(msg) ||
             std::holds_alternative<SecAggUnmaskResponseMsg>(msg)) {
    Status taken = secure_ ? secure_->OnSecAgg(s.id, msg, now)
                           : Status::FailedPrecondition(
                                 "no round with secure aggregation is open at this aggregator");
    if (!taken.ok()) {
      Log().warn("aggregator {}: {} of {} refused: {}", id_, MessageTypeName(TypeOf(msg)), s.id,
                 taken.message());
      s.conn->Send(Error{static_cast<uint32_t>(ErrorCode::kProtocolViolation), taken.message()});
    }
    AfterSecure();
  } else if (auto* hb = std::get_if<tributary::Heartbeat>(&msg)) {
    s.conn->Send(*hb);
  } else if (auto* f = std::get_if<TaskFailed>(&msg)) {
    // Its record goes up with the share's next result (the coordinator counts a dropout); with
    // secure aggregation, the group's session stops waiting for its masked input.
    Status taken = Status::FailedPrecondition("no round is open at this aggregator");
    if (share_) {
      taken = share_->OnTaskFailed(s.id, *f);
    } else if (secure_ && secure_->HasMember(s.id) && f->fit() && f->round == secure_->round()) {
      secure_->OnNoInput(s.id, now);
      taken = Status::Ok();
    }
    if (taken.ok())
      Log().warn("aggregator {}: client {} could not do its {}", id_, s.id, DescribeTaskFailed(*f));
    else
      Log().debug("aggregator {}: client {}: TaskFailed ignored ({}): {}", id_, s.id,
                  taken.message(), DescribeTaskFailed(*f));
    if (share_) MaybeFlush();
    if (secure_) AfterSecure();
  } else if (auto* e = std::get_if<Error>(&msg)) {
    Log().warn("aggregator {}: client {} reports {}", id_, s.id,
               DescribeError(e->code, e->message));
  } else if (std::holds_alternative<Goodbye>(msg)) {
    s.conn->Close();
  } else {
    Refuse(s, ErrorCode::kProtocolViolation,
           "unexpected " + MessageTypeName(TypeOf(msg)) + " from a client of an aggregator");
  }
}

void AggregatorService::OnClosed(Connection* key, const Status& why) {
  auto it = sessions_.find(key);
  if (it == sessions_.end()) return;
  const std::string id = it->second.id;
  // Bad input or a stalled frame from the peer is a security event, as at the coordinator.
  if (ClosedForBadInput(why)) {
    const std::string& address = it->second.conn->peer().address;
    security_->Note("connection closed for bad input", SourceAddress(address),
                    fmt::format("aggregator {}: {} ({}): {}", id_,
                                id.empty() ? it->second.conn->peer().id + " before Hello" : id,
                                address, why.message()));
  }
  sessions_.erase(it);
  if (finished_) return NotifyClosedWhenDrained();
  if (id.empty()) return;
  auto b = by_id_.find(id);
  if (b == by_id_.end() || b->second != key) return;
  by_id_.erase(b);
  Log().info("aggregator {}: client {} left{}", id_, id, why.ok() ? "" : ": " + why.message());
  if (share_) {
    // Its update goes up before the coordinator hears it left: a result naming a client that is
    // no longer this aggregator's is refused whole, with every other member's update in it.
    if (share_->HasRecordOf(id)) SendResult();
    share_->OnLeft(id);
    MaybeFlush();
  }
  // A member of the secure session may be named in its result (a survivor that left after its
  // masked input): the coordinator hears it left once that result is sent.
  if (secure_ && !secure_->over() && secure_->HasMember(id))
    held_left_.insert(id);
  else
    NoteLeft(id);
  if (secure_) {
    secure_->OnLeft(id, clock_->Now());
    AfterSecure();
  }
}

void AggregatorService::NoteLeft(const std::string& id) {
  // A join not sent yet is dropped: a client the coordinator does not know needs no "left"; one it
  // knows (the join was a reconnect) does.
  auto joined = std::find_if(membership_.joined.begin(), membership_.joined.end(),
                             [&](const GroupMember& m) { return m.client_id == id; });
  if (joined != membership_.joined.end()) {
    membership_.joined.erase(joined);
    if (!known_.count(id)) return;
  }
  membership_.left.push_back(id);
  QueueMembership();
}

void AggregatorService::ReleaseHeldLeft() {
  for (const std::string& id : held_left_)
    if (!by_id_.count(id)) NoteLeft(id);  // one that came back stays
  held_left_.clear();
}

void AggregatorService::Sweep() {
  if (finished_) return;
  const TimePoint now = clock_->Now();
  for (auto& [key, s] : sessions_) {
    // Not read while it waits for the transfer budget: its silence is ours, not the client's.
    if (s.conn->waiting_for_budget() || s.backlog->held()) s.last_heard = now;
    if (now - s.last_heard > options_.client_timeout) {
      Log().warn("aggregator {}: closing {} ({}): silent for over {} ms", id_,
                 s.id.empty() ? "an unjoined session" : s.id, s.conn->peer().address,
                 options_.client_timeout.count());
      s.last_heard = now;
      s.conn->Send(Error{static_cast<uint32_t>(ErrorCode::kTimeout),
                         "no message within the client timeout"});
      s.conn->Close();
    }
  }
  sweep_timer_->ExpiresAfter(
      std::max<Duration>(options_.heartbeat_interval, std::chrono::milliseconds(100)),
      [weak = weak_from_this()] {
        if (auto self = weak.lock()) self->Sweep();
      });
}

void AggregatorService::Finish(Status result, const std::string& reason, uint32_t code) {
  if (finished_) return;
  finished_ = true;
  finish_code_ = code;
  for (Timer* t : {sweep_timer_.get(), flush_timer_.get(), reconnect_timer_.get(),
                   heartbeat_timer_.get(), secure_timer_.get()})
    t->Cancel();
  if (listener_) listener_->Stop();
  for (auto& [key, s] : sessions_) {
    s.conn->Send(Goodbye{reason, code});
    s.conn->Close();
  }
  if (upstream_) {
    upstream_->Send(Goodbye{reason, 0});
    upstream_->Close();
  }
  if (on_finished_) on_finished_(result);
  NotifyClosedWhenDrained();
}

void AggregatorService::NotifyClosedWhenDrained() {
  if (!finished_ || !sessions_.empty() || !on_closed_) return;
  std::function<void()> cb = std::move(on_closed_);
  on_closed_ = nullptr;
  cb();
}

}  // namespace tributary
