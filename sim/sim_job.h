// Simulator::Job: one selected client's task, filled in on a pool thread (the simulator's own
// files only: simulator.cc, simulator_async.cc).
#pragma once

#include <memory>
#include <optional>

#include "client/secagg_task.h"
#include "sim/simulator.h"

namespace tributary {

// One selected client's task in an attempt, filled in on a pool thread.
struct Simulator::Job {
  uint64_t index = 0;
  const RunEngine::Outgoing* out = nullptr;
  // An asynchronous run's task number (the order the engine sent it in): what its device draws
  // are keyed by (DeviceModel::TimeTask); none in a synchronous run (keyed by round and attempt).
  std::optional<uint64_t> task;
  TaskTiming timing;
  uint64_t bytes_up = 0;
  std::optional<UpdateSubmission> submission;
  // With secure aggregation: the client's part in the attempt (null: it never started one), and
  // the masked input it sends instead of the update.
  std::shared_ptr<SecAggTask> secagg;
  std::optional<Message> masked;
  double secagg_seconds = 0.0;  // the masking's compute
  bool left_early = false;      // unreachable: told to the engine before the key phases
  bool abandoned = false;       // asynchronous: its cohort's session ended first; sends nothing
  Status error;
  // Trained for rank 0 by another rank (simulator_ranks.cc): the client's error-feedback state
  // and SCAFFOLD control variate come in and go out here instead of the ResidualStore and the
  // ControlStore, and the update stays in wire form.
  bool remote = false;
  std::optional<CodecState> state;
  std::vector<float> control;
  std::vector<uint8_t> wire;
  // Split learning: the batches this client sent the server part, and their framed bytes.
  uint64_t split_batches = 0;
  uint64_t split_bytes_up = 0;
  uint64_t split_bytes_down = 0;
};

}  // namespace tributary
