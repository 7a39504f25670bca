#include "sim/rank_schedule.h"

#include <algorithm>
#include <numeric>

namespace tributary {

std::vector<int> AssignToRanks(const std::vector<RankJobCost>& jobs, int ranks) {
  std::vector<int> out(jobs.size(), 0);
  if (ranks <= 1) return out;
  std::vector<double> load(static_cast<size_t>(ranks), 0.0);
  std::vector<size_t> order(jobs.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (jobs[a].pinned != jobs[b].pinned) return jobs[a].pinned;
    if (jobs[a].cost != jobs[b].cost) return jobs[a].cost > jobs[b].cost;
    return jobs[a].client < jobs[b].client;
  });
  for (size_t i : order) {
    int r = 0;
    if (!jobs[i].pinned)
      r = static_cast<int>(std::min_element(load.begin(), load.end()) - load.begin());
    out[i] = r;
    load[static_cast<size_t>(r)] += jobs[i].cost;
  }
  return out;
}

}  // namespace tributary
