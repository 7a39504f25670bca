// MakeEngine: the Engine (engine.h) a RoundConfig asks for: RoundEngine for run.mode = "sync",
// AsyncEngine for "async". `rounds_done`, `model_version` and `dispatches` restore a checkpoint (a
// fresh run passes 0). InvalidArgument naming the key or the strategy when they cannot work
// together.
#pragma once

#include <memory>

#include "coordinator/engine.h"

namespace tributary {

Result<std::unique_ptr<Engine>> MakeEngine(RoundConfig config, std::unique_ptr<Strategy> strategy,
                                           ModelWeights initial, uint64_t rounds_done,
                                           uint64_t model_version, uint64_t dispatches,
                                           Engine::Hooks hooks);

}  // namespace tributary
