#include "coordinator/coordinator_service.h"
#include "coordinator/group_task.h"

#include <fmt/format.h>

#include <boost/asio/post.hpp>

#include "compression/codec.h"
#include "compression/codec_spec.h"
#include "coordinator/engine_parts.h"
#include "coordinator/tier_config.h"
#include "core/log.h"
#include "crypto/client_id.h"
#include "protocol/message_codec.h"
#include "protocol/task_failed_text.h"

namespace tributary {

namespace asio = boost::asio;

namespace {

// The largest UpdateSubmission an honest client of this run sends: the update of a model of n
// floats under the run's codec (raw floats: 4 bytes each; any other pipeline at most 8, index and
// value, plus zstd's worst-case growth), and the message's own fields (metrics: at most 1,024
// names of 256 bytes). With secure aggregation, a masked input: at most 62 bits per value. Nothing
// larger is accepted after Hello. With SCAFFOLD (`control`), the control delta's raw floats too.
uint64_t MaxUpdateMessageBytes(const std::string& codec_spec, bool secagg, bool control, size_t n) {
  Result<std::unique_ptr<Codec>> codec = MakeCodec(codec_spec);
  const uint64_t per_float = codec.ok() && (*codec)->raw_floats() && !secagg ? 4 : 8;
  const uint64_t payload = per_float * n + (control ? 4 * uint64_t{n} : 0);
  return payload + payload / 64 + (uint64_t{512} << 10);
}

// The largest split message an honest client of a split run sends: one batch of the run's batch
// size at the cut, or in a U-shaped split at the larger of its two cuts (the head's gradient goes
// up too), at 8 bytes a value under any codec but dense's 4, as for updates; a label a sample;
// and the message's own fields. 0 without split learning.
uint64_t MaxSplitBatchBytes(RunDriver& driver) {
  const SplitServer* split = driver.split_server();
  if (split == nullptr) return 0;
  const uint64_t batch = static_cast<uint64_t>(std::max(1, driver.config().round.fit.batch_size));
  const SplitModel& cut = split->split();
  const int64_t widest = cut.u_shaped() ? std::max(cut.cut_shape.numel(), cut.head_shape.numel())
                                        : cut.cut_shape.numel();
  const uint64_t n = batch * static_cast<uint64_t>(widest);
  const uint64_t payload = 8 * n + batch;
  return payload + payload / 64 + (uint64_t{512} << 10);
}

}  // namespace

CoordinatorService::CoordinatorService(asio::io_context& io, Transport& transport,
                                       RunDriver& driver, CoordinatorServiceOptions options)
    : transport_(transport),
      driver_(driver),
      options_(std::move(options)),
      clock_(options_.clock ? options_.clock : Clock::Real()),
      io_strand_(asio::make_strand(asio::any_io_executor(io.get_executor()))),
      engine_strand_(asio::make_strand(options_.engine_executor
                                           ? options_.engine_executor
                                           : asio::any_io_executor(io.get_executor()))),
      split_executor_(options_.split_executor    ? options_.split_executor
                      : options_.engine_executor ? options_.engine_executor
                                                 : asio::any_io_executor(io.get_executor())),
      // What clients declare at Hello: the model they train (with run.federate = "unfrozen" the
      // whole model, though only its unfrozen tensors travel).
      run_layout_(LayoutOf(driver.client_model())),
      run_fingerprint_(LayoutFingerprint(run_layout_)),
      max_update_bytes_(std::max(
          MaxUpdateMessageBytes(driver.config().round.codec, driver.config().round.secagg.enabled,
                                driver.engine().strategy().uses_control_variates(),
                                driver.engine().model().size()),
          MaxSplitBatchBytes(driver))),
      // A partial sum: at most 16 bytes per value (two limbs), and its records.
      max_aggregator_bytes_(16 * uint64_t{driver.engine().model().size()} + (uint64_t{64} << 20)),
      max_update_dim_(driver.engine().model().size()),
      tier_refusal_(WhyNotThroughTier(driver.engine().strategy(), driver.config().round)),
      tier_config_(TierConfigToml(driver.config())),
      security_(options_.security_log ? options_.security_log : std::make_shared<SecurityLog>()),
      sweep_timer_(clock_->MakeTimer(io_strand_)),
      deadline_timer_(clock_->MakeTimer(engine_strand_)),
      refusals_(options_.refusal_window) {}

template <class F>
void CoordinatorService::OnEngine(F&& fn) {
  asio::post(engine_strand_, [self = shared_from_this(), fn = std::forward<F>(fn)]() mutable {
    if (self->run_over_) return;
    fn(self->driver_.engine());
    self->AfterEngine();
  });
}

void CoordinatorService::RunOnEngine(std::function<void()> fn) {
  asio::post(engine_strand_, [self = shared_from_this(), fn = std::move(fn)] {
    if (!self->run_over_) fn();
  });
}

Status CoordinatorService::Start() {
  std::weak_ptr<CoordinatorService> weak = weak_from_this();
  TRIB_ASSIGN_OR_RETURN(
      listener_, transport_.Listen(options_.listen_address, [weak](std::shared_ptr<Connection> c) {
        if (auto self = weak.lock()) asio::post(self->io_strand_, [self, c] { self->OnAccept(c); });
      }));
  address_ = listener_->address();
  const TimePoint now = clock_->Now();
  OnEngine([now](RunEngine& e) { e.OnTick(now); });
  asio::post(io_strand_, [self = shared_from_this()] { self->Sweep(); });
  return Status::Ok();
}

void CoordinatorService::Stop(const std::string& reason) {
  asio::post(engine_strand_, [self = shared_from_this(), reason] {
    self->FinishRun(Status::Ok(), reason, static_cast<uint32_t>(ErrorCode::kShuttingDown));
  });
}

// ---- I/O strand ----

void CoordinatorService::OnAccept(std::shared_ptr<Connection> conn) {
  if (closed_) {
    conn->Start([](Message) {}, [](Status) {});
    conn->Send(Goodbye{"the run is over", 0});
    conn->Close();
    return;
  }
  // At most one connection per client id: an older one that has not said Hello yet goes (one that
  // has is superseded at the new one's Hello), so one certificate cannot hold many buffers.
  const std::string& peer_id = conn->peer().id;
  if (!peer_id.empty()) {
    for (auto& [other, os] : sessions_) {
      if (os.id.empty() && os.conn->peer().id == peer_id) {
        os.conn->Send(Goodbye{"superseded by a new connection from the same client", 0});
        os.conn->Close();
      }
    }
  }
  Connection* key = conn.get();
  // What it has sent and the engine has not taken yet is bounded by about one message of its
  // largest kind (connection_backlog.h): each message is counted as it is read, until the job
  // that handles it is done.
  auto backlog = ConnectionBacklog::Create(
      conn, conn->peer().role == PeerRole::kAggregator ? max_aggregator_bytes_ : max_update_bytes_);
  sessions_[key] = Session{conn, "", clock_->Now(), false, {}, false, backlog};
  // Nothing large before Hello: only control messages (1 MiB) until the client is admitted.
  conn->SetMaxMessageBytes(ProtocolLimits{}.max_control_message_bytes);
  std::weak_ptr<CoordinatorService> weak = weak_from_this();
  conn->Start(
      [weak, key, backlog](Message m) {
        auto self = weak.lock();
        if (!self) return;
        ConnectionBacklog::Ticket t = backlog->Take(EncodedBodyBytes(m));
        asio::post(self->io_strand_, [self, key, m = std::move(m), t = std::move(t)]() mutable {
          self->OnMessage(key, std::move(m), std::move(t));
        });
      },
      [weak, key](Status why) {
        if (auto self = weak.lock())
          asio::post(self->io_strand_, [self, key, why] { self->OnClosed(key, why); });
      });
}

void CoordinatorService::Refuse(Session& s, ErrorCode code, const std::string& why) {
  const std::string& address = s.conn->peer().address;
  const std::string& client = s.id.empty() ? s.conn->peer().id : s.id;
  security_->Note("client refused at Hello", SourceAddress(address),
                  fmt::format("refusing {} ({}): {}", client, address, why));
  // The security log names only the first refusal per address in its window; the run's events
  // name every client refused before it joined (the digest bounds how many events a flood makes).
  if (s.id.empty()) {
    ClientRefused refusal{client, SourceAddress(address), why, ErrorCodeName(code)};
    asio::post(engine_strand_,
               [self = shared_from_this(), refusal = std::move(refusal), now = clock_->Now()] {
                 if (!self->run_over_) self->PublishRefusals(self->refusals_.Note(refusal, now));
               });
  }
  s.conn->Send(Error{static_cast<uint32_t>(code), why});
  s.conn->Close();
}

void CoordinatorService::OnHello(Session& s, const Hello& hello) {
  if (hello.protocol_version != kProtocolVersion)
    return Refuse(s, ErrorCode::kUnsupportedVersion,
                  "client speaks protocol version " + std::to_string(hello.protocol_version) +
                      ", this coordinator speaks version " + std::to_string(kProtocolVersion));
  // Layout agreement up front: a client that trains another model is never admitted, so it is
  // never selected and no round waits for it.
  const ClientCapabilities& caps = hello.capabilities;
  if (caps.layout_fingerprint != run_fingerprint_) {
    std::string diff =
        LayoutDifference(run_layout_, "the run's model", caps.layout, "the client's");
    if (diff.empty())
      diff = "the client declares the run's tensors but a fingerprint that does not match them";
    return Refuse(s, ErrorCode::kLayoutMismatch,
                  "the client's model layout is not this run's: " + diff);
  }
  if (LayoutFingerprint(caps.layout) != caps.layout_fingerprint)
    return Refuse(s, ErrorCode::kLayoutMismatch,
                  "the client's declared tensor list does not match its layout fingerprint");
  // The run's config is fixed once the driver exists, so reading it here is safe.
  const RoundConfig& run = driver_.config().round;
  // Clients advertise stage names ("topk", "q8", "zstd", ...; SupportedCodecs()), so a client
  // speaks a pipeline when it has every one of its stages: the update codec, and the download
  // codec (it must decode the model it is sent).
  std::string offered;
  for (const auto& c : hello.capabilities.codecs) offered += (offered.empty() ? "" : ", ") + c;
  if (!CanEncodeCodec(hello.capabilities.codecs, run.codec))
    return Refuse(s, ErrorCode::kProtocolViolation,
                  "this run uses codec '" + run.codec +
                      "', which the client does not support (it offers: " +
                      (offered.empty() ? "none" : offered) + ")");
  if (!CanEncodeCodec(hello.capabilities.codecs, run.download_codec))
    return Refuse(s, ErrorCode::kProtocolViolation,
                  "this run sends the model with download codec '" + run.download_codec +
                      "', which the client does not support (it offers: " +
                      (offered.empty() ? "none" : offered) + ")");
  // The Hello's count bounds every update of this client (RoundConfig::MaxExamplesOf), so the
  // run's cap applies here, where an operator sees the client that announced too many.
  if (hello.capabilities.num_examples > run.max_num_examples)
    return Refuse(s, ErrorCode::kProtocolViolation,
                  fmt::format("the client announces {} examples, more than this run's cap "
                              "run.max_num_examples = {}",
                              hello.capabilities.num_examples, run.max_num_examples));
  const std::string id = s.conn->peer().id;
  if (id.empty()) return Refuse(s, ErrorCode::kUnauthenticated, "no authenticated client id");
  Supersede(id, s.conn.get());  // a reconnect, or a client that came through an aggregator
  s.id = id;
  by_id_[id] = s.conn.get();
  s.conn->SetMaxMessageBytes(max_update_bytes_);
  s.conn->Send(Welcome{kProtocolVersion, id, options_.software_version,
                       static_cast<uint32_t>(options_.heartbeat_interval.count())});
  Log().info("client {} joined from {} ({}, {} examples)", id, s.conn->peer().address,
             hello.capabilities.device, hello.capabilities.num_examples);
  const TimePoint now = clock_->Now();
  OnEngine([id, caps = hello.capabilities, now](RunEngine& e) { e.OnJoined(id, caps, now); });
}

void CoordinatorService::OnMessage(Connection* key, Message msg, ConnectionBacklog::Ticket t) {
  auto it = sessions_.find(key);
  if (it == sessions_.end() || closed_) return;
  Session& s = it->second;
  const TimePoint now = clock_->Now();
  s.last_heard = now;
  if (s.id.empty()) {
    const bool aggregator = s.conn->peer().role == PeerRole::kAggregator;
    if (const auto* ah = std::get_if<AggregatorHello>(&msg); ah && aggregator) {
      OnAggregatorHello(s, *ah);
    } else if (aggregator) {
      Refuse(s, ErrorCode::kProtocolViolation,
             "an aggregator's certificate must open with AggregatorHello, got " +
                 MessageTypeName(TypeOf(msg)) + " (it cannot join as a client)");
    } else if (std::holds_alternative<AggregatorHello>(msg)) {
      Refuse(s, ErrorCode::kUnauthenticated,
             "AggregatorHello from a client's certificate: only a certificate made with "
             "`tributary-certs aggregator` may act as an aggregator");
    } else if (const Hello* hello = std::get_if<Hello>(&msg)) {
      OnHello(s, *hello);
    } else {
      Refuse(s, ErrorCode::kProtocolViolation,
             "expected Hello, got " + MessageTypeName(TypeOf(msg)));
    }
    return;
  }
  if (s.aggregator) return OnAggregatorMessage(s, std::move(msg), now, std::move(t));
  if (auto* u = std::get_if<UpdateSubmission>(&msg)) {
    // Refusals reach the log through the driver's UpdateRefused event. The message's ticket
    // goes with the job: its bytes count against this client until the engine is done with it.
    OnEngine([id = s.id, u = std::move(*u), now, t = std::move(t)](RunEngine& e) {
      (void)e.OnUpdate(id, u, now);
    });
  } else if (auto* r = std::get_if<EvaluateResult>(&msg)) {
    OnEngine([id = s.id, r = std::move(*r), now, t = std::move(t)](RunEngine& e) {
      if (Status st = e.OnEvaluateResult(id, r, now); !st.ok()) Log().warn("{}", st.message());
    });
  } else if (std::holds_alternative<SecAggKeysMsg>(msg) ||
             std::holds_alternative<SecAggSharesMsg>(msg) ||
             std::holds_alternative<SecAggMaskedInputMsg>(msg) ||
             std::holds_alternative<SecAggUnmaskResponseMsg>(msg)) {
    OnEngine([id = s.id, m = std::move(msg), now, t = std::move(t)](RunEngine& e) {
      if (Status st = e.OnSecAgg(id, m, now); !st.ok())
        Log().warn("client {}: {}", id, st.message());
    });
  } else if ((std::holds_alternative<SplitActivations>(msg) ||
              std::holds_alternative<SplitGradient>(msg)) &&
             driver_.split_server()) {
    OnSplitBatch(s, std::move(msg));
  } else if (auto* hb = std::get_if<Heartbeat>(&msg)) {
    s.conn->Send(*hb);  // the echo: the client's liveness check and round-trip measurement
  } else if (auto* f = std::get_if<TaskFailed>(&msg)) {
    OnEngine([id = s.id, f = std::move(*f), now, t = std::move(t)](RunEngine& e) {
      // One line per task that failed; one that names no task of the client changes nothing
      // and is not worth a warning (a client could send them by the thousand).
      if (const Status taken = e.OnTaskFailed(id, f, now); taken.ok())
        Log().warn("client {} could not do its {}", id, DescribeTaskFailed(f));
      else
        Log().debug("client {}: TaskFailed ignored ({}): {}", id, taken.message(),
                    DescribeTaskFailed(f));
    });
  } else if (auto* e = std::get_if<Error>(&msg)) {
    Log().warn("client {} reports {}", s.id, DescribeError(e->code, e->message));
  } else if (std::holds_alternative<Goodbye>(msg)) {
    s.conn->Close();
  } else {
    Refuse(s, ErrorCode::kProtocolViolation,
           "unexpected " + MessageTypeName(TypeOf(msg)) + " from a client");
  }
}

void CoordinatorService::OnSplitBatch(Session& s, Message batch) {
  if (s.split_in_flight) {
    Refuse(s, ErrorCode::kProtocolViolation,
           MessageTypeName(TypeOf(batch)) +
               " arrived before the server part answered the one before it");
    return;
  }
  s.split_in_flight = true;
  asio::post(split_executor_, [self = shared_from_this(), conn = s.conn, id = s.id,
                               batch = std::move(batch)]() mutable {
    SplitServer* split = self->driver_.split_server();
    Result<Message> answer = split->OnMessage(id, batch);
    asio::post(self->io_strand_, [self, conn, answer = std::move(answer)]() mutable {
      auto it = self->sessions_.find(conn.get());
      if (it == self->sessions_.end() || it->second.conn != conn || self->closed_) return;
      Session& session = it->second;
      session.split_in_flight = false;
      if (answer.ok()) {
        session.conn->Send(std::move(*answer));
      } else {
        self->Refuse(session, ProtocolErrorCodeOf(answer.status()), answer.status().message());
      }
    });
  });
}

void CoordinatorService::OnClosed(Connection* key, const Status& why) {
  auto it = sessions_.find(key);
  if (it == sessions_.end()) return;
  const std::string id = it->second.id;
  // Bad input or a stalled frame from the peer is a security event, joined client or not.
  if (ClosedForBadInput(why)) {
    const std::string& address = it->second.conn->peer().address;
    security_->Note(
        "connection closed for bad input", SourceAddress(address),
        fmt::format("{} ({}): {}", id.empty() ? it->second.conn->peer().id + " before Hello" : id,
                    address, why.message()));
  }
  if (closed_) {  // the run is over: nobody leaves the engine any more
    sessions_.erase(it);
    NotifyClosedWhenDrained();
    return;
  }
  if (it->second.aggregator) {
    // Its clients leave with it (they reconnect through another aggregator or directly).
    std::vector<std::string> gone;
    for (const std::string& m : it->second.members) {
      auto b = by_id_.find(m);
      if (b != by_id_.end() && b->second == key) {
        by_id_.erase(b);
        gone.push_back(m);
      }
    }
    Log().warn("aggregator {} ({}) left{}; its {} clients leave with it", id,
               it->second.conn->peer().address, why.ok() ? "" : ": " + why.message(), gone.size());
    sessions_.erase(it);
    const TimePoint now = clock_->Now();
    OnEngine([gone = std::move(gone), now](RunEngine& e) {
      for (const std::string& m : gone) e.OnLeft(m, now);
    });
    return;
  }
  sessions_.erase(it);
  if (id.empty()) return;
  auto b = by_id_.find(id);
  if (b == by_id_.end() || b->second != key) return;
  by_id_.erase(b);
  Log().info("client {} left{}", id, why.ok() ? "" : ": " + why.message());
  const TimePoint now = clock_->Now();
  OnEngine([id, now](RunEngine& e) { e.OnLeft(id, now); });
}

void CoordinatorService::Deliver(Outbox outbox) {
  if (closed_) return;
  // The tasks of clients behind an aggregator leave as one GroupTask per aggregator and round.
  std::map<Connection*, GroupTask> groups;
  for (RunEngine::Outgoing& out : outbox) {
    auto it = by_id_.find(out.client_id);
    if (it == by_id_.end()) continue;  // left meanwhile; the engine learns through OnLeft
    Session& session = sessions_.at(it->second);
    if (!session.aggregator) {
      // Pace steering's Goodbye ends the session (the engine has let the client go): the
      // connection closes once it is written, whatever the client does with it.
      const auto* bye = std::get_if<Goodbye>(&out.message);
      const bool close = bye != nullptr && bye->come_back();
      session.conn->Send(std::move(out.message));
      if (close) session.conn->Close();
      continue;
    }
    // Only tasks go to an aggregator's clients, with secure aggregation's start (the same for
    // every client of a round, so the group's one copy): the aggregator answers them itself
    // (refusals, goodbyes, the session's phases), and what the tier does not carry (federated
    // evaluation) is refused at its hello.
    GroupTask& g = groups[it->second];
    if (auto* start = std::get_if<SecAggStartMsg>(&out.message)) {
      if (!g.members.empty() && g.task.round != start->round) {
        session.conn->Send(std::move(g));
        g = GroupTask{};
      }
      g.secagg = *start;
      continue;
    }
    auto* task = std::get_if<TaskAssignment>(&out.message);
    if (task == nullptr) continue;
    if (!g.members.empty() && (g.task.round != task->round || g.task.task_id != task->task_id)) {
      session.conn->Send(std::move(g));
      g = GroupTask{};
    }
    if (g.secagg.round != 0 && g.secagg.round != task->round) g.secagg = SecAggStartMsg{};
    AddToGroupTask(g, out.client_id, *task);
  }
  for (auto& [conn, g] : groups) {
    if (g.members.empty()) continue;
    Log().debug("round {}: {} tasks to aggregator {}", g.task.round, g.members.size(),
                sessions_.at(conn).id);
    sessions_.at(conn).conn->Send(std::move(g));
  }
}

void CoordinatorService::Supersede(const std::string& id, Connection* keep) {
  auto it = by_id_.find(id);
  if (it == by_id_.end() || it->second == keep) return;
  Connection* old = it->second;
  by_id_.erase(it);
  auto os = sessions_.find(old);
  if (os == sessions_.end()) return;
  if (os->second.aggregator) {
    os->second.members.erase(id);  // the engine sees the new session's join as a reconnect
    return;
  }
  // A direct client's new session: either it reconnected before its old link was seen to die, or
  // two processes hold one certificate. The old one is told so (it stops, SUPERSEDED) and the
  // operator hears of it. (A client that now comes through an aggregator is only moving.)
  if (auto ks = sessions_.find(keep); ks != sessions_.end() && !ks->second.aggregator) {
    security_->Note("client id connected twice", SourceAddress(keep->peer().address),
                    fmt::format("client {}: the connection from {} replaces the one from {}", id,
                                keep->peer().address, os->second.conn->peer().address));
  }
  os->second.id.clear();
  os->second.conn->Send(Goodbye{"superseded by a new connection from the same client",
                                static_cast<uint32_t>(ErrorCode::kSuperseded)});
  os->second.conn->Close();
}

void CoordinatorService::OnAggregatorHello(Session& s, const AggregatorHello& hello) {
  const std::string id = s.conn->peer().id;
  if (hello.protocol_version != kProtocolVersion)
    return Refuse(s, ErrorCode::kUnsupportedVersion,
                  "aggregator speaks protocol version " + std::to_string(hello.protocol_version) +
                      ", this coordinator speaks version " + std::to_string(kProtocolVersion));
  if (!tier_refusal_.empty())
    return Refuse(s, ErrorCode::kProtocolViolation,
                  "this run cannot go through an aggregation tier: " + tier_refusal_);
  for (const auto& [key, other] : sessions_) {
    if (other.aggregator && other.id == id) {
      other.conn->Send(Goodbye{"superseded by a new connection from the same aggregator", 0});
      other.conn->Close();
    }
  }
  s.id = id;
  s.aggregator = true;
  s.conn->SetMaxMessageBytes(max_aggregator_bytes_);
  AggregatorWelcome w;
  w.aggregator_id = id;
  w.software_version = options_.software_version;
  w.heartbeat_interval_ms = static_cast<uint32_t>(options_.heartbeat_interval.count());
  w.run_config = tier_config_;
  w.layout_fingerprint = run_fingerprint_;
  w.layout = run_layout_;
  s.conn->Send(std::move(w));
  Log().info("aggregator {} connected from {}", id, s.conn->peer().address);
}

void CoordinatorService::OnAggregatorMessage(Session& s, Message msg, TimePoint now,
                                             ConnectionBacklog::Ticket t) {
  if (auto* m = std::get_if<GroupMembership>(&msg))
    return OnMembership(s, std::move(*m), now, std::move(t));
  if (auto* g = std::get_if<GroupResult>(&msg)) {
    // Every record must name one of this aggregator's clients: an aggregator speaks for its own.
    for (const GroupRecord& rec : g->records) {
      auto b = by_id_.find(rec.client_id);
      if (b == by_id_.end() || b->second != s.conn.get()) {
        security_->Note("aggregator result refused", SourceAddress(s.conn->peer().address),
                        fmt::format("aggregator {} ({}): a result for round {} names client "
                                    "'{}', which is not one of its clients",
                                    s.id, s.conn->peer().address, g->round, rec.client_id));
        return;
      }
    }
    if (g->secagg_bits != 0) {
      OnEngine([id = s.id, g = std::move(*g), now, t = std::move(t)](RunEngine& e) {
        if (Status st = e.OnSecureGroupResult(id, g, now); !st.ok())
          Log().warn("round {}: the secure sum of aggregator {} ({} survivors) is refused: {}",
                     g.round, id, g.records.size(), st.message());
      });
      return;
    }
    const size_t dim = max_update_dim_;
    OnEngine([id = s.id, g = std::move(*g), dim, now, t = std::move(t)](RunEngine& e) {
      Result<PartialSum> partial = DecodePartialSum(g.partial.span(), dim);
      Status st = partial.ok()
                      ? e.OnGroupResult(id, g, *partial, now)
                      : partial.status().WithContext("aggregator '" + id + "': its partial sum");
      if (!st.ok())
        Log().warn("round {}: the result of aggregator {} ({} records) is refused: {}", g.round, id,
                   g.records.size(), st.message());
    });
  } else if (auto* hb = std::get_if<Heartbeat>(&msg)) {
    s.conn->Send(*hb);
  } else if (auto* e = std::get_if<Error>(&msg)) {
    Log().warn("aggregator {} reports {}", s.id, DescribeError(e->code, e->message));
  } else if (std::holds_alternative<Goodbye>(msg)) {
    s.conn->Close();
  } else {
    Refuse(s, ErrorCode::kProtocolViolation,
           "unexpected " + MessageTypeName(TypeOf(msg)) + " from an aggregator");
  }
}

void CoordinatorService::OnMembership(Session& s, GroupMembership m, TimePoint now,
                                      ConnectionBacklog::Ticket ticket) {
  const RoundConfig& run = driver_.config().round;
  std::vector<std::pair<std::string, ClientCapabilities>> joined;
  std::vector<std::string> left;
  for (GroupMember& member : m.joined) {
    // The aggregator checked the client's Hello; what the run's numbers depend on is checked
    // again, so a faulty aggregator cannot register a client this run would refuse.
    std::string why;
    if (Status v = ValidateClientId(member.client_id); !v.ok())
      why = v.message();
    else if (member.capabilities.layout_fingerprint != run_fingerprint_)
      why = "its layout fingerprint is not the run's";
    else if (member.capabilities.num_examples > run.max_num_examples)
      why = "it announces more examples than run.max_num_examples";
    if (!why.empty()) {
      security_->Note("aggregator member refused", SourceAddress(s.conn->peer().address),
                      fmt::format("aggregator {} ({}): client '{}' refused: {}", s.id,
                                  s.conn->peer().address, member.client_id, why));
      continue;
    }
    Supersede(member.client_id, s.conn.get());
    by_id_[member.client_id] = s.conn.get();
    s.members.insert(member.client_id);
    member.capabilities.layout.clear();  // the fingerprint stays; the registry needs no list
    joined.emplace_back(std::move(member.client_id), std::move(member.capabilities));
  }
  for (std::string& id : m.left) {
    auto b = by_id_.find(id);
    if (b == by_id_.end() || b->second != s.conn.get()) continue;  // moved on meanwhile
    by_id_.erase(b);
    s.members.erase(id);
    left.push_back(std::move(id));
  }
  Log().info("aggregator {}: {} clients joined, {} left ({} through it)", s.id, joined.size(),
             left.size(), s.members.size());
  OnEngine([joined = std::move(joined), left = std::move(left), via = s.id, now,
            t = std::move(ticket)](RunEngine& e) {
    for (const auto& [id, caps] : joined) e.OnJoined(id, caps, now, via);
    for (const std::string& id : left) e.OnLeft(id, now);
  });
}

void CoordinatorService::Sweep() {
  if (closed_) return;
  const TimePoint now = clock_->Now();
  // The refusals counted in a window that is over are reported now, not at the next refusal.
  asio::post(engine_strand_, [self = shared_from_this(), now] {
    if (!self->run_over_) self->PublishRefusals(self->refusals_.Flush(now));
  });
  for (auto& [key, s] : sessions_) {
    // Not read while it waits for the transfer budget, or while its messages wait for the engine:
    // its silence is ours, not the client's.
    if (s.conn->waiting_for_budget() || s.backlog->held()) s.last_heard = now;
    if (now - s.last_heard > options_.client_timeout) {
      Log().warn("closing {} ({}): silent for over {} ms",
                 s.id.empty() ? "an unjoined session" : s.id, s.conn->peer().address,
                 options_.client_timeout.count());
      s.last_heard = now;  // Close is asynchronous; do not repeat it
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

void CoordinatorService::CloseAll(Status result, const std::string& reason, uint32_t code) {
  if (closed_) return;
  closed_ = true;
  sweep_timer_->Cancel();
  if (listener_) listener_->Stop();
  for (auto& [key, s] : sessions_) {
    s.conn->Send(Goodbye{reason, code});
    s.conn->Close();
  }
  if (on_finished_) on_finished_(result);
  NotifyClosedWhenDrained();
}

void CoordinatorService::NotifyClosedWhenDrained() {
  if (!closed_ || !sessions_.empty() || !on_closed_) return;
  std::function<void()> cb = std::move(on_closed_);
  on_closed_ = nullptr;
  cb();
}

// ---- engine strand ----

void CoordinatorService::AfterEngine() {
  RunEngine& engine = driver_.engine();
  Outbox outbox = engine.TakeOutbox();
  driver_.NoteTasks(outbox);  // a split run's server part learns whose batches to take
  if (!outbox.empty())
    asio::post(io_strand_, [self = shared_from_this(), outbox = std::move(outbox)]() mutable {
      self->Deliver(std::move(outbox));
    });
  if (engine.finished()) {
    const Status failure = engine.failure();
    FinishRun(failure, !failure.ok()           ? "the run failed: " + failure.message()
                       : engine.budget_spent() ? engine.stop_reason()
                                               : std::string("the run is complete"));
    return;
  }
  if (std::optional<TimePoint> wake = engine.next_wakeup()) {
    deadline_timer_->ExpiresAt(*wake, [weak = weak_from_this()] {
      auto self = weak.lock();
      if (!self || self->run_over_) return;
      self->driver_.engine().OnTick(self->clock_->Now());
      self->AfterEngine();
    });
  }
}

void CoordinatorService::PublishRefusals(const std::vector<ClientRefused>& events) {
  for (const ClientRefused& e : events) driver_.Report(e);
}

void CoordinatorService::FinishRun(Status outcome, const std::string& reason, uint32_t code) {
  if (run_over_) return;
  run_over_ = true;
  deadline_timer_->Cancel();
  PublishRefusals(refusals_.Flush(clock_->Now(), /*force=*/true));  // before RunFinished
  const Status result = driver_.Finish(std::move(outcome));
  if (!result.ok()) code = static_cast<uint32_t>(ErrorCode::kRunFailed);
  asio::post(io_strand_, [self = shared_from_this(), result, reason, code] {
    self->CloseAll(result, reason, code);
  });
}

}  // namespace tributary
