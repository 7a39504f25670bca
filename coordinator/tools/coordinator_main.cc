// tributary-coordinator: runs federated training rounds for clients that connect over mutual TLS.
//
//   tributary-coordinator --config coordinator.toml [--rounds 20] [--set key=value] [--resume]
//   tributary-coordinator ... --resume-or-start  resume if there is a checkpoint, else start
//   tributary-coordinator --print-config        every key with its default
//
// Prints one line per round; writes a checkpoint after every round, a JSON-lines event log and the
// final model (safetensors). SIGINT/SIGTERM end the run cleanly: the last checkpoint is complete
// (it is written atomically after each round) and clients are told Goodbye. See docs/operations.md.
// main() only parses, builds the run's driver and serves it; the run itself is RunDriver's.
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <cstdio>
#include <functional>
#include <thread>

#include "coordinator/console_observer.h"
#include "coordinator/coordinator_config.h"
#include "coordinator/coordinator_service.h"
#include "coordinator/event_log.h"
#include "core/config_cli.h"
#include "core/file_util.h"
#include "core/log.h"
#include "core/stderr_log.h"
#include "core/wall_clock.h"
#include "crypto/deny_list.h"
#include "crypto/tls_context.h"
#include "protocol/tls_transport.h"
#include "protocol/transfer_budget.h"
#include "train/model_file.h"
#include "tributary/config.h"
#if TRIBUTARY_HAVE_MONITOR
#include "monitor/dashboard_state.h"
#include "monitor/monitor_server.h"
#include "monitor/run_metrics.h"
#include "web/web_assets.h"
#endif
#if TRIBUTARY_HAVE_HISTORY
#include "history/config_json.h"
#include "history/run_history.h"
#endif

