#include "coordinator/run_observers.h"

#include <chrono>
#include <utility>

#include "coordinator/console_observer.h"
#include "coordinator/event_log.h"
#include "coordinator/exit_status.h"
#include "core/log.h"
#include "core/wall_clock.h"
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

#if TRIBUTARY_HAVE_MONITOR
struct RunObservers::Monitor {
  RunMetrics metrics;
  DashboardState dashboard;
  // Declared last, so destroyed first: it serves the two above from its own thread.
  std::unique_ptr<MonitorServer> server;
};
#else
struct RunObservers::Monitor {};
#endif

RunObservers::RunObservers() = default;
RunObservers::~RunObservers() = default;

Result<std::unique_ptr<RunObservers>> RunObservers::Create(const RunObserversOptions& options,
                                                           int* exit_status) {
  std::unique_ptr<RunObservers> o(new RunObservers());
  if (!options.event_log.empty()) {
    Result<std::unique_ptr<EventLog>> events =
        EventLog::Open(options.env ? options.env : Env::Default(), options.event_log);
    if (!events.ok()) return Fail(events.status(), 1, exit_status);
    o->event_log_ = std::move(*events);
    o->observers_.push_back(o->event_log_.get());
  }
  if (options.console) {
    o->console_ = std::make_unique<ConsoleObserver>();
    o->observers_.push_back(o->console_.get());
  }

#if TRIBUTARY_HAVE_HISTORY
  // The run's record in the run history (output.history), which `tributary runs` reads.
  Result<std::unique_ptr<RunHistory>> history = RunHistory::OpenForRun(
      options.history,
      {options.producer, options.config ? ConfigJson(*options.config) : std::string("{}"),
       options.checkpoint_dir, options.event_log, options.keep_checkpoints});
  if (!history.ok()) return Fail(history.status(), 2, exit_status);
  if (*history) {
    o->history_ = std::move(*history);
    o->observers_.push_back(o->history_.get());
  }
#else
  if (!options.history.empty() && options.history != "none")
    return Fail(Status::Unimplemented("key 'output.history': this build has no run history "
                                      "(SQLite was not found)"),
                2, exit_status);
#endif

#if TRIBUTARY_HAVE_MONITOR
  if (options.monitor_listen.empty()) return o;
  o->monitor_ = std::make_unique<Monitor>();
  Monitor& m = *o->monitor_;
  // The clients' numbers and table come from the round engine's registry, read on the run's
  // thread (the observers' and RefreshClients').
  if (const ClientRegistry* registry = options.registry) {
    m.metrics.set_client_sampler([registry] {
      return std::pair<int64_t, int64_t>(static_cast<int64_t>(registry->size()),
                                         static_cast<int64_t>(registry->num_idle()));
    });
    m.metrics.set_cooling_sampler(
        [registry] { return static_cast<int64_t>(registry->num_cooling()); });
    m.dashboard.set_client_sampler([registry] {
      std::vector<DashboardState::ClientSample> out;
      const auto now = std::chrono::steady_clock::now();
      const double wall = UnixSeconds();
      for (const auto& [id, record] : registry->records())
        out.push_back({id, record.busy,
                       wall - std::chrono::duration<double>(now - record.last_seen).count(),
                       registry->CoolingNow(id)});
      return out;
    });
  }
  o->observers_.push_back(&m.metrics);
  o->observers_.push_back(&m.dashboard);
  // The operators' endpoint, on its own thread: Prometheus metrics, and the live dashboard (its
  // page, its state as JSON, and the state's changes as server-sent events).
  MonitorServerOptions mopts;
  mopts.listen = options.monitor_listen;
  mopts.token = options.monitor_token;
  mopts.security_log = options.security_log;
  const MonitorLimits& limits = options.monitor_limits;
  mopts.max_connections = static_cast<size_t>(limits.max_connections);
  mopts.max_connections_per_address = static_cast<size_t>(limits.max_connections_per_address);
  mopts.max_streams = static_cast<size_t>(limits.max_streams);
  mopts.first_byte_timeout = limits.first_byte_timeout;
  mopts.request_timeout = limits.request_timeout;
  mopts.stream_stall_timeout = limits.stream_stall_timeout;
  mopts.stream_send_buffer = static_cast<size_t>(limits.stream_send_buffer_kb) << 10;
  mopts.routes["/metrics"] = {RunMetrics::kContentType, [&m] { return m.metrics.Scrape(); }};
  mopts.routes["/"] = {"text/html; charset=utf-8", [] { return web::DashboardPage(); }};
  mopts.routes["/api/state"] = {"application/json", [&m] { return m.dashboard.Snapshot(); }};
  mopts.streams["/api/events"] = {[&m] { return m.dashboard.Snapshot(); }};
  Result<std::unique_ptr<MonitorServer>> started = MonitorServer::Start(std::move(mopts));
  if (!started.ok())
    return Fail(started.status().WithContext("key 'monitor.listen'"), 2, exit_status);
  m.server = std::move(*started);
  MonitorServer* server = m.server.get();
  m.dashboard.set_publisher(
      [server](std::string delta) { server->Publish("/api/events", std::move(delta)); });
  // The bound address, so that with port 0 the line names the real port.
  const bool token = !options.monitor_token.empty();
  Log().info("monitor: dashboard at http://{}/{}, Prometheus metrics at http://{}/metrics{}",
             server->address(), token ? "?access_token=<monitor.token>" : "", server->address(),
             token ? " (bearer token required)" : "");
#else
  if (!options.monitor_listen.empty())
    return Fail(Status::Unimplemented("key 'monitor.listen': this build has no monitor "
                                      "(prometheus-cpp was not found)"),
                2, exit_status);
#endif
  return o;
}

bool RunObservers::monitored() const { return monitor_ != nullptr; }

uint16_t RunObservers::monitor_port() const {
#if TRIBUTARY_HAVE_MONITOR
  if (monitor_ && monitor_->server) return monitor_->server->port();
#endif
  return 0;
}

std::string RunObservers::monitor_address() const {
#if TRIBUTARY_HAVE_MONITOR
  if (monitor_ && monitor_->server) return monitor_->server->address();
#endif
  return "";
}

void RunObservers::RefreshClients() {
#if TRIBUTARY_HAVE_MONITOR
  if (!monitor_) return;
  monitor_->metrics.RefreshClients();
  monitor_->dashboard.RefreshClients();
#endif
}

}  // namespace tributary
