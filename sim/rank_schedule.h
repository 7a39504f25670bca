// AssignToRanks: which rank trains each of an attempt's jobs, balancing their estimated cost.
//
// Longest processing time first (Graham, 1969): the jobs by cost, largest first (ties by client
// index), each to the rank with the least cost so far (ties to the lowest rank); a job pinned to
// rank 0 (a malicious client, whose attack state lives there; a job that never trains) goes there
// first. The makespan is within 4/3 of the best. The assignment is a pure function of its input:
// it changes where a job trains, never what it computes (sim/rank_work.h).
#pragma once

#include <cstdint>
#include <vector>

namespace tributary {

struct RankJobCost {
  uint64_t client = 0;
  double cost = 0.0;    // examples to train (examples x epochs, capped by max_steps)
  bool pinned = false;  // must train on rank 0
};

// The rank of each job, in the input's order. ranks >= 1.
std::vector<int> AssignToRanks(const std::vector<RankJobCost>& jobs, int ranks);

}  // namespace tributary
