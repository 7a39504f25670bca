#include "sim/sim_console.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>

#include "core/process_stats.h"
#include "sim/report.h"

namespace tributary {
namespace {

std::string Bytes(double b) {
  if (b >= 1e9) return fmt::format("{:.2f} GB", b / 1e9);
  if (b >= 1e6) return fmt::format("{:.1f} MB", b / 1e6);
  return fmt::format("{:.1f} kB", b / 1e3);
}

}  // namespace

void PrintSimStart(const SimConfig& cfg, const DataSplits& data) {
  std::printf(
      "tributary-sim: %s on %s (%lld train / %lld test), %lld clients (%s), %lld per round, "
      "%lld rounds, %d threads\n",
      cfg.run.model.c_str(), cfg.data.dataset.c_str(), static_cast<long long>(data.train->size()),
      static_cast<long long>(data.test->size()), static_cast<long long>(cfg.data.num_clients),
      cfg.data.partition.c_str(), static_cast<long long>(cfg.run.round.clients_per_round),
      static_cast<long long>(cfg.run.round.rounds),
      cfg.threads > 0 ? static_cast<int>(cfg.threads)
                      : static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  std::fflush(stdout);
}

void PrintDeployStart(const SimConfig& cfg) {
  std::printf(
      "tributary-sim --deploy: tributary-coordinator + %lld tributary-client processes "
      "over mutual TLS on loopback; %s, %lld rounds, %lld per round\n",
      static_cast<long long>(cfg.data.num_clients), cfg.run.model.c_str(),
      static_cast<long long>(cfg.run.round.rounds),
      static_cast<long long>(cfg.run.round.clients_per_round));
  std::fflush(stdout);
}

double PrintSimJoin(const SimConfig& cfg, double join_seconds, uint64_t rss_before,
                    uint64_t rss_after) {
  // Memory per idle virtual client: the RSS that registering the population adds (the engine's
  // registry record plus the simulator's per-client data), divided by the clients.
  const double per_client = static_cast<double>(rss_after - std::min(rss_after, rss_before)) /
                            static_cast<double>(cfg.data.num_clients);
  // Below ~10k clients the growth is lost in allocator noise; say so rather than print noise.
  if (cfg.data.num_clients >= 10000)
    std::printf("registered %lld clients in %.2f s: %.0f bytes of RSS per idle client\n",
                static_cast<long long>(cfg.data.num_clients), join_seconds, per_client);
  else
    std::printf("registered %lld clients in %.2f s\n", static_cast<long long>(cfg.data.num_clients),
                join_seconds);
  std::fflush(stdout);
  return per_client;
}

void PrintSimRound(const SimRound& r, int64_t total) {
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
  if (r.dp) extra += fmt::format("  eps {:.3f}  clip {:.3g}", r.epsilon, r.dp_clip_norm);
  std::printf("round %3llu/%lld  %sup %s  down %s  %.2fs (sim %.1fs)  ETA %.0fs%s\n",
              static_cast<unsigned long long>(r.round), static_cast<long long>(total), acc.c_str(),
              Bytes(static_cast<double>(r.bytes_up)).c_str(),
              Bytes(static_cast<double>(r.bytes_down)).c_str(), r.wall_seconds, r.sim_seconds, eta,
              extra.c_str());
  std::fflush(stdout);
}

Status FinishSimRun(const SimConfig& cfg, const SimResult& result, nlohmann::json extra) {
  double client_rounds = 0;
  for (const SimRound& r : result.rounds) client_rounds += static_cast<double>(r.selected);
  const double ms = 1000.0 * result.wall_seconds / std::max(1.0, client_rounds);
  extra["peak_rss_bytes"] = PeakRssBytes();
  extra["client_rounds"] = client_rounds;
  extra["wall_ms_per_client_round"] = ms;
  TRIB_RETURN_IF_ERROR(WriteReport(cfg.report_dir, cfg, result, extra));
  std::printf(
      "done: %zu rounds in %.1f s wall (%.1f s simulated); %.3f ms wall per client-round; "
      "peak RSS %s; final model hash %016llx\n",
      result.rounds.size(), result.wall_seconds, result.sim_seconds, ms,
      Bytes(static_cast<double>(PeakRssBytes())).c_str(),
      static_cast<unsigned long long>(result.model_hash));
  if (cfg.run.round.secagg.enabled && !result.rounds.empty()) {
    const SimRound sum = result.SecAggTotals();
    const double rounds = static_cast<double>(result.rounds.size());
    const double clients = static_cast<double>(std::max<int64_t>(1, sum.secagg_clients));
    std::printf(
        "secure aggregation: protocol messages %s up, %s down per round (besides the masked "
        "inputs); client compute %.1f ms per client-round; coordinator %.1f ms per round\n",
        Bytes(static_cast<double>(sum.secagg_bytes_up) / rounds).c_str(),
        Bytes(static_cast<double>(sum.secagg_bytes_down) / rounds).c_str(),
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
      std::printf("reached %.2f%% test accuracy at round %llu after %.1f s wall\n",
                  100 * cfg.target_accuracy, static_cast<unsigned long long>(result.target_round),
                  result.target_wall_seconds);
    else
      std::printf("did not reach %.2f%% test accuracy\n", 100 * cfg.target_accuracy);
  }
  std::printf("report: %s\n",
              (std::filesystem::path(cfg.report_dir) / "report.html").string().c_str());
  std::fflush(stdout);
  return Status::Ok();
}

}  // namespace tributary
