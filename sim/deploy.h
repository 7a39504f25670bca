// Deployment mode of tributary-sim: the same experiment with real processes over mutual TLS.
//
// RunDeployment makes a CA, a server certificate for localhost/127.0.0.1 and one client
// certificate per virtual client (ids "client-<i>", as in the in-process run). It hands the
// simulation's settings to the real processes through their own configuration schemas: the
// coordinator gets the very RunConfig the in-process simulator runs (SimConfig::EffectiveRun) and
// the data keys (for server-side evaluation), each client the data keys and its index; each file
// is the schema's ValuesToml(), so no setting is translated by hand. It starts the real
// tributary-coordinator on a free loopback port and data.num_clients real tributary-client
// processes, waits for the run to end, and reads the coordinator's event log (the RunEvents'
// JSON form) back into the same SimResult the in-process simulator returns, the final model's
// hash included.
//
// Every simulator key either takes effect in deployment or is refused with an error naming it:
// the in-process-only settings (sim.threads, sim.trainer other than native, hetero.*, residual.*,
// attack.*, the replacement:N partition) have no meaning with real processes on real devices.
//
// With no heterogeneity and a deadline that is not hit, the deployment trains bitwise the same
// models as the in-process run, so accuracies and the final model hash agree exactly (tests/sim
// checks this, with a compressed download and error-feedback residuals too). Deployment bytes are
// the update and model payload bytes the coordinator counts (not framed); times are real.
//
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

// InvalidArgument naming the key for settings deployment cannot honour.
Status CheckDeployable(const SimConfig& config);

// CheckDeployable's error, or Unavailable naming the process and its log when a process fails.
Result<SimResult> RunDeployment(const SimConfig& config, const DeployOptions& options,
                                const std::function<void(const SimRound&)>& on_round = {});

}  // namespace tributary
