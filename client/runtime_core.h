// RuntimeCore: the shared state behind ClientRuntime (client_runtime.h describes the behaviour).
//
// It lives in a shared_ptr because connection handlers, timers and worker jobs outlive any one
// call: each captures shared_from_this(). Everything that touches the connection, the timers and
// the backoff runs on strand_; Trainer calls and ClientState writes run on the worker (a one-thread
// ThreadPool owned by ClientRuntime, which outlives every job it runs); result_, client_id_ and
// sessions_ are shared with the caller's threads under mu_. The one Trainer call made elsewhere,
// Predict on the caller's thread, takes turns with the worker's through global_model_ (its
// TrainerScope).
//
// Every connection attempt gets a new generation number. Events (messages, close, timer expiries,
// worker results) carry the generation they belong to, and anything from an older generation is
// ignored, so a late result never lands on a newer connection. Each connection also has a
// std::stop_source, stopped when it is lost or the run ends: its tasks carry the token (also as
// FitConfig::stop, for the trainer), so the worker skips the queued ones and a fit in progress can
// stop at its next batch instead of training for a coordinator that will not take the result.
#pragma once

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/strand.hpp>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>

#include "client/backoff.h"
#include "client/client_runtime.h"
#include "client/global_model_holder.h"
#include "client/split_exchange.h"
#include "client/task_executor.h"
#include "core/thread_pool.h"

namespace tributary {

class RuntimeCore : public std::enable_shared_from_this<RuntimeCore> {
 public:
  RuntimeCore(boost::asio::io_context& io, Transport& transport, std::shared_ptr<Trainer> trainer,
              ClientRuntimeOptions options, std::unique_ptr<ClientState> state, ThreadPool* worker,
              ModelWeights layout);

  Status Start();
  void Stop();
  Status Wait();
  std::string client_id() const;
  int64_t sessions() const;
  // Client::predict / global_model (any thread; Predict waits for a Trainer call in progress).
  Result<std::vector<float>> Predict(std::span<const float> inputs, int64_t count) {
    return global_model_.Predict(inputs, count);
  }
  std::optional<GlobalModelInfo> global_model() const { return global_model_.info(); }
  // Closes the state dir (releasing its lock) now rather than when the last handler holding the
  // core lets go. Only after Wait() returned and the worker was joined: the state belongs to it.
  void ReleaseState() {
    executor_.set_state(nullptr);
    state_.reset();
  }

 private:
  using Strand = boost::asio::strand<boost::asio::io_context::executor_type>;

  // On strand_.
  void DoConnect();
  void OnConnected(uint64_t gen, Result<std::shared_ptr<Connection>> connection);
  void OnMessage(uint64_t gen, Message message);
  void OnClosed(uint64_t gen, Status why);
  void OnWelcome(const Welcome& welcome);
  void OnCoordinatorError(const Error& error);
  void RetryLater(const Status& why);
  void ScheduleHeartbeat(uint64_t gen);
  // The current connection is gone (closed by the peer, or silent too long): drop it and retry.
  // Closes the connection and forgets its work (its tasks stop, its results are dropped).
  void DropConnection();
  // Pace steering: the coordinator's Goodbye with a come-back window; reconnects at a time drawn
  // in it (each bound capped at kMaxComeBackMs), to the same endpoint.
  void ComeBackLater(const Goodbye& goodbye);
  static constexpr uint64_t kMaxComeBackMs = uint64_t{7} * 24 * 3600 * 1000;  // a week
  void LoseConnection(Status why);
  void Deliver(uint64_t gen, Message reply);
  // Deliver on the strand (from the worker).
  void PostReply(uint64_t gen, Message reply);
  void DoStop();
  void Finish(Status result);

  void OnSecAgg(uint64_t gen, Message message);
  // Split learning: the coordinator's answer for the batch in flight (a SplitGradient, or in a
  // U-shaped split also the server part's output, a SplitActivations).
  void OnSplitAnswer(Message answer);
  void SendOrReport(const Status& s, Message m);

  // On the worker. RunTask answers a task that throws with an Error (and logs it);
  // RunTaskUnguarded is the task itself.
  void RunTask(uint64_t gen, const std::shared_ptr<Message>& task,
               std::shared_ptr<SecAggTask> secagg, const std::stop_token& stop);
  void RunTaskUnguarded(uint64_t gen, const std::shared_ptr<Message>& task,
                        std::shared_ptr<SecAggTask> secagg, const std::stop_token& stop);
  // Masks the trained update and sends it (the worker, when the inbox and the update are both in).
  void MaskAndSend(uint64_t gen, const std::shared_ptr<SecAggTask>& secagg);
  void SaveState(const std::function<void(ClientStateData&)>& update);
  const std::string& endpoint() const { return endpoints_[endpoint_]; }

  Transport& transport_;
  ClientRuntimeOptions options_;
  ThreadPool* worker_;
  Clock* clock_;
  Strand strand_;

  // strand_ only.
  std::unique_ptr<Timer> reconnect_timer_;
  std::unique_ptr<Timer> heartbeat_timer_;
  TimePoint last_heard_{};  // the last message from the coordinator on the current connection
  Backoff backoff_;
  std::vector<std::string> endpoints_;  // options_.address split (ClientRuntimeOptions::address)
  size_t endpoint_ = 0;                 // the one being tried or connected to
  std::shared_ptr<Connection> conn_;
  std::stop_source connection_stop_;    // of conn_; stopped when it is lost or the run ends
  std::shared_ptr<SecAggTask> secagg_;  // the round with secure aggregation in progress, if any
  uint64_t generation_ = 0;
  bool welcomed_ = false;  // on the current connection
  bool finished_ = false;
  std::chrono::milliseconds heartbeat_interval_{0};
  std::chrono::milliseconds heartbeat_timeout_{0};
  uint64_t heartbeat_sequence_ = 0;
  Status last_error_;
  const ModelLayout layout_;  // the trainer's, declared in Hello
  const uint64_t layout_fingerprint_;

  // Thread-safe (global_model_holder.h); declared before executor_, whose hook feeds it.
  GlobalModelHolder global_model_;
  // Why the model saved in the state dir was not taken (logged by Start); OK when it was, or
  // when there is none.
  Status restore_status_;

  // The split task in progress (options_.split), made by the worker, fed by the strand.
  std::mutex split_mu_;
  std::shared_ptr<NetworkSplitExchange> split_exchange_;  // GUARDED_BY(split_mu_)

  // Worker only.
  TaskExecutor executor_;
  std::unique_ptr<ClientState> state_;

  // Read by the worker to skip queued tasks once the run is over.
  std::atomic<bool> stopping_{false};

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool started_ = false;          // GUARDED_BY(mu_)
  bool stop_requested_ = false;   // GUARDED_BY(mu_)
  std::optional<Status> result_;  // GUARDED_BY(mu_)
  std::string client_id_;         // GUARDED_BY(mu_)
  int64_t sessions_ = 0;          // GUARDED_BY(mu_)
};

}  // namespace tributary
