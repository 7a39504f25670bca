#include "client/runtime_core.h"

#include <fmt/format.h>
#include <boost/asio/post.hpp>

#include "compression/codec.h"
#include "core/log.h"
#include "protocol/transport_util.h"
#include "protocol/wire.h"
#include "tributary/config.h"

namespace tributary {

namespace asio = boost::asio;

namespace {

uint64_t UnixMillis() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count());
}

// The client whose task this thread is running (RunTask), if any.
thread_local const RuntimeCore* t_task_of = nullptr;

Error ErrorFromStatus(const Status& s) {
  return Error{static_cast<uint32_t>(ProtocolErrorCodeOf(s)), s.message()};
}

// A failure that waiting cannot heal: a certificate either side refuses, no TLS or protocol
// version both accept (protocol/tls_failure.h, TlsTransport::Connect, frame versions). Everything
// else (nothing listening, a reset, a timeout, a coordinator going away) may heal.
bool CannotHealByWaiting(const Status& s) {
  return s.code() == StatusCode::kPermissionDenied || s.code() == StatusCode::kFailedPrecondition;
}

const char* KindName(const Message& task) {
  return std::holds_alternative<TaskAssignment>(task) ? "fit" : "evaluate";
}

uint64_t RoundOf(const Message& task) {
  if (const auto* fit = std::get_if<TaskAssignment>(&task)) return fit->round;
  return std::get<EvaluateTask>(task).round;
}

// What the coordinator (or the aggregator) hears when `task` could not be done (protocol version
// 12): the task it answers and why, so that the round stops waiting for this client.
TaskFailed FailureOf(uint64_t round, uint64_t task_id, uint8_t kind, const Status& s) {
  TaskFailed f;
  f.round = round;
  f.task_id = task_id;
  f.kind = kind;
  f.code = static_cast<uint32_t>(ProtocolErrorCodeOf(s));
  f.reason = s.message();
  return f;
}

TaskFailed FailureOf(const Message& task, const Status& s) {
  if (const auto* fit = std::get_if<TaskAssignment>(&task))
    return FailureOf(fit->round, fit->task_id, TaskFailed::kFit, s);
  return FailureOf(RoundOf(task), 0, TaskFailed::kEvaluate, s);
}

void LogReport(const TaskReport& r) {
  if (!r.status.ok()) {
    Log().warn("round {}: {} failed, told the coordinator: {}", r.round,
               r.kind == TaskReport::Kind::kFit ? "fit" : "evaluate", r.status.message());
  } else if (r.kind == TaskReport::Kind::kFit) {
    Log().info("round {}: fit loss {:.4f} on {} examples in {:.2f}s, update {} bytes ({})", r.round,
               r.loss, r.num_examples, r.seconds, r.update_bytes, r.codec);
  } else {
    Log().info("round {}: evaluate loss {:.4f} accuracy {:.2f}% on {} examples in {:.2f}s", r.round,
               r.loss, 100.0 * r.accuracy, r.num_examples, r.seconds);
  }
}

}  // namespace

RuntimeCore::RuntimeCore(asio::io_context& io, Transport& transport,
                         std::shared_ptr<Trainer> trainer, ClientRuntimeOptions options,
                         std::unique_ptr<ClientState> state, ThreadPool* worker,
                         ModelWeights layout)
    : transport_(transport),
      options_(std::move(options)),
      worker_(worker),
      clock_(options_.clock ? options_.clock : Clock::Real()),
      strand_(asio::make_strand(io)),
      reconnect_timer_(clock_->MakeTimer(strand_)),
      heartbeat_timer_(clock_->MakeTimer(strand_)),
      backoff_(options_.backoff),
      layout_(LayoutOf(layout)),
      layout_fingerprint_(layout.fingerprint()),
      global_model_(trainer),
      executor_(std::move(trainer), state.get()),
      state_(std::move(state)) {
  // ClientRuntime::Create checked the list.
  Result<std::vector<std::string>> endpoints = SplitEndpoints(options_.address);
  endpoints_ = endpoints.ok() ? std::move(*endpoints) : std::vector<std::string>{options_.address};
  restore_status_ = global_model_.Restore(state_.get(), layout);
  // On the worker, inside the TrainerScope of the task (RunTask).
  executor_.set_on_global_model(
      [this](const ModelWeights& global, uint64_t round, uint64_t model_version) {
        global_model_.Update(global, round, model_version, state_.get());
      });
  executor_.set_layout(std::move(layout));
  if (options_.software_version.empty())
    options_.software_version = std::string("tributary-client/") + TRIBUTARY_VERSION;
}

