// MakeRunEngine: the RunEngine (run_engine.h) a RoundConfig asks for: RoundEngine for run.mode =
// "sync", AsyncEngine for "async". `rounds_done`, `model_version` and `dispatches` restore a
// checkpoint (a fresh run passes 0). InvalidArgument naming the key or the strategy when they
// cannot work together.
#pragma once

#include <memory>

#include "coordinator/run_engine.h"

namespace tributary {

Result<std::unique_ptr<RunEngine>> MakeRunEngine(RoundConfig config,
                                                 std::unique_ptr<Strategy> strategy,
                                                 ModelWeights initial, uint64_t rounds_done,
                                                 uint64_t model_version, uint64_t dispatches,
                                                 RunEngine::Hooks hooks);

}  // namespace tributary
