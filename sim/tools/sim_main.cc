// tributary-sim: federated training of many virtual clients in one process, with the real
// coordinator round engine and client task code, simulated time, and a report.
//
//   tributary-sim --config sim.toml [--rounds 50] [--set hetero.dropout=0.1] ...
//   tributary-sim --print-config              every key with its default
//
// Prints one line per round and ends with the report's path (sim/sim_console.h). See
// docs/simulation.md. main() parses and runs (sim/sim_run.h, sim/deploy.h); the run's event log
// and history are the coordinator's observers (coordinator/run_observers.h).
#include <CLI/CLI.hpp>

#include <cstdio>
#include <filesystem>

#include "coordinator/run_observers.h"
#include "core/config_cli.h"
#include "core/lock_file.h"
#include "core/stderr_log.h"
#include "sim/deploy.h"
#include "sim/sim_console.h"
#include "sim/sim_run.h"

namespace tributary {
namespace {

int Fail(const Status& s, int code = 2) {
  std::fprintf(stderr, "tributary-sim: %s\n", s.ToString().c_str());
  return code;
}

int Run(SimConfig& cfg, bool deploy) {
  if (Status s = InitLogging(cfg.log_level); !s.ok()) return Fail(s.WithContext("log_level"));
  if (Status s = cfg.Validate(); !s.ok()) return Fail(s);
  // Its events, final model and report (and in deployment mode its deploy/ directory, cleared
  // first) are this run's own: a second simulation on one report directory refuses to start.
  Result<std::unique_ptr<LockFile>> lock = LockFile::AcquireDir(
      cfg.report_dir, {"sim.report_dir " + cfg.report_dir, "another run",
                       "give each run its own sim.report_dir, or stop the other one first"});
  if (!lock.ok()) return Fail(lock.status(), 1);
  const auto print = [total = cfg.run.round.rounds](const SimRound& r) { PrintSimRound(r, total); };
  nlohmann::json extra = {{"mode", "deploy"}};
  Result<SimResult> result = Status::Aborted("not run");
  // In process, the run's events go to the report directory, and its record to the run history
  // (output.history), with the config through the simulator's own schema (on a copy).
  SimConfig recorded = cfg;
  ConfigSchema keys("tributary-sim");
  BindSimConfig(keys, &recorded);
  std::unique_ptr<RunObservers> observers;  // outlives the simulator
  if (deploy) {
    PrintDeployStart(cfg);
    result = RunDeployment(cfg, DeployOptions{}, print);
  } else {
    result = RunSimulation(
        cfg,
        [&](Simulator& sim) -> Status {
          const auto events = (std::filesystem::path(cfg.report_dir) / "events.jsonl").string();
          TRIB_ASSIGN_OR_RETURN(
              observers, RunObservers::Create({"tributary-sim", events, cfg.run.history, &keys}));
          for (RunObserver* o : observers->observers()) sim.AddObserver(o);
          return Status::Ok();
        },
        print, &extra);
  }
  if (!result.ok()) return Fail(result.status());
  if (Status st = FinishSimRun(cfg, *result, std::move(extra)); !st.ok()) return Fail(st, 1);
  return 0;
}

}  // namespace
}  // namespace tributary

int main(int argc, char** argv) {
  tributary::SimConfig cfg;
  tributary::ConfigSchema schema("tributary-sim");
  tributary::BindSimConfig(schema, &cfg);
  CLI::App app{"tributary-sim: simulate federated training with many virtual clients"};
  tributary::ConfigCommandLine cli(app, schema);
  bool deploy = false;
  app.add_flag("--deploy", deploy,
               "run the real tributary-coordinator and tributary-client processes over mutual "
               "TLS on loopback instead of the in-process simulation");
  CLI11_PARSE(app, argc, argv);
  if (cli.print_config()) {
    std::fputs(schema.DefaultsToml().c_str(), stdout);
    return 0;
  }
  if (tributary::Status s = cli.Apply(); !s.ok()) return tributary::Fail(s);
  return tributary::Run(cfg, deploy);
}