Status RuntimeCore::Start() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (started_) return Status::FailedPrecondition("the client runtime was already started");
    // stop() before start(): the run is over before it began, as after a stop() (client.h).
    if (stop_requested_) return Status::Aborted("the client was stopped before it started");
    started_ = true;
  }
  if (!restore_status_.ok())
    Log().warn("not using the global model saved in the state dir: {}", restore_status_.ToString());
  asio::post(strand_, [self = shared_from_this()] { self->DoConnect(); });
  return Status::Ok();
}

void RuntimeCore::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_requested_) return;
    stop_requested_ = true;
    if (!started_) {
      // Nothing runs on the strand yet (and the io_context may not be running): end right here.
      stopping_ = true;
      result_ = Status::Aborted("stopped before it was started");
      cv_.notify_all();
      return;
    }
  }
  asio::post(strand_, [self = shared_from_this()] { self->DoStop(); });
}

Status RuntimeCore::Wait() {
  if (t_task_of == this)
    return Status::FailedPrecondition(
        "wait() was called from inside a Trainer call or the on_task callback (the client's "
        "worker thread): it would wait for the end of a run that is waiting for this call; call "
        "it from another thread");
  std::unique_lock<std::mutex> lock(mu_);
  if (!started_ && !stop_requested_)
    return Status::FailedPrecondition("wait() before start(): the client is not running");
  cv_.wait(lock, [&] { return result_.has_value(); });
  return *result_;
}

std::string RuntimeCore::client_id() const {
  std::lock_guard<std::mutex> lock(mu_);
  return client_id_;
}

int64_t RuntimeCore::sessions() const {
  std::lock_guard<std::mutex> lock(mu_);
  return sessions_;
}

void RuntimeCore::DoConnect() {
  if (finished_) return;
  const uint64_t gen = ++generation_;
  welcomed_ = false;
  Log().debug("connecting to {}", endpoint());
  transport_.Connect(
      endpoint(), [self = shared_from_this(), gen](Result<std::shared_ptr<Connection>> c) mutable {
        asio::post(self->strand_, [self, gen, c = std::move(c)]() mutable {
          self->OnConnected(gen, std::move(c));
        });
      });
}

void RuntimeCore::OnConnected(uint64_t gen, Result<std::shared_ptr<Connection>> connection) {
  if (finished_ || gen != generation_) {
    // The run ended (or moved on) while connecting: close what arrived.
    if (connection.ok()) {
      (*connection)->Start([](Message) {}, [](Status) {});
      (*connection)->Close();
    }
    return;
  }
  if (!connection.ok()) {
    RetryLater(connection.status().WithContext("cannot connect to " + endpoint()));
    return;
  }
  conn_ = std::move(*connection);
  connection_stop_ = std::stop_source();  // the tasks of this connection watch it
  last_heard_ = clock_->Now();
  conn_->Start(
      [self = shared_from_this(), gen](Message m) mutable {
        asio::post(self->strand_,
                   [self, gen, m = std::move(m)]() mutable { self->OnMessage(gen, std::move(m)); });
      },
      [self = shared_from_this(), gen](Status why) {
        asio::post(self->strand_, [self, gen, why] { self->OnClosed(gen, why); });
      });
  Hello hello;
  hello.capabilities.device = options_.device;
  hello.capabilities.codecs = SupportedCodecs();
  hello.capabilities.num_examples = options_.num_examples;
  hello.capabilities.layout_fingerprint = layout_fingerprint_;
  hello.capabilities.layout = layout_;
  hello.software_version = options_.software_version;
  // A Hello that cannot be encoded would never be answered: no retry helps, so the run ends.
  conn_->Send(std::move(hello), [self = shared_from_this(), gen](Status sent) {
    // Aborted: the connection closed first (OnClosed retries); anything else is the encoder's.
    if (sent.ok() || sent.code() == StatusCode::kAborted) return;
    asio::post(self->strand_, [self, gen, sent] {
      if (self->finished_ || gen != self->generation_) return;
      Log().error("cannot send Hello: {}", sent.ToString());
      self->Finish(Status::FailedPrecondition("cannot send Hello: " + sent.ToString()));
    });
  });
  // The Welcome re-arms this timer for the heartbeats; until then it bounds the wait for it.
  heartbeat_timer_->ExpiresAfter(options_.welcome_timeout, [self = shared_from_this(), gen] {
    if (self->finished_ || gen != self->generation_ || !self->conn_ || self->welcomed_) return;
    self->LoseConnection(Status::DeadlineExceeded(
        fmt::format("no Welcome within {} ms of Hello", self->options_.welcome_timeout.count())));
  });
}

