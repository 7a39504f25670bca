// ControlStore: SCAFFOLD's client control variates c_i of every virtual client that has trained,
// in memory (rank 0 keeps them all and ships each with its client's job, as it does residuals).
//
// A real client keeps its c_i in its state dir (ClientState); the simulator keeps them here and
// hands each selected client its own through TaskExecutor::set_control. Unlike a residual, c_i
// never expires and is kept whole: SCAFFOLD's correction is exact or not SCAFFOLD. Memory is one
// float per parameter per client that has trained: SCAFFOLD is a cross-silo method (the paper and
// NIID-Bench use tens to hundreds of clients); docs/simulation.md says so.
//
// Thread-safe: pool threads Get and Put different clients concurrently.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <vector>

#include "tributary/result.h"

namespace tributary {

class ControlStore {
 public:
  // The client's c_i, or empty (zeros) when it has none yet.
  std::vector<float> Get(uint64_t client) const;
  // Stores the c_i the client's executor ended its fit with (empty: nothing is stored).
  void Put(uint64_t client, std::vector<float> control);

  size_t size() const;
  // Every client's c_i (a checkpoint's copy: sim/sim_checkpoint.h).
  std::map<uint64_t, std::vector<float>> Snapshot() const;
  // Replaces every entry with `entries`. InvalidArgument naming the client when an entry is not
  // `model_size` finite values; then nothing changes.
  Status Restore(std::map<uint64_t, std::vector<float>> entries, uint64_t model_size);

 private:
  mutable std::mutex mu_;
  std::map<uint64_t, std::vector<float>> entries_;  // GUARDED_BY(mu_)
};

}  // namespace tributary
