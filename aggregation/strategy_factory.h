// MakeStrategy: builds a Strategy from a spec string (the coordinator's `run.strategy` key, or a
// command-line flag). The grammar is in strategy_spec.h; the rules, keys, defaults and ranges:
//
//   fedavg(server_lr)                       server_lr > 0, default StrategyOptions::server_lr
//   fedprox(mu, server_lr)                  mu >= 0, required: FedAvg + clients' proximal term
//   fedavgm(server_lr, momentum)            momentum in [0, 1), default 0.9
//   fedadagrad(server_lr, beta1, tau)       server_lr default 0.1; beta1 in [0, 1), default 0.9;
//                                           tau > 0, default 1e-3
//   fedadam(server_lr, beta1, beta2, tau)   server_lr default 0.01; beta2 in [0, 1), default 0.99
//   fedyogi(server_lr, beta1, beta2, tau)   as fedadam
//   fednova(server_lr)                      server_lr default StrategyOptions::server_lr;
//                                           normalized by StrategyOptions::local (fednova.h)
//   scaffold(server_lr, clients)            server_lr default StrategyOptions::server_lr;
//                                           clients: integer >= 0, default 0 (the round's
//                                           updates): N of c += sum dc / N (scaffold.h)
//   median(max_buffer_mb, threads)
//   trimmed_mean(beta, ...)                 beta in [0, 0.5), default 0.1
//   krum(f, ...)                            f: integer >= 0, required
//   multikrum(f, m, ...)                    m: integer >= 0, default 0 (meaning n - f)
//   bulyan(f, ...)
//   clip(norm)+<rule>                       norm > 0, required: L2 norm clipping before the rule
// The robust rules (median .. bulyan) also take max_buffer_mb (integer in [1, 4194304], default
// 2048: the bound on their dense update buffer) and threads (integer in [0, 256], default 0: one
// per core). See docs/strategies.md.
//
// Every error is InvalidArgument quoting the spec and naming the unknown rule (listing the known
// ones), the unknown key (listing the allowed ones), or the key whose value is out of range
// (stating the range).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "aggregation/fednova.h"
#include "aggregation/strategy.h"

namespace tributary {

struct StrategyOptions {
  // The default server_lr of fedavg, fedprox and fedavgm when the spec does not set one (the
  // coordinator's `run.server_lr`). The adaptive optimizers have their own defaults.
  float server_lr = 1.0f;
  // The clients' local training, which fednova normalizes by (the run's fit config).
  LocalSteps local;
};

Result<std::unique_ptr<Strategy>> MakeStrategy(std::string_view spec,
                                               const StrategyOptions& options = {});
// The rule names MakeStrategy knows (not including the "clip" stage).
std::vector<std::string> StrategyNames();

// Checks at start-up that `strategy` can aggregate rounds of `clients_per_round` updates (e.g.
// Krum needs n > 2f + 2); InvalidArgument naming the requirement otherwise.
Status ValidateStrategyFor(const Strategy& strategy, int64_t clients_per_round);

}  // namespace tributary