void RuntimeCore::OnMessage(uint64_t gen, Message message) {
  if (finished_ || gen != generation_ || !conn_) return;
  last_heard_ = clock_->Now();
  if (auto* welcome = std::get_if<Welcome>(&message)) {
    OnWelcome(*welcome);
  } else if (std::holds_alternative<TaskAssignment>(message) ||
             std::holds_alternative<EvaluateTask>(message)) {
    if (auto* fit = std::get_if<TaskAssignment>(&message);
        fit && options_.split && options_.split_cut != 0 && fit->split_cut != 0) {
      if (fit->split_cut != options_.split_cut || fit->split_head != options_.split_head) {
        // The same layout, another model: retrying cannot help, and training would be wrong.
        const std::string why = fmt::format(
            "the run cuts its model before layer {}{}, this client's model before layer {}{}: "
            "set split.cut{} as the coordinator's",
            fit->split_cut,
            fit->split_head ? fmt::format(" with its head from layer {}", fit->split_head) : "",
            options_.split_cut,
            options_.split_head ? fmt::format(" with its head from layer {}", options_.split_head)
                                : "",
            fit->split_head || options_.split_head ? " and split.head" : "");
        Log().error("{}; stopping", why);
        Deliver(gen, ErrorFromStatus(ProtocolError(ErrorCode::kLayoutMismatch, why)));
        Finish(Status::FailedPrecondition(why));
        return;
      }
    }
    std::shared_ptr<SecAggTask> secagg;
    if (auto* fit = std::get_if<TaskAssignment>(&message);
        fit && secagg_ && secagg_->round() == fit->round)
      secagg = secagg_;
    // The task is dropped, or its fit told to stop, once this connection is gone (RunTask).
    std::stop_token stop = connection_stop_.get_token();
    if (auto* fit = std::get_if<TaskAssignment>(&message)) fit->fit.stop = stop;
    auto task = std::make_shared<Message>(std::move(message));
    worker_->Submit([self = shared_from_this(), gen, task, secagg, stop] {
      self->RunTask(gen, task, secagg, stop);
    });
  } else if (std::holds_alternative<SecAggStartMsg>(message) ||
             std::holds_alternative<SecAggRosterMsg>(message) ||
             std::holds_alternative<SecAggInboxMsg>(message) ||
             std::holds_alternative<SecAggUnmaskRequestMsg>(message)) {
    OnSecAgg(gen, std::move(message));
  } else if (auto* goodbye = std::get_if<Goodbye>(&message)) {
    if (goodbye->come_back() && goodbye->code == 0) {
      ComeBackLater(*goodbye);
    } else if (goodbye->code == static_cast<uint32_t>(ErrorCode::kRunFailed)) {
      Log().error("the coordinator's run failed: {}", goodbye->reason);
      Finish(Status::Aborted("the coordinator's run failed: " + goodbye->reason));
    } else if (goodbye->code == static_cast<uint32_t>(ErrorCode::kShuttingDown)) {
      // Stopped, not over: a restarted coordinator (--resume) takes this client back.
      Log().warn("the coordinator is shutting down ({}); reconnecting", goodbye->reason);
      LoseConnection(Status::Unavailable("the coordinator is shutting down"));
    } else if (goodbye->code == static_cast<uint32_t>(ErrorCode::kSuperseded)) {
      // This process is not the one serving the run: another with this client's certificate is.
      const std::string why = "another connection with this client's id replaced this one at " +
                              endpoint() + " (two processes with one certificate?)";
      Log().error("{}; stopping", why);
      Finish(Status::FailedPrecondition(why));
    } else {
      Log().info("the coordinator ended the run: {}", goodbye->reason);
      Finish(Status::Ok());
    }
  } else if (std::holds_alternative<SplitGradient>(message) ||
             std::holds_alternative<SplitActivations>(message)) {
    OnSplitAnswer(std::move(message));
  } else if (auto* error = std::get_if<Error>(&message)) {
    OnCoordinatorError(*error);
  } else if (std::holds_alternative<Heartbeat>(message)) {
    // The coordinator's echo of ours: liveness, noted above.
  } else {
    Log().warn("ignoring an unexpected {} from the coordinator", MessageTypeName(TypeOf(message)));
  }
}

