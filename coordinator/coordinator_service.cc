#include "coordinator/coordinator_service.h"

#include <boost/asio/post.hpp>

#include "compression/codec_spec.h"
#include "core/log.h"

namespace tributary {

namespace asio = boost::asio;

CoordinatorService::CoordinatorService(asio::io_context& io, Transport& transport,
                                       RoundEngine& engine, CoordinatorServiceOptions options)
    : io_(io),
      strand_(asio::make_strand(io)),
      transport_(transport),
      engine_(engine),
      options_(std::move(options)),
      clock_(options_.clock ? options_.clock : Clock::Real()),
      deadline_timer_(clock_->MakeTimer(strand_)),
      sweep_timer_(clock_->MakeTimer(strand_)) {}

Status CoordinatorService::Start() {
  std::weak_ptr<CoordinatorService> weak = weak_from_this();
  TRIB_ASSIGN_OR_RETURN(
      listener_, transport_.Listen(options_.listen_address, [weak](std::shared_ptr<Connection> c) {
        if (auto self = weak.lock()) asio::post(self->strand_, [self, c] { self->OnAccept(c); });
      }));
  address_ = listener_->address();
  asio::post(strand_, [self = shared_from_this()] {
    self->engine_.OnTick(self->clock_->Now());
    self->Flush();
    self->Sweep();
  });
  return Status::Ok();
}

void CoordinatorService::Stop(const std::string& reason) {
  asio::post(strand_, [self = shared_from_this(), reason] { self->Finish(Status::Ok(), reason); });
}

void CoordinatorService::OnAccept(std::shared_ptr<Connection> conn) {
  if (finished_) {
    conn->Start([](Message) {}, [](Status) {});
    conn->Send(Goodbye{"the run is over"});
    conn->Close();
    return;
  }
  Connection* key = conn.get();
  sessions_[key] = Session{conn, "", clock_->Now()};
  std::weak_ptr<CoordinatorService> weak = weak_from_this();
  conn->Start(
      [weak, key](Message m) {
        if (auto self = weak.lock())
          asio::post(self->strand_, [self, key, m = std::move(m)]() mutable {
            self->OnMessage(key, std::move(m));
          });
      },
      [weak, key](Status why) {
        if (auto self = weak.lock())
          asio::post(self->strand_, [self, key, why] { self->OnClosed(key, why); });
      });
}

void CoordinatorService::Refuse(Session& s, ErrorCode code, const std::string& why) {
  spdlog::warn("refusing {} ({}): {}", s.id.empty() ? s.conn->peer().id : s.id,
               s.conn->peer().address, why);
  s.conn->Send(Error{static_cast<uint32_t>(code), why});
  s.conn->Close();
}

void CoordinatorService::OnHello(Session& s, const Hello& hello) {
  if (hello.protocol_version != kProtocolVersion)
    return Refuse(s, ErrorCode::kUnsupportedVersion,
                  "client speaks protocol version " + std::to_string(hello.protocol_version) +
                      ", this coordinator speaks version " + std::to_string(kProtocolVersion));
  const std::string& codec = engine_.config().codec;
  // Clients advertise stage names ("topk", "q8", "zstd", ...; SupportedCodecs()), so a client
  // speaks the run's pipeline when it has every one of its stages.
  std::string offered;
  for (const auto& c : hello.capabilities.codecs) offered += (offered.empty() ? "" : ", ") + c;
  if (!CanEncodeCodec(hello.capabilities.codecs, codec))
    return Refuse(s, ErrorCode::kProtocolViolation,
                  "this run uses codec '" + codec +
                      "', which the client does not support (it offers: " +
                      (offered.empty() ? "none" : offered) + ")");
  // The download codec too: the client must decode the model it is sent.
  const std::string& download = engine_.config().download_codec;
  if (!CanEncodeCodec(hello.capabilities.codecs, download))
    return Refuse(s, ErrorCode::kProtocolViolation,
                  "this run sends the model with download codec '" + download +
                      "', which the client does not support (it offers: " +
                      (offered.empty() ? "none" : offered) + ")");
  const std::string id = s.conn->peer().id;
  if (id.empty()) return Refuse(s, ErrorCode::kUnauthenticated, "no authenticated client id");
  if (auto it = by_id_.find(id); it != by_id_.end() && it->second != s.conn.get()) {
    // A reconnect: the old session is superseded.
    Connection* old = it->second;
    by_id_.erase(it);
    if (auto os = sessions_.find(old); os != sessions_.end()) {
      os->second.id.clear();
      os->second.conn->Send(Goodbye{"superseded by a new connection from the same client"});
      os->second.conn->Close();
    }
  }
  s.id = id;
  by_id_[id] = s.conn.get();
  s.conn->Send(Welcome{kProtocolVersion, id, options_.software_version,
                       static_cast<uint32_t>(options_.heartbeat_interval.count())});
  spdlog::info("client {} joined from {} ({}, {} examples)", id, s.conn->peer().address,
               hello.capabilities.device, hello.capabilities.num_examples);
  engine_.OnJoined(id, hello.capabilities, clock_->Now());
}

void CoordinatorService::OnMessage(Connection* key, Message msg) {
  auto it = sessions_.find(key);
  if (it == sessions_.end() || finished_) return;
  Session& s = it->second;
  const TimePoint now = clock_->Now();
  s.last_heard = now;
  if (s.id.empty()) {
    if (const Hello* hello = std::get_if<Hello>(&msg)) {
      OnHello(s, *hello);
    } else {
      Refuse(s, ErrorCode::kProtocolViolation,
             "expected Hello, got " + MessageTypeName(TypeOf(msg)));
    }
    Flush();
    return;
  }
  if (auto* u = std::get_if<UpdateSubmission>(&msg)) {
    Status st = engine_.OnUpdate(s.id, *u, now);
    if (!st.ok())
      spdlog::warn("update from {} for round {} rejected: {}", s.id, u->round, st.message());
  } else if (auto* r = std::get_if<EvaluateResult>(&msg)) {
    Status st = engine_.OnEvaluateResult(s.id, *r, now);
    if (!st.ok()) spdlog::warn("{}", st.message());
  } else if (auto* hb = std::get_if<Heartbeat>(&msg)) {
    s.conn->Send(*hb);  // the echo: the client's liveness check and round-trip measurement
  } else if (auto* e = std::get_if<Error>(&msg)) {
    spdlog::warn("client {} reports {}: {}", s.id, ErrorCodeName(e->code), e->message);
  } else if (std::holds_alternative<Goodbye>(msg)) {
    s.conn->Close();
  } else {
    Refuse(s, ErrorCode::kProtocolViolation,
           "unexpected " + MessageTypeName(TypeOf(msg)) + " from a client");
  }
  Flush();
}

void CoordinatorService::OnClosed(Connection* key, const Status& why) {
  auto it = sessions_.find(key);
  if (it == sessions_.end()) return;
  const std::string id = it->second.id;
  sessions_.erase(it);
  if (!id.empty()) {
    auto b = by_id_.find(id);
    if (b != by_id_.end() && b->second == key) {
      by_id_.erase(b);
      if (!finished_) {
        spdlog::info("client {} left{}", id, why.ok() ? "" : ": " + why.message());
        engine_.OnLeft(id, clock_->Now());
      }
    }
  }
  Flush();
}

void CoordinatorService::Flush() {
  if (finished_) return;
  for (RoundEngine::Outgoing& out : engine_.TakeOutbox()) {
    auto it = by_id_.find(out.client_id);
    if (it == by_id_.end()) continue;  // left meanwhile; the engine learns through OnLeft
    sessions_.at(it->second).conn->Send(std::move(out.message));
  }
  if (engine_.finished()) {
    Status result = engine_.failure();
    Finish(result, result.ok() ? "the run is complete" : "the run failed: " + result.message());
    return;
  }
  ArmTimer();
}

void CoordinatorService::ArmTimer() {
  std::optional<TimePoint> wake = engine_.next_wakeup();
  if (!wake) return;
  deadline_timer_->ExpiresAt(*wake, [self = shared_from_this()] {
    if (self->finished_) return;
    self->engine_.OnTick(self->clock_->Now());
    self->Flush();
  });
}

void CoordinatorService::Sweep() {
  if (finished_) return;
  const TimePoint now = clock_->Now();
  for (auto& [key, s] : sessions_) {
    if (now - s.last_heard > options_.client_timeout) {
      spdlog::warn("closing {} ({}): silent for over {} ms",
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
      [self = shared_from_this()] { self->Sweep(); });
}

void CoordinatorService::Finish(Status result, const std::string& reason) {
  if (finished_) return;
  finished_ = true;
  deadline_timer_->Cancel();
  sweep_timer_->Cancel();
  if (listener_) listener_->Stop();
  for (auto& [key, s] : sessions_) {
    s.conn->Send(Goodbye{reason});
    s.conn->Close();
  }
  if (on_finished_) on_finished_(result);
}

}  // namespace tributary
