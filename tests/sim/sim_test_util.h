// Shared fixtures of the simulator tests: a small synthetic experiment that trains in well under a
// second, and a one-call run of it.
#pragma once

#include <memory>

#include "sim/sim_data.h"
#include "sim/simulator.h"

namespace tributary::testing {

// 20 clients on 2,000 synthetic 8x8 examples (Dirichlet 0.5), 5 per round, 4 rounds of 3 local
// epochs: enough for FedAvg to climb far above chance.
inline SimConfig SmallSyntheticConfig() {
  SimConfig c;
  c.dataset = "synthetic";
  c.train_examples = 2000;
  c.test_examples = 500;
  c.partition = "dirichlet:0.5";
  c.clients = 20;
  c.per_round = 5;
  c.rounds = 4;
  c.fit.epochs = 3;
  c.fit.lr = 0.1f;
  c.fit.momentum = 0.5f;
  c.fit.batch_size = 16;
  c.seed = 7;
  return c;
}

// Loads the data, builds the simulator and runs every round.
inline Result<SimResult> RunSimulation(const SimConfig& c) {
  TRIB_ASSIGN_OR_RETURN(SimData data, LoadSimData(c));
  TRIB_ASSIGN_OR_RETURN(std::unique_ptr<Simulator> sim, Simulator::Create(c, data));
  return sim->Run();
}

}  // namespace tributary::testing