void RuntimeCore::OnSplitAnswer(Message answer) {
  std::shared_ptr<NetworkSplitExchange> exchange;
  {
    std::lock_guard lock(split_mu_);
    exchange = split_exchange_;
  }
  if (!exchange) {
    Log().warn("ignoring a {}: no split task is in progress", MessageTypeName(TypeOf(answer)));
    return;
  }
  exchange->Deliver(std::move(answer));
}

void RuntimeCore::SendOrReport(const Status& s, Message m) {
  if (!conn_) return;
  if (s.ok()) {
    conn_->Send(std::move(m));
    return;
  }
  Log().error("secure aggregation: {}", s.ToString());
  conn_->Send(Error{static_cast<uint32_t>(ErrorCode::kProtocolViolation), s.message()});
}

void RuntimeCore::OnSecAgg(uint64_t gen, Message message) {
  if (auto* start = std::get_if<SecAggStartMsg>(&message)) {
    std::string id;
    {
      std::lock_guard<std::mutex> lock(mu_);
      id = client_id_;
    }
    Result<std::shared_ptr<SecAggTask>> task =
        SecAggTask::Create(*start, id, options_.secagg_identity);
    if (!task.ok()) {
      secagg_.reset();
      return SendOrReport(task.status(), Message{});
    }
    secagg_ = *task;
    Result<SecAggKeysMsg> keys = secagg_->Advertise();
    return SendOrReport(keys.status(), keys.ok() ? Message(std::move(*keys)) : Message{});
  }
  if (!secagg_) {
    Log().warn("ignoring a {} outside a round with secure aggregation",
               MessageTypeName(TypeOf(message)));
    return;
  }
  if (auto* roster = std::get_if<SecAggRosterMsg>(&message)) {
    Result<SecAggSharesMsg> shares = secagg_->Share(*roster);
    SendOrReport(shares.status(), shares.ok() ? Message(std::move(*shares)) : Message{});
  } else if (auto* inbox = std::get_if<SecAggInboxMsg>(&message)) {
    secagg_->SetInbox(std::move(*inbox));
    if (secagg_->TryClaimMask())
      worker_->Submit([self = shared_from_this(), gen, t = secagg_] { self->MaskAndSend(gen, t); });
  } else if (auto* request = std::get_if<SecAggUnmaskRequestMsg>(&message)) {
    Result<SecAggUnmaskResponseMsg> r = secagg_->Unmask(*request);
    SendOrReport(r.status(), r.ok() ? Message(std::move(*r)) : Message{});
    secagg_.reset();  // one answer per round
  }
}

void RuntimeCore::MaskAndSend(uint64_t gen, const std::shared_ptr<SecAggTask>& secagg) {
  if (stopping_) return;
  Result<SecAggMaskedInputMsg> masked = secagg->Mask();
  if (masked.ok()) {
    // The fit's task completes now, with its answer (RunTaskUnguarded left the count to here).
    SaveState([&](ClientStateData& d) {
      d.last_round = secagg->round();
      d.last_model_version = secagg->model_version();
      ++d.tasks_completed;
    });
    return PostReply(gen, std::move(*masked));
  }
  // The fit's answer, which waited for the inbox: the task failed, as when masking fails on the
  // worker right after the fit, so that the round counts this client as a dropout now (not at the
  // masked-input phase's deadline, as a silent client).
  Log().warn("round {}: fit failed, told the coordinator: {}", secagg->round(),
             masked.status().message());
  PostReply(gen, FailureOf(secagg->round(), secagg->task_id(), TaskFailed::kFit, masked.status()));
}

