#include "sim/sim_console.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>

#include <fmt/format.h>
#include "core/human_units.h"

#include "core/process_stats.h"
#include "sim/report.h"
#include "sim/round_line.h"
#include "train/data/feature_noise.h"

namespace tributary {
namespace {

constexpr int kStartClientsListed = 5;  // clients the start-up table lists

// "10 per round, 100 rounds", or an asynchronous run's concurrency, buffer and steps.
std::string Pace(const RoundConfig& r) {
  if (r.asynchronous())
    return fmt::format("asynchronous: {} training at once, a step every {} updates, {} steps",
                       r.Concurrency(), r.BufferSize(), r.rounds);
  return fmt::format("{} per round, {} rounds", r.clients_per_round, r.rounds);
}

}  // namespace

void PrintSimStart(const SimConfig& cfg, const DataSplits& data,
                   const std::optional<PartitionStats>& partition) {
  std::printf(
      "tributary-sim: %s on %s (%lld train / %lld test), %lld clients (%s), %s, %d threads\n",
      cfg.run.model.c_str(), cfg.data.dataset.c_str(), static_cast<long long>(data.train->size()),
      static_cast<long long>(data.test->size()), static_cast<long long>(cfg.data.num_clients),
      cfg.data.partition.c_str(), Pace(cfg.run.round).c_str(),
      cfg.threads > 0 ? static_cast<int>(cfg.threads)
                      : static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  if (partition) {
    // The summary and the first clients, indented under the start line.
    std::string text = "partition " + cfg.data.partition + ": " +
                       FormatPartitionStats(*partition, kStartClientsListed);
    for (size_t at = text.find('\n'); at != std::string::npos && at + 1 < text.size();
         at = text.find('\n', at + 3))
      text.insert(at + 1, "  ");
    std::printf("%s", text.c_str());
    Result<FeatureNoiseSpec> noise = SplitFeatureNoise(cfg.data.partition);
    if (noise.ok() && noise->sigma > 0)
      std::printf("  feature noise: standard deviation %.4g * i / %lld for client i (0 to %.4g)\n",
                  noise->sigma,
                  static_cast<long long>(std::max<int64_t>(1, cfg.data.num_clients - 1)),
                  noise->sigma);
  }
  std::fflush(stdout);
}

void PrintDeployStart(const SimConfig& cfg) {
  std::printf(
      "tributary-sim --deploy: tributary-coordinator + %lld tributary-client processes "
      "over mutual TLS on loopback; %s, %s\n",
      static_cast<long long>(cfg.data.num_clients), cfg.run.model.c_str(),
      Pace(cfg.run.round).c_str());
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
    std::printf("registered %lld clients in %s: %s of RSS per idle client\n",
                static_cast<long long>(cfg.data.num_clients), FormatDuration(join_seconds).c_str(),
                FormatBytes(per_client).c_str());
  else
    std::printf("registered %lld clients in %s\n", static_cast<long long>(cfg.data.num_clients),
                FormatDuration(join_seconds).c_str());
  std::fflush(stdout);
  return per_client;
}

void PrintSimRound(const SimRound& r, int64_t total) {
  std::printf("%s\n", SimRoundLine(r, total).c_str());
  std::fflush(stdout);
}

Status FinishSimRun(const SimConfig& cfg, const SimResult& result, nlohmann::json extra) {
  int64_t client_rounds = 0;  // a count: an integer in report.json
  for (const SimRound& r : result.rounds) client_rounds += r.selected;
  const double ms =
      1000.0 * result.wall_seconds / std::max(1.0, static_cast<double>(client_rounds));
  extra["peak_rss_bytes"] = PeakRssBytes();
  extra["client_rounds"] = client_rounds;
  extra["wall_ms_per_client_round"] = ms;
  TRIB_RETURN_IF_ERROR(WriteReport(cfg.report_dir, cfg, result, extra));
  std::printf(
      "done: %zu %s in %s wall (%s simulated); %s wall per client-round; peak RSS %s; final "
      "model hash %016llx\n",
      result.rounds.size(), cfg.run.round.asynchronous() ? "steps" : "rounds",
      FormatDuration(result.wall_seconds).c_str(), FormatDuration(result.sim_seconds).c_str(),
      FormatDuration(ms / 1000).c_str(), FormatBytes(static_cast<double>(PeakRssBytes())).c_str(),
      static_cast<unsigned long long>(result.model_hash));
  if (cfg.tier.aggregators > 0 && !result.rounds.empty()) {
    const SimRound sum = result.TierTotals();
    const double rounds = static_cast<double>(result.rounds.size());
    std::printf(
        "aggregation tier: %lld aggregators; per round %s of group tasks down and %s of partial "
        "sums up their links; the aggregators' compute %.1f ms, the coordinator's for the partial "
        "sums %.1f ms\n",
        static_cast<long long>(cfg.tier.aggregators),
        FormatBytes(static_cast<double>(sum.tier_bytes_down) / rounds).c_str(),
        FormatBytes(static_cast<double>(sum.tier_bytes_up) / rounds).c_str(),
        1000 * sum.aggregator_seconds / rounds, 1000 * sum.coordinator_update_seconds / rounds);
  }
  if (cfg.run.round.split.enabled() && !result.rounds.empty()) {
    const SimRound sum = result.SplitTotals();
    const double rounds = static_cast<double>(result.rounds.size());
    std::printf(
        "split learning (%s): per round %.0f batches, %s of activations up and %s of gradients "
        "down (in the bytes above), %.1f ms of server-part compute\n",
        cfg.run.round.split.mode.c_str(), static_cast<double>(sum.split_batches) / rounds,
        FormatBytes(static_cast<double>(sum.split_bytes_up) / rounds).c_str(),
        FormatBytes(static_cast<double>(sum.split_bytes_down) / rounds).c_str(),
        1000 * sum.split_server_seconds / rounds);
  }
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
  std::fflush(stdout);
  return Status::Ok();
}

}  // namespace tributary
