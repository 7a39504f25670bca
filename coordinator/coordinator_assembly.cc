#include "coordinator/coordinator_assembly.h"

#include <fmt/format.h>

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <cstdio>
#include <functional>
#include <optional>
#include <thread>

#include "coordinator/coordinator_service.h"
#include "coordinator/evaluator.h"
#include "coordinator/exit_status.h"
#include "coordinator/run_driver.h"
#include "coordinator/run_observers.h"
#include "coordinator/run_output_lock.h"
#include "core/file_util.h"
#include "core/stderr_log.h"
#include "core/thread_pool.h"
#include "crypto/deny_list.h"
#include "crypto/tls_context.h"
#include "protocol/tls_transport.h"
#include "protocol/transfer_budget.h"
#include "train/model_file.h"
#include "tributary/config.h"

namespace tributary {

namespace asio = boost::asio;

Coordinator::Coordinator() = default;
Coordinator::~Coordinator() = default;

Result<std::unique_ptr<Coordinator>> Coordinator::Assemble(CoordinatorConfig config,
                                                           Options options, int* exit_status) {
  std::unique_ptr<Coordinator> c(new Coordinator());
  c->config_ = std::move(config);
  CoordinatorConfig& cfg = c->config_;
  cfg.ResolveOutputs();
  if (Status s = cfg.Validate(); !s.ok()) return Fail(s, 2, exit_status);
  if (Status s = InitLogging(cfg.log_level); !s.ok())
    return Fail(s.WithContext("log_level"), 2, exit_status);
  // Before anything reads or writes them (a checkpoint to resume, the event log): this run's
  // outputs are its own.
  Result<std::unique_ptr<RunOutputLock>> lock = RunOutputLock::Acquire(cfg.run);
  if (!lock.ok()) return Fail(lock.status(), 1, exit_status);
  c->output_lock_ = std::move(*lock);

  // The run: its model (a built-in or a model file, for the data's shape; or none, when the run
  // knows only run.initial_model's tensors), server-side evaluation on the test set when there is
  // a model to evaluate, and its driver.
  std::optional<ModelSpec> spec;
  if (!cfg.run.model.empty()) {
    Result<DataShape> shape = DataShapeOf(cfg.data);
    if (!shape.ok())
      return Fail(shape.status().WithContext("the data's shape, for run.model"), 2, exit_status);
    Result<ModelSpec> resolved = ResolveModelSpec(
        cfg.run.model, Shape3{shape->height, shape->width, shape->channels}, shape->num_classes);
    if (!resolved.ok())
      return Fail(resolved.status().WithContext("key 'run.model'"), 2, exit_status);
    spec = std::move(*resolved);
  }
  const size_t eval_threads = cfg.eval_threads > 0
                                  ? static_cast<size_t>(cfg.eval_threads)
                                  : std::max<size_t>(1, std::thread::hardware_concurrency());
  c->eval_pool_ = std::make_unique<ThreadPool>(eval_threads);
  RunDriver::Options run_options;
  run_options.model_spec = spec;
  run_options.resume = options.resume || options.resume_or_start;
  run_options.start_if_no_checkpoint = options.resume_or_start;
  run_options.producer = "tributary-coordinator";
  c->evaluation_ = "none (eval.every = 0)";
  if (cfg.run.eval_every > 0 && !spec) {
    c->evaluation_ = "none (run.model is empty: the coordinator cannot run the model)";
  } else if (cfg.run.eval_every > 0) {
    Result<DataSplits> data = LoadDataSplits(cfg.data, false, true);
    if (!data.ok())
      return Fail(data.status().WithContext("server-side evaluation (eval.every)"), 1, exit_status);
    if (!data->test)
      return Fail(Status::InvalidArgument(
                      "server-side evaluation (eval.every) needs a test set: set data.test, or "
                      "eval.every = 0"),
                  2, exit_status);
    Result<std::unique_ptr<ModelEvaluator>> evaluator = ModelEvaluator::Create(
        *spec, data->test, static_cast<int>(cfg.run.eval_batch_size), c->eval_pool_.get());
    if (!evaluator.ok()) return Fail(evaluator.status(), 1, exit_status);
    run_options.evaluator = std::move(*evaluator);
    c->evaluation_ =
        fmt::format("every {} rounds on {} test examples", cfg.run.eval_every, data->test->size());
  }
  Result<std::unique_ptr<RunDriver>> driver = RunDriver::Create(cfg.run, std::move(run_options));
  if (!driver.ok()) return Fail(driver.status(), 2, exit_status);
  c->driver_ = std::move(*driver);

  // The standard observers. The history records the config through the coordinator's own schema,
  // bound to a copy of the values.
  c->security_ = std::make_shared<SecurityLog>();
  CoordinatorConfig recorded = cfg;
  ConfigSchema recorded_keys("tributary-coordinator");
  BindCoordinatorConfig(recorded_keys, &recorded);
  RunObserversOptions observe("tributary-coordinator", cfg.run.event_log, cfg.run.history,
                              &recorded_keys);
  observe.checkpoint_dir = cfg.run.checkpoint_dir;
  observe.keep_checkpoints = cfg.run.keep_checkpoints;
  observe.env = c->driver_->env();
  observe.console = true;
  observe.monitor_listen = cfg.monitor_listen;
  observe.monitor_token = cfg.monitor_token;
  observe.monitor_limits = cfg.monitor_limits;
  observe.security_log = c->security_;
  observe.registry = &c->driver_->engine().registry();
  Result<std::unique_ptr<RunObservers>> observers = RunObservers::Create(observe, exit_status);
  if (!observers.ok()) return observers.status();
  c->observers_ = std::move(*observers);
  for (RunObserver* o : c->observers_->observers()) c->driver_->AddObserver(o);

  // Transport: mutual TLS, with the optional deny list of revoked client ids, and one security log
  // for the listener (handshakes), the service (Hello, bad input) and the monitor.
  // A file that cannot be read is named with its key (the TLS layer names only the path).
  for (const auto& [key, path] : {std::pair<const char*, const std::string&>{"tls.ca", cfg.tls_ca},
                                  {"tls.cert", cfg.tls_cert},
                                  {"tls.key", cfg.tls_key}}) {
    if (Status readable = CheckReadableFile(fmt::format("key '{}'", key), path); !readable.ok())
      return Fail(readable, 1, exit_status);
  }
  Result<SslContextPtr> tls =
      MakeServerTlsContext(TlsConfig{cfg.tls_ca, cfg.tls_cert, cfg.tls_key});
  if (!tls.ok()) return Fail(tls.status(), 1, exit_status);
  TlsTransportOptions topts;
  topts.server_context = *tls;
  topts.transport.security_log = c->security_;
  topts.transport.max_handshakes_per_address = static_cast<size_t>(cfg.max_handshakes_per_address);
  // One budget for every connection's partly received updates: many large uploads at once take
  // turns (backpressure) instead of holding n times the update size.
  topts.transport.transfer_budget =
      std::make_shared<TransferBudget>(static_cast<uint64_t>(cfg.transfer_budget_mb) << 20);
  // An upload holding a share of it must keep a minimum rate (a trickle does not hold it forever),
  // after a grace of the frame timeout.
  topts.transport.min_message_rate = static_cast<uint64_t>(cfg.min_upload_rate_kib_s) << 10;
  topts.transport.frame_read_timeout = cfg.frame_timeout;
  // A client waiting for the budget hears a Heartbeat as often as it would hear its echoes.
  topts.transport.budget_wait_keepalive = cfg.heartbeat_interval;
  if (!cfg.deny_list.empty()) {
    auto deny = std::make_shared<DenyList>();
    if (Status s = deny->LoadFile(cfg.deny_list); !s.ok()) return Fail(s, 1, exit_status);
    topts.transport.deny_list = deny;
  }
  c->engine_thread_ = std::make_unique<asio::thread_pool>(1);
  c->io_ = std::make_unique<asio::io_context>();
  Result<std::unique_ptr<TlsTransport>> transport = TlsTransport::Create(*c->io_, topts);
  if (!transport.ok()) return Fail(transport.status(), 1, exit_status);
  c->transport_ = std::move(*transport);
  return c;
}

Status Coordinator::Serve() {
  asio::io_context& io = *io_;
  driver_->Start();
  // The engine's CPU work runs on its own thread, off the I/O threads.
  CoordinatorServiceOptions sopts;
  sopts.listen_address = config_.listen;
  sopts.heartbeat_interval = config_.heartbeat_interval;
  sopts.client_timeout = config_.client_timeout;
  sopts.software_version = TRIBUTARY_VERSION;
  sopts.engine_executor = engine_thread_->get_executor();
  if (const SplitConfig& split = config_.run.round.split; split.enabled()) {
    const int64_t threads =
        split.pool > 0 ? split.pool : std::max<int64_t>(1, std::thread::hardware_concurrency());
    split_pool_ = std::make_unique<asio::thread_pool>(static_cast<size_t>(threads));
    sopts.split_executor = split_pool_->get_executor();
  }
  sopts.security_log = security_;
  service_ = std::make_shared<CoordinatorService>(io, *transport_, *driver_, sopts);
  Status result = Status::Aborted("not finished");
  bool stopped_by_signal = false;
  service_->set_on_finished([&](Status s) {
    result = s;
    // The io_context stops once every client has its Goodbye (on_closed); this timer only bounds
    // the wait, past the transport's shutdown_timeout, should a close never complete.
    auto timer = std::make_shared<asio::steady_timer>(io, std::chrono::seconds(5));
    timer->async_wait([&io, timer](const boost::system::error_code&) { io.stop(); });
  });
  service_->set_on_closed([&io] { io.stop(); });
  if (Status s = service_->Start(); !s.ok()) {
    // The run started (its run_started is in the event log and the history): it ends failed, with
    // the reason, rather than stay "running" with no process behind it.
    s = s.WithContext("listen on " + config_.listen);
    (void)driver_->Finish(s);
    return s;
  }
  // Between the run's events clients join, leave and are heard from: the monitor samples them
  // again every 2 s, on the engine strand (where the registry may be read).
  asio::steady_timer client_refresh(io);
  std::function<void()> refresh_clients = [&] {
    client_refresh.expires_after(std::chrono::seconds(2));
    client_refresh.async_wait([&](const boost::system::error_code& ec) {
      if (ec) return;
      service_->RunOnEngine([this] { observers_->RefreshClients(); });
      refresh_clients();
    });
  };
  if (observers_->monitored()) refresh_clients();
  PrintStartLine(service_->address());
  if (!config_.ready_file.empty()) {
    // The first line as it always was (scripts read it as the clients' address); the monitor's
    // bound address, when there is one, on a line of its own after it.
    std::string ready = service_->address() + "\n";
    if (const std::string monitor = observers_->monitor_address(); !monitor.empty())
      ready += "monitor=" + monitor + "\n";
    if (Status s = WriteFileAtomic(config_.ready_file, ready); !s.ok()) {
      s = s.WithContext("writing output.ready_file");
      (void)driver_->Finish(s);
      return s;
    }
  }
  asio::signal_set signals(io, SIGINT, SIGTERM);
  signals.async_wait([&](const boost::system::error_code& sec, int sig) {
    if (sec) return;
    stopped_by_signal = true;
    std::printf("signal %d: shutting down (the last checkpoint is complete)\n", sig);
    std::fflush(stdout);
    service_->Stop("the coordinator is shutting down");
  });
  std::thread second([&io] { io.run(); });
  io.run();
  second.join();
  engine_thread_->stop();
  engine_thread_->join();
  if (!stopped_by_signal) LingerForScrapes();
  TRIB_RETURN_IF_ERROR(result);
  if (!stopped_by_signal)
    std::printf("run complete: %llu %s\n",
                static_cast<unsigned long long>(driver_->engine().rounds_done()),
                config_.run.round.asynchronous() ? "steps" : "rounds");
  return Status::Ok();
}

void Coordinator::LingerForScrapes() const {
  const std::chrono::milliseconds linger = config_.monitor_linger;
  if (linger.count() <= 0 || !observers_->monitored()) return;
  std::printf(
      "monitor: serving the run's final state on %s for %.0f s (monitor.linger_s; SIGINT "
      "or SIGTERM ends it)\n",
      observers_->monitor_address().c_str(), static_cast<double>(linger.count()) / 1e3);
  std::fflush(stdout);
  // The monitor answers on its own thread; this one only waits, for the time or a signal.
  asio::io_context wait;
  asio::steady_timer timer(wait, linger);
  asio::signal_set signals(wait, SIGINT, SIGTERM);
  timer.async_wait([&signals](const boost::system::error_code&) { signals.cancel(); });
  signals.async_wait([&timer](const boost::system::error_code& ec, int) {
    if (!ec) timer.cancel();
  });
  wait.run();
}

void Coordinator::PrintStartLine(const std::string& address) const {
  const RunConfig& run = config_.run;
  const ModelWeights model = driver_->client_model();
  const std::string what = run.initial_model.empty() ? run.model
                           : run.model.empty()       ? run.initial_model
                                                     : run.model + " from " + run.initial_model;
  // An asynchronous run counts steps (a buffer of K updates each) of C clients training at once.
  const std::string pace =
      run.round.asynchronous()
          ? fmt::format("{} steps of {} updates, {} clients training at once", run.round.rounds,
                        run.round.BufferSize(), run.round.Concurrency())
          : fmt::format("{} rounds of {} clients", run.round.rounds, run.round.clients_per_round);
  std::printf(
      "tributary-coordinator %s: model %s (%zu tensors, %zu parameters), strategy %s, %s, "
      "server-side evaluation %s; listening on %s (mutual TLS)\n",
      TRIBUTARY_VERSION, what.c_str(), model.num_tensors(), model.size(), run.strategy.c_str(),
      pace.c_str(), evaluation_.c_str(), address.c_str());
  std::fflush(stdout);
}

}  // namespace tributary