void RuntimeCore::OnWelcome(const Welcome& welcome) {
  welcomed_ = true;
  backoff_.Reset();
  last_error_ = Status::Ok();
  {
    std::lock_guard<std::mutex> lock(mu_);
    client_id_ = welcome.client_id;
    ++sessions_;
  }
  heartbeat_interval_ = options_.heartbeat_interval.count() > 0
                            ? options_.heartbeat_interval
                            : std::chrono::milliseconds(welcome.heartbeat_interval_ms);
  heartbeat_timeout_ =
      options_.heartbeat_timeout.count() > 0 ? options_.heartbeat_timeout : 3 * heartbeat_interval_;
  Log().info("joined {} as '{}' (coordinator {}, heartbeat every {} ms)", endpoint(),
             welcome.client_id, welcome.software_version, heartbeat_interval_.count());
  if (heartbeat_interval_.count() > 0) ScheduleHeartbeat(generation_);
  if (state_) {
    worker_->Submit([self = shared_from_this(), id = welcome.client_id] {
      self->SaveState([&](ClientStateData& d) { d.client_id = id; });
    });
  }
}

void RuntimeCore::OnCoordinatorError(const Error& error) {
  const std::string text = DescribeError(error.code, error.message);
  switch (static_cast<ErrorCode>(error.code)) {
    case ErrorCode::kRevoked:
    case ErrorCode::kUnauthenticated:
      Log().error("the coordinator refused this client: {}", text);
      Finish(Status::PermissionDenied("the coordinator refused this client: " + text));
      return;
    case ErrorCode::kLayoutMismatch:
      Log().error("the coordinator refused this client's model: {}", text);
      Finish(Status::FailedPrecondition("the coordinator refused this client's model: " + text));
      return;
    case ErrorCode::kUnsupportedVersion:
      Log().error("the coordinator speaks another protocol version: {}", text);
      Finish(
          Status::FailedPrecondition("the coordinator speaks another protocol version: " + text));
      return;
    case ErrorCode::kProtocolViolation:
      // Before Welcome it is the coordinator refusing this Hello (a codec this client lacks, a
      // message out of order): the next Hello would be refused the same way.
      if (!welcomed_) {
        Log().error("the coordinator refused this client at Hello: {}", text);
        Finish(Status::FailedPrecondition("the coordinator refused this client at Hello: " + text));
        return;
      }
      [[fallthrough]];
    default:
      // Most often an update the coordinator rejected (late, duplicate, ...): not fatal.
      Log().warn("the coordinator reported: {}", text);
      last_error_ = Status::Unavailable("the coordinator reported " + text);
  }
}

void RuntimeCore::OnClosed(uint64_t gen, Status why) {
  if (finished_ || gen != generation_) return;
  if (why.ok()) why = Status::Unavailable("the coordinator closed the connection");
  LoseConnection(std::move(why));
}

void RuntimeCore::DropConnection() {
  if (conn_) {
    conn_->Close();  // a no-op when the peer closed it; its close callback is now stale
    conn_.reset();
  }
  heartbeat_timer_->Cancel();
  ++generation_;                    // results still being computed for this connection are dropped
  connection_stop_.request_stop();  // and its queued tasks are not started, its fit stops
}

void RuntimeCore::LoseConnection(Status why) {
  DropConnection();
  RetryLater(why.WithContext("connection to " + endpoint() + " lost"));
}

void RuntimeCore::ComeBackLater(const Goodbye& goodbye) {
  DropConnection();
  welcomed_ = false;
  backoff_.Reset();  // sent away, not failed
  // Uniform in [after, after + window]: a fleet sent away together comes back spread out.
  const uint64_t window = std::min<uint64_t>(goodbye.come_back_window_ms, kMaxComeBackMs);
  const uint64_t after = std::min<uint64_t>(goodbye.come_back_after_ms, kMaxComeBackMs);
  const std::chrono::milliseconds delay(after + backoff_.Pick(static_cast<size_t>(window) + 1));
  Log().info(
      "the coordinator asks this client to come back later ({}); reconnecting to {} in {} ms",
      goodbye.reason, endpoint(), delay.count());
  reconnect_timer_->ExpiresAfter(delay, [self = shared_from_this()] { self->DoConnect(); });
}

