// FitConfig's configuration keys and their validation, shared by every program that sets local
// training (the coordinator sends it to clients; the simulator runs it in-process).
//
//   fit.epochs, fit.batch_size, fit.lr, fit.momentum, fit.weight_decay, fit.proximal_mu,
//   fit.max_steps, fit.optimizer, fit.beta1, fit.beta2, fit.eps, fit.optimizer_state
//
// fit.seed is not a key: the round engine derives it per client and round.
#pragma once

#include "core/config_schema.h"
#include "tributary/trainer.h"

namespace tributary {

void BindFitConfig(ConfigSchema& schema, FitConfig* fit);
// InvalidArgument naming the key and the range when a value is out of range.
Status ValidateFitConfig(const FitConfig& fit);

}  // namespace tributary