namespace tributary {
namespace {

namespace asio = boost::asio;

int Fail(const Status& s, int code = 1) {
  std::fprintf(stderr, "tributary-coordinator: %s\n", s.ToString().c_str());
  return code;
}

int Run(CoordinatorConfig& cfg, bool resume, bool resume_or_start) {
  cfg.ResolveOutputs();
  if (Status s = cfg.Validate(); !s.ok()) return Fail(s, 2);
  if (Status s = InitLogging(cfg.log_level); !s.ok()) return Fail(s.WithContext("log_level"), 2);
  const size_t eval_threads = cfg.eval_threads > 0
                                  ? static_cast<size_t>(cfg.eval_threads)
                                  : std::max<size_t>(1, std::thread::hardware_concurrency());

  // The run: its model (a built-in or a model file, for the data's shape; or none, when the run
  // knows only run.initial_model's tensors), server-side evaluation on the test set when there is
  // a model to evaluate, and its driver.
  std::optional<ModelSpec> spec;
  if (!cfg.run.model.empty()) {
    Result<DataShape> shape = DataShapeOf(cfg.data);
    if (!shape.ok()) return Fail(shape.status().WithContext("the data's shape, for run.model"), 2);
    Result<ModelSpec> resolved = ResolveModelSpec(
        cfg.run.model, Shape3{shape->height, shape->width, shape->channels}, shape->num_classes);
    if (!resolved.ok()) return Fail(resolved.status().WithContext("key 'run.model'"), 2);
    spec = std::move(*resolved);
  }
  ThreadPool eval_pool(eval_threads);
  RunDriver::Options options;
  options.model_spec = spec;
  options.resume = resume || resume_or_start;
  options.start_if_no_checkpoint = resume_or_start;
  options.producer = "tributary-coordinator";
  std::string evaluation = "none (eval.every = 0)";
  if (cfg.run.eval_every > 0 && !spec) {
    evaluation = "none (run.model is empty: the coordinator cannot run the model)";
  } else if (cfg.run.eval_every > 0) {
    Result<DataSplits> data = LoadDataSplits(cfg.data, false, true);
    if (!data.ok()) return Fail(data.status().WithContext("server-side evaluation (eval.every)"));
    if (!data->test)
      return Fail(Status::InvalidArgument(
                      "server-side evaluation (eval.every) needs a test set: set data.test, or "
                      "eval.every = 0"),
                  2);
    Result<std::unique_ptr<ModelEvaluator>> evaluator = ModelEvaluator::Create(
        *spec, data->test, static_cast<int>(cfg.run.eval_batch_size), &eval_pool);
    if (!evaluator.ok()) return Fail(evaluator.status());
    options.evaluator = std::move(*evaluator);
    evaluation =
        fmt::format("every {} rounds on {} test examples", cfg.run.eval_every, data->test->size());
  }
  Result<std::unique_ptr<RunDriver>> driver = RunDriver::Create(cfg.run, std::move(options));
  if (!driver.ok()) return Fail(driver.status(), 2);
  Result<std::unique_ptr<EventLog>> events = EventLog::Open((*driver)->env(), cfg.run.event_log);
  if (!events.ok()) return Fail(events.status());
  ConsoleObserver console;
  (*driver)->AddObserver(events->get());
  (*driver)->AddObserver(&console);
#if TRIBUTARY_HAVE_HISTORY
  // The run's record in the run history (output.history), which `tributary runs` reads; its
  // config through the coordinator's own schema, bound to a copy of the values.
  CoordinatorConfig recorded = cfg;
  ConfigSchema recorded_keys("tributary-coordinator");
  BindCoordinatorConfig(recorded_keys, &recorded);
  Result<std::unique_ptr<RunHistory>> history = RunHistory::OpenForRun(
      cfg.run.history, {"tributary-coordinator", ConfigJson(recorded_keys), cfg.run.checkpoint_dir,
                        cfg.run.event_log, cfg.run.keep_checkpoints});
  if (!history.ok()) return Fail(history.status(), 2);
  if (*history) (*driver)->AddObserver(history->get());
#else
  if (!cfg.run.history.empty() && cfg.run.history != "none")
    return Fail(Status::Unimplemented("key 'output.history': this build has no run history "
                                      "(SQLite was not found)"),
                2);
#endif
#if TRIBUTARY_HAVE_MONITOR
  RunMetrics metrics;
  RunDriver* run = driver->get();
  metrics.set_client_sampler([run] {
    const ClientRegistry& clients = run->engine().registry();
    return std::pair<int64_t, int64_t>(static_cast<int64_t>(clients.size()),
                                       static_cast<int64_t>(clients.num_idle()));
  });
  (*driver)->AddObserver(&metrics);
  // The dashboard's state; its clients table comes from the registry, read on the run's thread.
  DashboardState dashboard;
  dashboard.set_client_sampler([run] {
    std::vector<DashboardState::ClientSample> out;
    const auto now = std::chrono::steady_clock::now();
    const double wall = UnixSeconds();
    for (const auto& [id, record] : run->engine().registry().records())
      out.push_back(
          {id, record.busy, wall - std::chrono::duration<double>(now - record.last_seen).count()});
    return out;
  });
  (*driver)->AddObserver(&dashboard);
  // Declared before the engine's pool, which may still publish to it until the pool is joined.
  std::unique_ptr<MonitorServer> monitor;
#endif

  // Transport: mutual TLS, with the optional deny list of revoked client ids.
  Result<SslContextPtr> tls =
      MakeServerTlsContext(TlsConfig{cfg.tls_ca, cfg.tls_cert, cfg.tls_key});
  if (!tls.ok()) return Fail(tls.status());
  TlsTransportOptions topts;
  topts.server_context = *tls;
  // One security log for the listener (handshakes) and the service (Hello, bad input).
  auto security = std::make_shared<SecurityLog>();
  topts.transport.security_log = security;
  topts.transport.max_handshakes_per_address = static_cast<size_t>(cfg.max_handshakes_per_address);
  // One budget for every connection's partly received updates: many large uploads at once take
  // turns (backpressure) instead of holding n times the update size.
  topts.transport.transfer_budget =
      std::make_shared<TransferBudget>(static_cast<uint64_t>(cfg.transfer_budget_mb) << 20);
  if (!cfg.deny_list.empty()) {
    auto deny = std::make_shared<DenyList>();
    if (Status s = deny->LoadFile(cfg.deny_list); !s.ok()) return Fail(s);
    topts.transport.deny_list = deny;
  }
  // The engine's pool is declared before the io_context so that it outlives it: handlers still
  // queued when the io_context is destroyed may hold the service, whose engine strand belongs to
  // the pool.
  asio::thread_pool engine_thread(1);
  asio::io_context io;
  Result<std::unique_ptr<TlsTransport>> transport = TlsTransport::Create(io, topts);
  if (!transport.ok()) return Fail(transport.status());

  // The engine's CPU work runs on its own thread (engine_thread, above), off the I/O threads.
  CoordinatorServiceOptions sopts;
  sopts.listen_address = cfg.listen;
  sopts.heartbeat_interval = cfg.heartbeat_interval;
  sopts.client_timeout = cfg.client_timeout;
  sopts.software_version = TRIBUTARY_VERSION;
  sopts.engine_executor = engine_thread.get_executor();
  sopts.security_log = security;
  // The operators' endpoint (monitor.listen), on its own thread: Prometheus metrics, and the live
  // dashboard (its page, its state as JSON, and the state's changes as server-sent events).
#if TRIBUTARY_HAVE_MONITOR
  if (!cfg.monitor_listen.empty()) {
    MonitorServerOptions mopts;
    mopts.listen = cfg.monitor_listen;
    mopts.token = cfg.monitor_token;
    mopts.security_log = security;
    mopts.routes["/metrics"] = {RunMetrics::kContentType, [&metrics] { return metrics.Scrape(); }};
    mopts.routes["/"] = {"text/html; charset=utf-8", [] { return web::DashboardPage(); }};
    mopts.routes["/api/state"] = {"application/json",
                                  [&dashboard] { return dashboard.Snapshot(); }};
    mopts.streams["/api/events"] = {[&dashboard] { return dashboard.Snapshot(); }};
    Result<std::unique_ptr<MonitorServer>> started = MonitorServer::Start(std::move(mopts));
    if (!started.ok()) return Fail(started.status().WithContext("key 'monitor.listen'"), 2);
    monitor = std::move(*started);
    MonitorServer* server = monitor.get();
    dashboard.set_publisher(
        [server](std::string delta) { server->Publish("/api/events", std::move(delta)); });
    Log().info("monitor: dashboard at http://{}/{}, Prometheus metrics at http://{}/metrics{}",
               cfg.monitor_listen, cfg.monitor_token.empty() ? "" : "?access_token=<monitor.token>",
               cfg.monitor_listen, cfg.monitor_token.empty() ? "" : " (bearer token required)");
  }
#else
  if (!cfg.monitor_listen.empty())
    return Fail(Status::Unimplemented("key 'monitor.listen': this build has no monitor "
                                      "(prometheus-cpp was not found)"),
                2);
#endif
  (*driver)->Start();
  auto service = std::make_shared<CoordinatorService>(io, **transport, **driver, sopts);
  Status result = Status::Aborted("not finished");
  bool stopped_by_signal = false;
  service->set_on_finished([&](Status s) {
    result = s;
    // Give the Goodbyes a moment to leave before stopping the io_context.
    auto timer = std::make_shared<asio::steady_timer>(io, std::chrono::milliseconds(300));
    timer->async_wait([&io, timer](const boost::system::error_code&) { io.stop(); });
  });
  if (Status s = service->Start(); !s.ok()) return Fail(s.WithContext("listen on " + cfg.listen));
#if TRIBUTARY_HAVE_MONITOR
  // Between the run's events clients join, leave and are heard from: the monitor samples them
  // again every 2 s, on the engine strand (where the registry may be read).
  asio::steady_timer client_refresh(io);
  std::function<void()> refresh_clients = [&] {
    client_refresh.expires_after(std::chrono::seconds(2));
    client_refresh.async_wait([&](const boost::system::error_code& ec) {
      if (ec) return;
      service->RunOnEngine([&metrics, &dashboard] {
        metrics.RefreshClients();
        dashboard.RefreshClients();
      });
      refresh_clients();
    });
  };
  if (monitor) refresh_clients();
#endif
  const ModelWeights& model = (*driver)->engine().model();
  const std::string what = cfg.run.initial_model.empty() ? cfg.run.model
                           : cfg.run.model.empty()
                               ? cfg.run.initial_model
                               : cfg.run.model + " from " + cfg.run.initial_model;
  std::printf(
      "tributary-coordinator %s: model %s (%zu tensors, %zu parameters), strategy %s, %lld rounds "
      "of %lld clients, server-side evaluation %s; listening on %s (mutual TLS)\n",
      TRIBUTARY_VERSION, what.c_str(), model.num_tensors(), model.size(), cfg.run.strategy.c_str(),
      static_cast<long long>(cfg.run.round.rounds),
      static_cast<long long>(cfg.run.round.clients_per_round), evaluation.c_str(),
      service->address().c_str());
  std::fflush(stdout);
  if (!cfg.ready_file.empty()) {
    if (Status s = WriteFileAtomic(cfg.ready_file, service->address() + "\n"); !s.ok())
      return Fail(s);
  }
  asio::signal_set signals(io, SIGINT, SIGTERM);
  signals.async_wait([&](const boost::system::error_code& sec, int sig) {
    if (sec) return;
    stopped_by_signal = true;
    std::printf("signal %d: shutting down (the last checkpoint is complete)\n", sig);
    std::fflush(stdout);
    service->Stop("the coordinator is shutting down");
  });
  std::thread second([&io] { io.run(); });
  io.run();
  second.join();
  engine_thread.stop();
  engine_thread.join();
  if (!result.ok()) return Fail(result);
  if (!stopped_by_signal)
    std::printf("run complete: %llu rounds\n",
                static_cast<unsigned long long>((*driver)->engine().rounds_done()));
  return 0;
}

}  // namespace
}  // namespace tributary

int main(int argc, char** argv) {
  tributary::CoordinatorConfig cfg;
  tributary::ConfigSchema schema("tributary-coordinator");
  tributary::BindCoordinatorConfig(schema, &cfg);
  CLI::App app{"tributary-coordinator: runs federated training rounds over mutual TLS"};
  tributary::ConfigCommandLine cli(app, schema);
  bool resume = false, resume_or_start = false;
  app.add_flag("--resume", resume,
               "continue from the newest good checkpoint in output.checkpoint_dir (an error when "
               "there is none)");
  app.add_flag("--resume-or-start", resume_or_start,
               "continue from a checkpoint when there is one, else start a new run (for a "
               "supervisor that restarts the coordinator)");
  CLI11_PARSE(app, argc, argv);
  if (cli.print_config()) {
    std::fputs(schema.DefaultsToml().c_str(), stdout);
    return 0;
  }
  if (tributary::Status s = cli.Apply(); !s.ok()) return tributary::Fail(s, 2);
  return tributary::Run(cfg, resume, resume_or_start);
}