void RuntimeCore::RetryLater(const Status& why) {
  const bool was_welcomed = welcomed_;
  welcomed_ = false;
  last_error_ = why;
  if (CannotHealByWaiting(why)) {
    Log().error("{}; not retrying: waiting cannot fix this", why.ToString());
    Finish(why.WithContext("not retrying (waiting cannot fix this)"));
    return;
  }
  const std::chrono::milliseconds delay = backoff_.NextDelay();
  if (was_welcomed) {
    backoff_.Reset();  // a session that got as far as Welcome is not a failed attempt
  } else if (backoff_.exhausted()) {
    Log().error("giving up after {} failed attempts: {}", backoff_.failures(), why.ToString());
    Finish(Status::Unavailable(fmt::format("gave up after {} consecutive failed attempts; last: {}",
                                           backoff_.failures(), why.ToString())));
    return;
  }
  if (endpoints_.size() > 1) {
    // Another endpoint, drawn uniformly among the others: the clients of a dead aggregator spread
    // over all the rest instead of doubling the load of its neighbour in their lists.
    endpoint_ = (endpoint_ + 1 + backoff_.Pick(endpoints_.size() - 1)) % endpoints_.size();
    Log().warn("{}; trying {} in {} ms", why.ToString(), endpoint(), delay.count());
  } else {
    Log().warn("{}; reconnecting in {} ms", why.ToString(), delay.count());
  }
  reconnect_timer_->ExpiresAfter(delay, [self = shared_from_this()] { self->DoConnect(); });
}

void RuntimeCore::ScheduleHeartbeat(uint64_t gen) {
  heartbeat_timer_->ExpiresAfter(heartbeat_interval_, [self = shared_from_this(), gen] {
    if (self->finished_ || gen != self->generation_ || !self->conn_) return;
    const Duration silent = self->clock_->Now() - self->last_heard_;
    if (silent > self->heartbeat_timeout_) {
      self->LoseConnection(Status::DeadlineExceeded(
          fmt::format("nothing from the coordinator for {} ms (the limit is {} ms)",
                      std::chrono::duration_cast<std::chrono::milliseconds>(silent).count(),
                      self->heartbeat_timeout_.count())));
      return;
    }
    self->conn_->Send(Heartbeat{++self->heartbeat_sequence_, UnixMillis()});
    self->ScheduleHeartbeat(gen);
  });
}

void RuntimeCore::PostReply(uint64_t gen, Message reply) {
  asio::post(strand_, [self = shared_from_this(), gen, reply = std::move(reply)]() mutable {
    self->Deliver(gen, std::move(reply));
  });
}

void RuntimeCore::Deliver(uint64_t gen, Message reply) {
  if (finished_ || gen != generation_ || !conn_) {
    Log().info("dropping a {} computed for a connection that has since closed",
               MessageTypeName(TypeOf(reply)));
    return;
  }
  conn_->Send(std::move(reply));
}

void RuntimeCore::DoStop() {
  if (finished_) return;
  if (conn_ && welcomed_) conn_->Send(Goodbye{"client stopping"});
  Log().info("stopping");
  Finish(Status::Aborted("stopped by the application"));
}

void RuntimeCore::Finish(Status result) {
  if (finished_) return;
  finished_ = true;
  stopping_ = true;
  ++generation_;
  connection_stop_.request_stop();
  reconnect_timer_->Cancel();
  heartbeat_timer_->Cancel();
  if (conn_) {
    conn_->Close();  // sends what is queued (a Goodbye, a last result) first
    conn_.reset();
  }
  std::lock_guard<std::mutex> lock(mu_);
  result_ = std::move(result);
  cv_.notify_all();
}

void RuntimeCore::RunTask(uint64_t gen, const std::shared_ptr<Message>& task,
                          std::shared_ptr<SecAggTask> secagg, const std::stop_token& stop) {
  // The task's Trainer calls and on_task run here: Wait() from inside them is refused.
  struct InTask {
    explicit InTask(const RuntimeCore* core) { t_task_of = core; }
    ~InTask() { t_task_of = nullptr; }
  } in_task(this);
  // The worker's packaged_task would keep an exception where nobody reads it, and the coordinator
  // would hear nothing: whatever a task throws (a trainer's exceptions are already its error,
  // TaskExecutor) is logged and answered with an Error, and the client carries on.
  std::string thrown;
  try {
    RunTaskUnguarded(gen, task, secagg, stop);
    return;
  } catch (const std::exception& e) {
    thrown = e.what();
  } catch (...) {
    thrown = "an exception that is not a std::exception";
  }
  {
    std::lock_guard lock(split_mu_);
    split_exchange_.reset();
  }
  const Status why = Status::Internal(
      fmt::format("round {}: the {} task threw: {}", RoundOf(*task), KindName(*task), thrown));
  Log().error("{}", why.message());
  if (stop.stop_requested()) return;
  PostReply(gen, FailureOf(*task, why));
}

