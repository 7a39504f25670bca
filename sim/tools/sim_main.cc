// tributary-sim: federated training of many virtual clients in one process, with the real
// coordinator round engine and client task code, simulated time, and a report.
//
//   tributary-sim --config sim.toml [--rounds 50] [--set hetero.dropout=0.1] ...
//   tributary-sim --print-config              every key with its default
//
// Prints one line per round and ends with the report's path. See docs/simulation.md.
#include <CLI/CLI.hpp>

#include <malloc.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "coordinator/event_log.h"
#include "core/config_cli.h"
#include "core/human_units.h"
#include "core/log.h"
#include "core/process_stats.h"
#include "core/stderr_log.h"
#include "sim/deploy.h"
#include "sim/report.h"
#include "sim/round_line.h"
#include "sim/simulator.h"
#include "tributary/config.h"
#if TRIBUTARY_HAVE_HISTORY
#include "history/config_json.h"
#include "history/run_history.h"
#endif

namespace tributary {
namespace {

void PrintRound(const SimRound& r, int64_t total) {
  std::printf("%s\n", SimRoundLine(r, total).c_str());
  std::fflush(stdout);
}

int Finish(const SimConfig& cfg, const SimResult& result, nlohmann::json extra) {
  int64_t client_rounds = 0;  // a count: an integer in report.json
  for (const SimRound& r : result.rounds) client_rounds += r.selected;
  const double ms =
      1000.0 * result.wall_seconds / std::max(1.0, static_cast<double>(client_rounds));
  extra["peak_rss_bytes"] = PeakRssBytes();
  extra["client_rounds"] = client_rounds;
  extra["wall_ms_per_client_round"] = ms;
  if (Status st = WriteReport(cfg.report_dir, cfg, result, extra); !st.ok()) {
    std::fprintf(stderr, "tributary-sim: %s\n", st.ToString().c_str());
    return 1;
  }
  std::printf(
      "done: %zu rounds in %s wall (%s simulated); %s wall per client-round; peak RSS %s; final "
      "model hash %016llx\n",
      result.rounds.size(), FormatDuration(result.wall_seconds).c_str(),
      FormatDuration(result.sim_seconds).c_str(), FormatDuration(ms / 1000).c_str(),
      FormatBytes(static_cast<double>(PeakRssBytes())).c_str(),
      static_cast<unsigned long long>(result.model_hash));
  if (cfg.run.round.secagg.enabled && !result.rounds.empty()) {
    const SimRound sum = result.SecAggTotals();
    const double rounds = static_cast<double>(result.rounds.size());
    const double clients = static_cast<double>(std::max<int64_t>(1, sum.secagg_clients));
    std::printf(
        "secure aggregation: protocol messages %s up, %s down per round (besides the masked "
        "inputs); client compute %.1f ms per client-round; coordinator %.1f ms per round\n",
        FormatBytes(static_cast<double>(sum.secagg_bytes_up) / rounds).c_str(),
        FormatBytes(static_cast<double>(sum.secagg_bytes_down) / rounds).c_str(),
        1000 * sum.secagg_client_seconds / clients, 1000 * sum.secagg_server_seconds / rounds);
  }
  if (cfg.run.round.dp.enabled && !result.rounds.empty()) {
    const DpConfig dp = cfg.EffectiveRun().round.dp;
    std::printf(
        "differential privacy: epsilon %.4g at delta %.3g after %zu rounds (noise multiplier %g, "
        "%s sampling, noise on the %s)\n",
        result.rounds.back().epsilon, dp.EffectiveDelta(), result.rounds.size(),
        dp.noise_multiplier, dp.sampling.c_str(), dp.placement.c_str());
  }
  if (!result.stopped.empty()) std::printf("stopped: %s\n", result.stopped.c_str());
  if (cfg.target_accuracy > 0) {
    if (result.target_round > 0)
      std::printf("reached %.2f%% test accuracy at round %llu after %s wall\n",
                  100 * cfg.target_accuracy, static_cast<unsigned long long>(result.target_round),
                  FormatDuration(result.target_wall_seconds).c_str());
    else
      std::printf("did not reach %.2f%% test accuracy\n", 100 * cfg.target_accuracy);
  }
  std::printf("report: %s\n",
              (std::filesystem::path(cfg.report_dir) / "report.html").string().c_str());
  return 0;
}

int Run(SimConfig& cfg, bool deploy) {
  auto fail = [](const Status& s) {
    std::fprintf(stderr, "tributary-sim: %s\n", s.ToString().c_str());
    return 2;
  };
  if (Status s = InitLogging(cfg.log_level); !s.ok()) return fail(s.WithContext("log_level"));
  if (Status s = cfg.Validate(); !s.ok()) return fail(s);

  const int64_t total = cfg.run.round.rounds;
  if (deploy) {
    std::printf(
        "tributary-sim --deploy: tributary-coordinator + %lld tributary-client processes "
        "over mutual TLS on loopback; %s, %lld rounds, %lld per round\n",
        static_cast<long long>(cfg.data.num_clients), cfg.run.model.c_str(),
        static_cast<long long>(total), static_cast<long long>(cfg.run.round.clients_per_round));
    std::fflush(stdout);
    Result<SimResult> result =
        RunDeployment(cfg, DeployOptions{}, [&](const SimRound& r) { PrintRound(r, total); });
    if (!result.ok()) return fail(result.status());
    return Finish(cfg, *result, {{"mode", "deploy"}});
  }

  Result<DataSplits> data = LoadDataSplits(cfg.data, true, true);
  if (!data.ok()) return fail(data.status());
  const std::filesystem::path report(cfg.report_dir);
  Result<std::unique_ptr<Simulator>> sim =
      Simulator::Create(cfg, *data, (report / "final.safetensors").string());
  if (!sim.ok()) return fail(sim.status());
  Simulator& s = **sim;
  // The run's events, as the coordinator writes them, in the report directory.
  Result<std::unique_ptr<EventLog>> events =
      EventLog::Open(Env::Default(), (report / "events.jsonl").string());
  if (!events.ok()) return fail(events.status());
  s.AddObserver(events->get());
#if TRIBUTARY_HAVE_HISTORY
  // The run's record in the run history (output.history), which `tributary runs` reads.
  SimConfig recorded = cfg;
  ConfigSchema recorded_keys("tributary-sim");
  BindSimConfig(recorded_keys, &recorded);
  Result<std::unique_ptr<RunHistory>> history = RunHistory::OpenForRun(
      cfg.run.history,
      {"tributary-sim", ConfigJson(recorded_keys), "", (report / "events.jsonl").string()});
  if (!history.ok()) return fail(history.status());
  if (*history) s.AddObserver(history->get());
#else
  if (!cfg.run.history.empty() && cfg.run.history != "none")
    return fail(Status::Unimplemented(
        "key 'output.history': this build has no run history (SQLite was not found)"));
#endif
  std::printf(
      "tributary-sim: %s on %s (%lld train / %lld test), %lld clients (%s), %lld per round, "
      "%lld rounds, %d threads\n",
      cfg.run.model.c_str(), cfg.data.dataset.c_str(), static_cast<long long>(data->train->size()),
      static_cast<long long>(data->test->size()), static_cast<long long>(cfg.data.num_clients),
      cfg.data.partition.c_str(), static_cast<long long>(cfg.run.round.clients_per_round),
      static_cast<long long>(total),
      cfg.threads > 0 ? static_cast<int>(cfg.threads)
                      : static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  std::fflush(stdout);
  // Memory per idle virtual client: the RSS that registering the population adds (the engine's
  // registry record plus the simulator's per-client data), divided by the clients.
  const uint64_t rss_before = CurrentRssBytes();
  if (Status st = s.Join(); !st.ok()) return fail(st);
  const uint64_t rss_after = CurrentRssBytes();
  const double per_client = static_cast<double>(rss_after - std::min(rss_after, rss_before)) /
                            static_cast<double>(cfg.data.num_clients);
  // Below ~10k clients the growth is lost in allocator noise; say so rather than print noise.
  if (cfg.data.num_clients >= 10000)
    std::printf("registered %lld clients in %s: %s of RSS per idle client\n",
                static_cast<long long>(cfg.data.num_clients),
                FormatDuration(s.join_seconds()).c_str(), FormatBytes(per_client).c_str());
  else
    std::printf("registered %lld clients in %s\n", static_cast<long long>(cfg.data.num_clients),
                FormatDuration(s.join_seconds()).c_str());
  std::fflush(stdout);
  Result<SimResult> result = s.Run([&](const SimRound& r) { PrintRound(r, total); });
  if (!result.ok()) return fail(result.status());
  return Finish(cfg, *result,
                {{"mode", "in-process"},
                 {"rss_bytes_per_idle_client", per_client},
                 {"population_bytes_per_client", s.population().bytes_per_client()},
                 {"registry_join_seconds", result->join_seconds}});
}

}  // namespace
}  // namespace tributary

int main(int argc, char** argv) {
  // Keep large buffers (models, encoded updates) in the heap: glibc's default hands each one a
  // fresh mmap and unmaps it on free, so every client-round would fault in its pages again.
  mallopt(M_MMAP_THRESHOLD, 256 << 20);
  mallopt(M_TRIM_THRESHOLD, 512 << 20);
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
  if (tributary::Status s = cli.Apply(); !s.ok()) {
    std::fprintf(stderr, "tributary-sim: %s\n", s.ToString().c_str());
    return 2;
  }
  return tributary::Run(cfg, deploy);
}
