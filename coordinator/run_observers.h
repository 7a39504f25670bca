// RunObservers: the observers Tributary's programs give every run, assembled in one place for
// tributary-coordinator (coordinator_assembly.h) and tributary-sim.
//
// Create() makes, in this order (the order they must be added to the run's driver, observers()):
//   the event log     EventLog on options.event_log ("": none);
//   the console       ConsoleObserver (round lines on stdout), when options.console;
//   the run history   RunHistory::OpenForRun(options.history, ...), recording options.config (the
//                     program's schema, read during Create only) as the run's configuration;
//                     none for "none" (or when the default database cannot be opened: a warning);
//   metrics           RunMetrics and the dashboard's DashboardState, when options.monitor_listen
//   and dashboard     is set, served there by a MonitorServer (GET /metrics, the dashboard page at
//                     /, /api/state and the server-sent events /api/events), behind
//                     options.monitor_token when set, within options.monitor_limits. Their
//                     clients come from options.registry,
//                     read on the run's thread at its events and at RefreshClients().
//
// Errors name the key: "key 'output.history': ..." for a database that cannot be opened, "key
// 'monitor.listen': ..." for an address that cannot be served, and Unimplemented naming the key
// when this build has no history (SQLite) or no monitor (prometheus-cpp) and the key asks for one.
// *exit_status (when given) is then 2, the configuration's fault; 1 when the event log cannot be
// opened (the file system's).
//
// Lifetime: the RunObservers must outlive the driver they are added to (RunDriver::AddObserver);
// destroying it stops the monitor server first. options.registry must outlive RefreshClients()
// calls and the run's events.
//
// Threading: observers() are called on the run's thread, like RefreshClients(); the monitor serves
// from its own thread (RunMetrics and DashboardState are thread-safe for that).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "coordinator/client_registry.h"
#include "coordinator/monitor_limits.h"
#include "coordinator/run_events.h"
#include "core/config_schema.h"
#include "core/env.h"
#include "protocol/security_log.h"

namespace tributary {

struct RunObserversOptions {
  RunObserversOptions() = default;
  // What every program says: who it is, its event log, output.history, and its settings.
  RunObserversOptions(std::string producer, std::string event_log, std::string history,
                      const ConfigSchema* config)
      : producer(std::move(producer)),
        event_log(std::move(event_log)),
        history(std::move(history)),
        config(config) {}

  std::string producer;   // "tributary-coordinator", "tributary-sim": the history's producer
  std::string event_log;  // "": none (the history then points readers to none)
  // The run history: output.history's value, the run's settings, and what the events do not say.
  std::string history;
  const ConfigSchema* config = nullptr;  // null: the history records {}
  std::string checkpoint_dir;
  int64_t keep_checkpoints = 0;
  Env* env = nullptr;  // for the event log; null: Env::Default()
  bool console = false;
  // monitor.listen ("": no metrics, no dashboard) and monitor.token.
  std::string monitor_listen;
  std::string monitor_token;
  MonitorLimits monitor_limits;
  std::shared_ptr<SecurityLog> security_log;  // the monitor's refusals go here; null: its own
  const ClientRegistry* registry = nullptr;   // null: no client counts or table
};

class RunObservers {
 public:
  static Result<std::unique_ptr<RunObservers>> Create(const RunObserversOptions& options,
                                                      int* exit_status = nullptr);
  ~RunObservers();
  RunObservers(const RunObservers&) = delete;
  RunObservers& operator=(const RunObservers&) = delete;

  // Every observer made, in the order to add them.
  const std::vector<RunObserver*>& observers() const { return observers_; }
  bool has_history() const { return history_ != nullptr; }
  // A monitor is serving (monitor.listen was set): call RefreshClients every few seconds.
  bool monitored() const;
  // The port the monitor listens on (the real one when monitor.listen asked for port 0); 0 when
  // none.
  uint16_t monitor_port() const;
  // The monitor's bound "host:port" ("[v6]:port"), with the real port; "" when none.
  std::string monitor_address() const;
  // Samples the clients again for the metrics and the dashboard (between events, clients join and
  // leave too). On the run's thread. Nothing without a monitor.
  void RefreshClients();

 private:
  struct Monitor;  // the metrics, the dashboard and their server, in builds that have them
  RunObservers();

  std::unique_ptr<RunObserver> event_log_;
  std::unique_ptr<RunObserver> console_;
  std::unique_ptr<RunObserver> history_;
  std::unique_ptr<Monitor> monitor_;
  std::vector<RunObserver*> observers_;
};

}  // namespace tributary
