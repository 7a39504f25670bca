// What tributary-sim prints on stdout, for its in-process and --deploy modes (docs/simulation.md):
//
//   PrintSimStart / PrintDeployStart   the start-up line: model, data, clients, rounds, threads
//   PrintSimJoin                       the registration line: how long registering the population
//                                      took and, from 10,000 clients on, the RSS per idle client
//   PrintSimRound                      one line per round: accuracy and loss when evaluated, bytes
//                                      up and down, wall and simulated seconds, the ETA, and what
//                                      went wrong (unavailable, dropped, late, refused, attempts);
//                                      sim/round_line.h
//   FinishSimRun                       writes the report (report_dir) with the run's totals, then
//                                      prints the end: the final model hash, secure aggregation's
//                                      and differential privacy's costs, the target accuracy, and
//                                      the report's path
//
// Each line is flushed as written. Not thread-safe: call from the simulation's thread.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>

#include "sim/sim_config.h"
#include "sim/sim_result.h"
#include "train/data/data_config.h"

namespace tributary {

// With `partition`, also its summary and the first clients' sizes and class counts (and the
// feature noise's levels when the partition has "+noise:").
void PrintSimStart(const SimConfig& cfg, const DataSplits& data,
                   const std::optional<PartitionStats>& partition = std::nullopt);
void PrintDeployStart(const SimConfig& cfg);
// Returns the RSS per idle client that registering the population added (rss_after - rss_before,
// divided by the clients), which the report records.
double PrintSimJoin(const SimConfig& cfg, double join_seconds, uint64_t rss_before,
                    uint64_t rss_after);
void PrintSimRound(const SimRound& r, int64_t total);
// `extra` goes into the report's totals, with the peak RSS and the wall time per client-round. The
// report's error when it cannot be written (nothing is printed then).
Status FinishSimRun(const SimConfig& cfg, const SimResult& result, nlohmann::json extra);

}  // namespace tributary
