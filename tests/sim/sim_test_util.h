// Shared fixtures of the simulator tests: a small synthetic experiment that trains in well under a
// second, and a one-call run of it.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "sim/simulator.h"
#include "tests/core/sanitizers.h"
#include "train/data/data_config.h"

namespace tributary::testing {

// In the ThreadSanitizer build (scripts/test's concurrency pass; kUnderThreadSanitizer in
// tests/core/sanitizers.h) a simulation runs about 40x slower: the heaviest simulator tests run
// fewer rounds or layouts there (each says which), asserting the same things; the optimized build
// runs them whole.
//
// Under ThreadSanitizer, skips a simulation whose threads are those of a test that runs there
// (`kept` names it): what the skipped one adds (resumes, dropouts, retries, over-selection,
// codecs, attacks, DP's noise, deadlines) runs on the simulator's one coordinator thread, and the
// optimized build runs it whole. The first 17 took about 280 s of the TSan pass's 940 s of tests
// (2026-12-06; docs/building.md), the six skipped since about 50 s (that pass's ctest cost data),
// the three of 2026-12-07 (two split, one rank refusal) about 14 s.
#define TRIB_SKIP_UNDER_TSAN(kept) \
  TRIB_SKIP_UNDER_TSAN_BECAUSE("its threads are those of " << (kept) << ", which runs there")

// The thread counts a determinism test runs: every one of `counts` in the optimized build, which
// compares their bits; under ThreadSanitizer only the last, the most threads. TSan needs the
// threads, not the comparison, and a one-thread simulation costs as much there as the others
// (these tests took about a third of the TSan pass's test time, 2026-12-06).
inline std::vector<int> ThreadCountsToCompare(std::vector<int> counts) {
  if (kUnderThreadSanitizer) return {counts.back()};
  return counts;
}

// 20 clients on 2,000 synthetic 8x8 examples (Dirichlet 0.5), 5 per round, 4 rounds of 3 local
// epochs: enough for FedAvg to climb far above chance.
inline SimConfig SmallSyntheticConfig() {
  SimConfig c;
  c.data.dataset = "synthetic";
  c.data.train_examples = 2000;
  c.data.test_examples = 500;
  c.data.partition = "dirichlet:0.5";
  c.data.num_clients = 20;
  c.run.round.clients_per_round = 5;
  c.run.round.rounds = 4;
  c.run.round.fit.epochs = 3;
  c.run.round.fit.lr = 0.1f;
  c.run.round.fit.momentum = 0.5f;
  c.run.round.fit.batch_size = 16;
  c.run.round.seed = 7;
  c.data.seed = 7;
  return c;
}

// Loads the data, builds the simulator and runs every round.
inline Result<SimResult> RunSimulation(const SimConfig& c) {
  TRIB_ASSIGN_OR_RETURN(DataSplits data, LoadDataSplits(c.data, true, true));
  TRIB_ASSIGN_OR_RETURN(std::unique_ptr<Simulator> sim, Simulator::Create(c, data));
  return sim->Run();
}

// RunSimulation for a run that must succeed: a failure is reported to the test, and the result
// is then empty.
inline SimResult RunSimulationOrFail(const SimConfig& c) {
  Result<SimResult> r = RunSimulation(c);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? std::move(*r) : SimResult{};
}

}  // namespace tributary::testing
