#include "coordinator/run_engine_factory.h"

#include "coordinator/async_engine.h"
#include "coordinator/round_engine.h"

namespace tributary {

Result<std::unique_ptr<RunEngine>> MakeRunEngine(RoundConfig config,
                                                 std::unique_ptr<Strategy> strategy,
                                                 ModelWeights initial, uint64_t rounds_done,
                                                 uint64_t model_version, uint64_t dispatches,
                                                 RunEngine::Hooks hooks) {
  if (config.asynchronous()) {
    TRIB_ASSIGN_OR_RETURN(
        std::unique_ptr<AsyncEngine> e,
        AsyncEngine::Create(std::move(config), std::move(strategy), std::move(initial), rounds_done,
                            model_version, std::move(hooks), dispatches));
    return std::unique_ptr<RunEngine>(std::move(e));
  }
  TRIB_ASSIGN_OR_RETURN(
      std::unique_ptr<RoundEngine> e,
      RoundEngine::Create(std::move(config), std::move(strategy), std::move(initial), rounds_done,
                          model_version, std::move(hooks), dispatches));
  return std::unique_ptr<RunEngine>(std::move(e));
}

}  // namespace tributary
