// RunSimulation: tributary-sim's in-process run, start to end, as its main runs it.
//
// Sets glibc's allocator to keep large buffers in the heap (a process-wide setting; it makes the
// many client-rounds' model-sized allocations cheap), loads the data (data.*: the training split
// for the clients, the test split for server-side evaluation), builds the Simulator with the final
// model in report_dir, lets the caller attach the run's observers (`attach`, called once before the
// run starts; tributary-sim gives it the standard ones, coordinator/run_observers.h), prints the
// start-up line, registers the population (measuring the RSS it adds), runs every round (`on_round`
// sees each as it closes) and returns the result. `extra` receives the in-process totals the report
// records besides the rounds' (mode, RSS and population bytes per client, the registry's join
// seconds).
//
// With `ranks` (a distributed simulation, sim/rank_link.h) this is rank 0's part: the jobs train
// over the ranks, each of which runs ServeSimulation with the same config.
//
// Errors: the data's, the config's (Simulator::Create), attach's, or the run's. The observers that
// attach added must outlive this call (the Simulator is destroyed before it returns).
#pragma once

#include <functional>
#include <nlohmann/json.hpp>

#include "sim/sim_config.h"
#include "sim/sim_result.h"
#include "sim/simulator.h"

namespace tributary {

Result<SimResult> RunSimulation(const SimConfig& cfg,
                                const std::function<Status(Simulator&)>& attach,
                                const std::function<void(const SimRound&)>& on_round,
                                nlohmann::json* extra, RankLink* ranks = nullptr);

// Another rank's part of a distributed simulation: loads the same data, builds the same simulator
// (writing nothing: no report, no final model, no checkpoint; it never resumes, rank 0 does) and
// serves rank 0 until it says stop.
Status ServeSimulation(const SimConfig& cfg, RankLink* ranks);

}  // namespace tributary