void RuntimeCore::RunTaskUnguarded(uint64_t gen, const std::shared_ptr<Message>& task,
                                   std::shared_ptr<SecAggTask> secagg,
                                   const std::stop_token& stop) {
  if (stopping_) return;
  if (stop.stop_requested()) {
    // Its connection closed while it waited: nobody would accept the answer.
    Log().info("round {}: dropping a {} task of a lost connection without running it",
               RoundOf(*task), KindName(*task));
    return;
  }
  TaskReport report;
  Message reply;
  bool masked_later = false;
  if (const auto* fit = std::get_if<TaskAssignment>(task.get())) {
    Result<UpdateSubmission> r = [&]() -> Result<UpdateSubmission> {
      GlobalModelHolder::TrainerScope trainer_turn(global_model_);
      if (!options_.split) return executor_.Fit(*fit, &report);
      // Split learning: every batch's activations go out on this connection and the fit waits
      // for their gradient (until the task's deadline, or until the connection is lost).
      Result<SplitTaskChannel> channel = SplitTaskChannel::Create(*fit, layout_fingerprint_);
      if (!channel.ok()) return executor_.Fit(*fit, &report);  // refuses it, naming why
      auto send = [self = shared_from_this(), gen](Message m) {
        asio::post(self->strand_,
                   [self, gen, m = std::move(m)]() mutable { self->Deliver(gen, std::move(m)); });
      };
      auto exchange = std::make_shared<NetworkSplitExchange>(
          std::move(*channel), std::move(send), stop,
          std::chrono::steady_clock::now() + std::chrono::milliseconds(fit->deadline_ms));
      {
        std::lock_guard lock(split_mu_);
        split_exchange_ = exchange;
      }
      Result<UpdateSubmission> u = executor_.Fit(*fit, &report, exchange.get());
      std::lock_guard lock(split_mu_);
      split_exchange_.reset();
      return u;
    }();
    if (r.ok() && secagg) {
      // Secure aggregation: the delta goes into the integer domain and is masked once the inbox
      // of shares is here too (now, or when it arrives on the strand).
      const Status in = secagg->SetUpdate(*r, fit->fit.seed);
      if (!in.ok()) {
        report.status = in;
      } else if (secagg->TryClaimMask()) {
        Result<SecAggMaskedInputMsg> m = secagg->Mask();
        if (m.ok())
          reply = std::move(*m);
        else
          report.status = m.status();
      } else {
        masked_later = true;
      }
    } else if (r.ok()) {
      reply = std::move(*r);
    } else {
      report.status = r.status();
    }
  } else {
    Result<EvaluateResult> r = [&] {
      GlobalModelHolder::TrainerScope trainer_turn(global_model_);
      return executor_.Evaluate(std::get<EvaluateTask>(*task), &report);
    }();
    if (r.ok())
      reply = std::move(*r);
    else
      report.status = r.status();
  }
  if (stop.stop_requested()) {
    // The connection closed during the task (the fit may have stopped early): drop the result
    // rather than report a task nobody will accept.
    Log().info("round {}: dropping the {} result of a lost connection", report.round,
               KindName(*task));
    return;
  }
  if (!report.status.ok()) reply = FailureOf(*task, report.status);
  LogReport(report);
  // A fit whose masking waits for the inbox is counted when its masked input goes (MaskAndSend):
  // a masking that fails then fails the task.
  if (report.status.ok() && report.kind == TaskReport::Kind::kFit && !masked_later) {
    SaveState([&](ClientStateData& d) {
      d.last_round = report.round;
      d.last_model_version = report.model_version;
      ++d.tasks_completed;
    });
  }
  if (!masked_later) PostReply(gen, std::move(reply));
  // The app's callback, after the answer is on its way: what it throws costs nothing else.
  if (options_.on_task) {
    try {
      options_.on_task(report);
    } catch (const std::exception& e) {
      Log().warn("round {}: the on_task callback threw: {}", report.round, e.what());
    } catch (...) {
      Log().warn("round {}: the on_task callback threw", report.round);
    }
  }
}

void RuntimeCore::SaveState(const std::function<void(ClientStateData&)>& update) {
  if (!state_) return;
  ClientStateData d = state_->data();
  update(d);
  if (d == state_->data()) return;
  if (Status s = state_->Save(d); !s.ok())
    Log().warn("cannot save the client state: {}", s.ToString());
}

}  // namespace tributary
