// tributary-sim: federated training of many virtual clients in one process, with the real
// coordinator round engine and client task code, simulated time, and a report.
//
//   tributary-sim --config sim.toml [--rounds 50] [--set hetero.dropout=0.1] ...
//   tributary-sim --print-config              every key with its default
//   mpirun -np 4 tributary-sim --config sim.toml   the clients train on 4 ranks; rank 0 runs the
//                                                  run and prints, bitwise the same as one process
//   tributary-sim --config sim.toml --set output.checkpoint_dir=ck --resume   goes on from the
//                                                  newest good checkpoint (under any -np)
//
// Prints one line per round and ends with the report's path (sim/sim_console.h). SIGINT or SIGTERM
// stop an in-process run after the round in progress (a second one ends the process). See
// docs/simulation.md. main() parses and runs (sim/sim_run.h, sim/deploy.h); the run's event log
// and history are the coordinator's observers (coordinator/run_observers.h).
#include <CLI/CLI.hpp>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <filesystem>

#include "coordinator/run_observers.h"
#include "core/config_cli.h"
#include "core/lock_file.h"
#include "core/stderr_log.h"
#include "sim/deploy.h"
#include "sim/mpi_link.h"
#include "sim/sim_console.h"
#include "sim/sim_run.h"

namespace tributary {
namespace {

int Fail(const Status& s, int code = 2) {
  std::fprintf(stderr, "tributary-sim: %s\n", s.ToString().c_str());
  return code;
}

// Another rank of a distributed simulation: serves rank 0, prints only its errors, and ends the
// whole job when it cannot go on (rank 0 would wait for it for ever).
int Serve(SimConfig& cfg, bool deploy, MpiLink& link) {
  if (Status s = InitLogging(cfg.log_level); !s.ok()) return Fail(s.WithContext("log_level"));
  Status s = deploy ? Status::InvalidArgument("--deploy starts its own processes; not under mpirun")
                    : ServeSimulation(cfg, &link);
  if (s.ok()) return 0;
  std::fprintf(stderr, "tributary-sim (rank %d): %s\n", link.rank(), s.ToString().c_str());
  link.Abort(2);
}

// The simulation that SIGINT or SIGTERM stops (in process, one rank): the first signal asks it to
// stop after the round in progress (the run is recorded as stopped, its checkpoints kept for
// --resume); a second one ends the process at once.
std::atomic<bool> g_stop{false};
static_assert(std::atomic<bool>::is_always_lock_free);

extern "C" void StopOnSignal(int sig) {
  g_stop.store(true, std::memory_order_relaxed);
  std::signal(sig, SIG_DFL);
}

int Run(SimConfig& cfg, bool deploy, MpiLink* link) {
  if (link && link->rank() != 0) return Serve(cfg, deploy, *link);
  if (Status s = InitLogging(cfg.log_level); !s.ok()) return Fail(s.WithContext("log_level"));
  if (Status s = cfg.Validate(); !s.ok()) return Fail(s);
  if (deploy && link && link->size() > 1)
    return Fail(Status::InvalidArgument("--deploy starts its own processes; not under mpirun"));
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
          if (!link) {
            sim.StopWhen(&g_stop);
            std::signal(SIGINT, StopOnSignal);
            std::signal(SIGTERM, StopOnSignal);
          }
          return Status::Ok();
        },
        print, &extra, link);
  }
  if (!result.ok()) return Fail(result.status());
  if (Status st = FinishSimRun(cfg, *result, std::move(extra)); !st.ok()) return Fail(st, 1);
  return 0;
}

// How the process ends. Under mpirun with several ranks a rank that fails ends the whole job
// (MPI_Abort): the others wait for it (rank 0 for their answers, the rest for rank 0's work),
// and a plain exit would leave them, and mpirun, waiting for ever.
int Exit(int code, MpiLink* link) {
  if (code == 0 || !link || link->size() < 2) return code;
  std::fprintf(stderr, "tributary-sim (rank %d of %d): ending the whole job (exit %d)\n",
               link->rank(), link->size(), code);
  std::fflush(stderr);
  link->Abort(code);
}

int Main(int argc, char** argv, MpiLink* link) {
  SimConfig cfg;
  ConfigSchema schema("tributary-sim");
  BindSimConfig(schema, &cfg);
  CLI::App app{"tributary-sim: simulate federated training with many virtual clients"};
  ConfigCommandLine cli(app, schema);
  bool deploy = false;
  app.add_flag("--deploy", deploy,
               "run the real tributary-coordinator and tributary-client processes over mutual "
               "TLS on loopback instead of the in-process simulation");
  bool resume = false;
  app.add_flag("--resume", resume,
               "continue the run from the newest good checkpoint in output.checkpoint_dir, "
               "bitwise as if it had not stopped (on any number of MPI ranks)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (link && link->rank() != 0) std::fprintf(stderr, "tributary-sim (rank %d): ", link->rank());
    return app.exit(e);  // 0 for --help
  }
  if (cli.print_config()) {
    std::fputs(schema.DefaultsToml().c_str(), stdout);
    return 0;
  }
  if (Status s = cli.Apply(); !s.ok()) return Fail(s);
  cfg.resume = resume;
  if (resume && deploy)
    return Fail(Status::InvalidArgument(
        "--resume is for the in-process simulation; --deploy starts a new run"));
  return Run(cfg, deploy, link);
}

}  // namespace
}  // namespace tributary

int main(int argc, char** argv) {
  // Under an MPI launcher, MPI first (it may take its own arguments out of argv).
  std::unique_ptr<tributary::MpiLink> link;
  if (const int ranks = tributary::MpiLaunchedRanks();
      ranks > 1 || (ranks == 1 && tributary::MpiBuilt())) {
    auto made = tributary::MpiLink::Init(&argc, &argv);
    if (!made.ok()) return tributary::Fail(made.status());
    link = std::move(*made);
  }
  return tributary::Exit(tributary::Main(argc, argv, link.get()), link.get());
}
