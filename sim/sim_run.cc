#include "sim/sim_run.h"

#include <malloc.h>

#include <filesystem>

#include "core/process_stats.h"
#include "sim/sim_console.h"

namespace tributary {
namespace {

// Keep large buffers (models, encoded updates) in the heap: glibc's default hands each one a
// fresh mmap and unmaps it on free, so every client-round would fault in its pages again.
void KeepBuffersInTheHeap() {
  mallopt(M_MMAP_THRESHOLD, 256 << 20);
  mallopt(M_TRIM_THRESHOLD, 512 << 20);
}

}  // namespace

Status ServeSimulation(const SimConfig& config, RankLink* ranks) {
  KeepBuffersInTheHeap();
  // Rank 0 alone reads and writes the checkpoints (the other ranks' nodes need not see them).
  SimConfig cfg = config;
  cfg.resume = false;
  cfg.run.checkpoint_dir.clear();
  TRIB_ASSIGN_OR_RETURN(DataSplits data, LoadDataSplits(cfg.data, true, true));
  TRIB_ASSIGN_OR_RETURN(std::unique_ptr<Simulator> sim, Simulator::Create(cfg, data));
  TRIB_RETURN_IF_ERROR(sim->SetRanks(ranks));
  return sim->Serve();
}

Result<SimResult> RunSimulation(const SimConfig& cfg,
                                const std::function<Status(Simulator&)>& attach,
                                const std::function<void(const SimRound&)>& on_round,
                                nlohmann::json* extra, RankLink* ranks) {
  KeepBuffersInTheHeap();
  TRIB_ASSIGN_OR_RETURN(DataSplits data, LoadDataSplits(cfg.data, true, true));
  const std::filesystem::path report(cfg.report_dir);
  TRIB_ASSIGN_OR_RETURN(std::unique_ptr<Simulator> sim,
                        Simulator::Create(cfg, data, (report / "final.safetensors").string()));
  TRIB_RETURN_IF_ERROR(sim->SetRanks(ranks));
  if (attach) TRIB_RETURN_IF_ERROR(attach(*sim));
  std::optional<PartitionStats> partition = sim->population().Stats(kPartitionStatsMaxClients);
  PrintSimStart(cfg, data, partition);
  const uint64_t rss_before = CurrentRssBytes();
  TRIB_RETURN_IF_ERROR(sim->Join());
  const double per_client = PrintSimJoin(cfg, sim->join_seconds(), rss_before, CurrentRssBytes());
  TRIB_ASSIGN_OR_RETURN(SimResult result, sim->Run(on_round));
  result.partition = std::move(partition);
  if (extra)
    *extra = {{"mode", ranks && ranks->size() > 1 ? "mpi" : "in-process"},
              {"ranks", ranks ? ranks->size() : 1},
              {"rank_exchanges", result.rank_exchanges},
              {"rank_compute_seconds", result.rank_compute_seconds},
              {"rank_link_seconds", result.rank_link_seconds},
              {"rank_idle_seconds", result.rank_idle_seconds},
              {"rss_bytes_per_idle_client", per_client},
              {"population_bytes_per_client", sim->population().bytes_per_client()},
              {"registry_join_seconds", result.join_seconds}};
  return result;
}

}  // namespace tributary
