// AddToGroupTask: how the coordinator's tasks for the clients behind one aggregator become one
// GroupTask (docs/tier.md): the first member's task, with the model it shares, stands for all, its
// fit seed cleared; each member is listed with its own fit seed. CoordinatorService builds the
// tasks it sends this way, and the simulator's model of the tier (sim/sim_tier.h) the same.
#pragma once

#include <string>

#include "protocol/messages.h"

namespace tributary {

inline void AddToGroupTask(GroupTask& group, const std::string& client_id,
                           const TaskAssignment& task) {
  if (group.members.empty()) {
    group.task = task;  // shares the model
    group.task.fit.seed = 0;
  }
  group.members.push_back({client_id, task.fit.seed});
}

}  // namespace tributary
