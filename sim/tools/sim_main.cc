// tributary-sim: federated training of many virtual clients in one process, with the real
// coordinator round engine and client task code, simulated time, and a report.
//
//   tributary-sim --config sim.toml [--rounds 50] [--set hetero.dropout=0.1] ...
//
// Prints one line per round and ends with the report's path. See docs/simulation.md.
#include <CLI/CLI.hpp>

#include <malloc.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "core/log.h"
#include "core/process_stats.h"
#include "sim/deploy.h"
#include "sim/report.h"
#include "sim/sim_data.h"
#include "sim/simulator.h"
#include "tributary/config.h"

namespace tributary {
namespace {

std::string Bytes(double b) {
  if (b >= 1e9) return fmt::format("{:.2f} GB", b / 1e9);
  if (b >= 1e6) return fmt::format("{:.1f} MB", b / 1e6);
  return fmt::format("{:.1f} kB", b / 1e3);
}

void PrintRound(const SimRound& r, int64_t total) {
  const double eta = r.wall_clock / static_cast<double>(r.round) *
                     static_cast<double>(total - static_cast<int64_t>(r.round));
  std::string acc =
      r.evaluated ? fmt::format("acc {:6.2f}%  loss {:.4f}  ", 100 * r.test_accuracy, r.test_loss)
                  : std::string();
  std::string extra;
  if (r.unavailable + r.dropouts + r.stragglers + r.rejected > 0)
    extra = fmt::format("  (unavail {}, dropped {}, late {}, rejected {})", r.unavailable,
                        r.dropouts, r.stragglers, r.rejected);
  if (r.attempts > 1) extra += fmt::format("  attempts {}", r.attempts);
  if (r.malicious > 0) extra += fmt::format("  malicious {}", r.malicious);
  std::printf("round %3llu/%lld  %sup %s  down %s  %.2fs (sim %.1fs)  ETA %.0fs%s\n",
              static_cast<unsigned long long>(r.round), static_cast<long long>(total), acc.c_str(),
              Bytes(static_cast<double>(r.bytes_up)).c_str(),
              Bytes(static_cast<double>(r.bytes_down)).c_str(), r.wall_seconds, r.sim_seconds, eta,
              extra.c_str());
  std::fflush(stdout);
}

int Finish(const SimConfig& cfg, const SimResult& result, nlohmann::json extra) {
  double client_rounds = 0;
  for (const SimRound& r : result.rounds) client_rounds += static_cast<double>(r.selected);
  const double ms = 1000.0 * result.wall_seconds / std::max(1.0, client_rounds);
  extra["peak_rss_bytes"] = PeakRssBytes();
  extra["client_rounds"] = client_rounds;
  extra["wall_ms_per_client_round"] = ms;
  if (Status st = WriteReport(cfg.report_dir, cfg, result, extra); !st.ok()) {
    std::fprintf(stderr, "tributary-sim: %s\n", st.ToString().c_str());
    return 1;
  }
  std::printf(
      "done: %zu rounds in %.1f s wall (%.1f s simulated); %.3f ms wall per client-round; "
      "peak RSS %s; final model hash %016llx\n",
      result.rounds.size(), result.wall_seconds, result.sim_seconds, ms,
      Bytes(static_cast<double>(PeakRssBytes())).c_str(),
      static_cast<unsigned long long>(result.model_hash));
  if (cfg.target_accuracy > 0) {
    if (result.target_round > 0)
      std::printf("reached %.2f%% test accuracy at round %llu after %.1f s wall\n",
                  100 * cfg.target_accuracy, static_cast<unsigned long long>(result.target_round),
                  result.target_wall_seconds);
    else
      std::printf("did not reach %.2f%% test accuracy\n", 100 * cfg.target_accuracy);
  }
  std::printf("report: %s\n",
              (std::filesystem::path(cfg.report_dir) / "report.html").string().c_str());
  return 0;
}

int Run(const std::string& config_path, const std::vector<std::string>& sets,
        const std::string& log_level, bool deploy) {
  auto fail = [](const Status& s) {
    std::fprintf(stderr, "tributary-sim: %s\n", s.ToString().c_str());
    return 2;
  };
  if (Status s = InitLogging(log_level); !s.ok()) return fail(s);
  SimConfig cfg;
  if (!config_path.empty()) {
    Result<Config> file = Config::LoadFile(config_path);
    if (!file.ok()) return fail(file.status());
    if (Status s = LoadSimConfig(*file, &cfg); !s.ok()) return fail(s);
  }
  for (const std::string& kv : sets) {
    if (Status s = ApplySimOverride(kv, &cfg); !s.ok()) return fail(s);
  }
  if (Status s = cfg.Validate(); !s.ok()) return fail(s);

  const int64_t total = cfg.rounds;
  if (deploy) {
    std::printf(
        "tributary-sim --deploy: tributary-coordinator + %lld tributary-client processes "
        "over mutual TLS on loopback; %s, %lld rounds, %lld per round\n",
        static_cast<long long>(cfg.clients), cfg.model.c_str(), static_cast<long long>(total),
        static_cast<long long>(cfg.per_round));
    std::fflush(stdout);
    Result<SimResult> result =
        RunDeployment(cfg, DeployOptions{}, [&](const SimRound& r) { PrintRound(r, total); });
    if (!result.ok()) return fail(result.status());
    return Finish(cfg, *result, {{"mode", "deploy"}});
  }

  Result<SimData> data = LoadSimData(cfg);
  if (!data.ok()) return fail(data.status());
  Result<std::unique_ptr<Simulator>> sim = Simulator::Create(cfg, *data);
  if (!sim.ok()) return fail(sim.status());
  Simulator& s = **sim;
  std::printf(
      "tributary-sim: %s on %s (%lld train / %lld test), %lld clients (%s), %lld per round, "
      "%lld rounds, %d threads\n",
      cfg.model.c_str(), cfg.dataset.c_str(), static_cast<long long>(data->train->size()),
      static_cast<long long>(data->test->size()), static_cast<long long>(cfg.clients),
      cfg.partition.c_str(), static_cast<long long>(cfg.per_round),
      static_cast<long long>(cfg.rounds),
      cfg.threads > 0 ? static_cast<int>(cfg.threads)
                      : static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  std::fflush(stdout);
  // Memory per idle virtual client: the RSS that registering the population adds (the engine's
  // registry record plus the simulator's per-client data), divided by the clients.
  const uint64_t rss_before = CurrentRssBytes();
  if (Status st = s.Join(); !st.ok()) return fail(st);
  const uint64_t rss_after = CurrentRssBytes();
  const double per_client = static_cast<double>(rss_after - std::min(rss_after, rss_before)) /
                            static_cast<double>(cfg.clients);
  // Below ~10k clients the growth is lost in allocator noise; say so rather than print noise.
  if (cfg.clients >= 10000)
    std::printf("registered %lld clients in %.2f s: %.0f bytes of RSS per idle client\n",
                static_cast<long long>(cfg.clients), s.join_seconds(), per_client);
  else
    std::printf("registered %lld clients in %.2f s\n", static_cast<long long>(cfg.clients),
                s.join_seconds());
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
  CLI::App app{"tributary-sim: simulate federated training with many virtual clients"};
  std::string config, log_level = "warn";
  std::vector<std::string> sets;
  app.add_option("--config", config, "TOML file (see docs/simulation.md)");
  app.add_option("--set", sets, "override any config key: --set key=value (repeatable)");
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error")
      ->capture_default_str();
  // Named shortcuts for the common keys; each becomes a --set applied before the explicit ones.
  struct Shortcut {
    const char* flag;
    const char* key;
    std::string value;
  };
  std::vector<Shortcut> shortcuts = {
      {"--model", "model", ""},
      {"--dataset", "dataset", ""},
      {"--data-dir", "data_dir", ""},
      {"--partition", "partition", ""},
      {"--clients", "clients", ""},
      {"--per-round", "per_round", ""},
      {"--rounds", "rounds", ""},
      {"--epochs", "fit.epochs", ""},
      {"--batch", "fit.batch_size", ""},
      {"--lr", "fit.lr", ""},
      {"--strategy", "strategy", ""},
      {"--codec", "codec", ""},
      {"--seed", "seed", ""},
      {"--threads", "threads", ""},
      {"--trainer", "trainer", ""},
      {"--report-dir", "report_dir", ""},
      {"--speed-tiers", "hetero.speed_tiers", ""},
      {"--dropout", "hetero.dropout", ""},
      {"--availability", "hetero.availability", ""},
  };
  for (Shortcut& s : shortcuts)
    app.add_option(s.flag, s.value, std::string("sets key '") + s.key + "'");
  bool deploy = false;
  app.add_flag("--deploy", deploy,
               "run the real tributary-coordinator and tributary-client processes over mutual "
               "TLS on loopback instead of the in-process simulation");
  CLI11_PARSE(app, argc, argv);
  std::vector<std::string> all;
  for (const Shortcut& s : shortcuts)
    if (!s.value.empty()) all.push_back(std::string(s.key) + "=" + s.value);
  all.insert(all.end(), sets.begin(), sets.end());
  return tributary::Run(config, all, log_level, deploy);
}
