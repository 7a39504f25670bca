// Deployment mode of tributary-sim: the same experiment with real processes over mutual TLS.
//
// RunDeployment makes a CA, a server certificate for localhost/127.0.0.1 and one client
// certificate per virtual client (ids "client-<i>", as in the in-process run), writes a
// coordinator config equivalent to the SimConfig, starts the real tributary-coordinator on a free
// loopback port and `clients` real tributary-client processes (each loading its own share of the
// data with the same partition and seed), waits for the run to end, and turns the coordinator's
// event log into the same SimResult the in-process simulator returns.
//
// With every client selected each round (per_round == clients), no heterogeneity and a deadline
// that is not hit, the deployment trains bitwise the same models as the in-process run, so the
// accuracy sequences agree exactly (tests/sim checks this). Deployment bytes are the update and
// model payload bytes the coordinator logs (not framed); times are real.
//
// Requirements: dataset "fashion-mnist", a partition other than replacement:N, trainer "native".
// Binaries: the given paths, else next to the running executable (an installed bin/), else in the
// build tree's coordinator/ and client/ folders beside it.
#pragma once

#include <string>

#include "sim/simulator.h"

namespace tributary {

struct DeployOptions {
  std::string coordinator_bin;  // path of tributary-coordinator; empty: found as described above
  std::string client_bin;       // path of tributary-client; likewise
  std::string work_dir;         // pki/, logs/, coordinator output; default <report_dir>/deploy
  double timeout_s = 0;         // whole run; 0: rounds * (round_timeout_s + 60)
};

// InvalidArgument naming the key for configs deployment cannot run; Unavailable naming the
// process and its log when a process fails.
Result<SimResult> RunDeployment(const SimConfig& config, const DeployOptions& options,
                                const std::function<void(const SimRound&)>& on_round = {});

}  // namespace tributary
