// Checkpoint: the coordinator's durable state after a round, written atomically and verified when
// read back.
//
// One safetensors file per round, <dir>/checkpoint.safetensors, holding the global model (tensors
// prefixed "model."), the strategy's state (prefixed "strategy."), and metadata: rounds completed,
// model version, run seed, strategy name, the model's layout fingerprint, the run's unique id
// (run_uid: which run wrote it), differential privacy's accountant when the run has one, and a
// SHA-256 over all of
// it ("sha256": the metadata, every tensor's name and shape, and the data). Selection and
// per-client training seeds are derived from (seed, round, attempt), so no RNG stream state is
// needed to resume exactly. The clients' cool-downs (ClientRegistry::RecordMiss) are not saved: a
// resumed coordinator's clients reconnect anew, and it starts with clean records.
//
// The newest `keep` checkpoints are kept: checkpoint.safetensors, checkpoint.1.safetensors (the
// round before), ... . A save rotates them by renames, then replaces the newest with write-temp,
// fsync, rename, fsync-dir (WriteFileAtomic) through an Env: after a crash at any write point the
// newest readable file holds the previous round or the new one, never a mix
// (tests/coordinator/checkpoint_test.cc crashes at every one).
//
// Loading verifies a file before trusting it: the safetensors structure (bounded parser), the
// format, the checksum (a changed byte anywhere, data or metadata, fails it), the layout
// fingerprint, and that every weight and every value of the strategy's state is finite. A file
// that fails is skipped for the next older one, and the result says which files were skipped and
// why; an error lists every file that failed when none is good.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/env.h"
#include "tributary/model_weights.h"
#include "tributary/result.h"

namespace tributary {

struct CheckpointState {
  uint64_t rounds_done = 0;
  uint64_t model_version = 0;
  uint64_t seed = 0;
  std::string strategy;
  std::string model_name;
  ModelWeights model;
  ModelWeights strategy_state;  // may be empty
  // Differential privacy's state (DpAggregator::SaveState: the accountant and the clip norm), in
  // the metadata under "privacy"; empty for a run without it.
  std::string privacy;
  // The run that wrote it (RunDriver::run_uid), in the metadata under "run_uid"; empty in the
  // checkpoints of earlier versions, which did not record it.
  std::string run_uid;

  // The engine's dispatch counter (RunEngine::dispatches: what keys an asynchronous run's fit
  // seeds), in the metadata under "dispatches"; 0 in the checkpoints of earlier versions.
  uint64_t dispatches = 0;
  // "sync" or "async" (run.mode), in the metadata under "mode"; "sync" for earlier versions'.
  std::string mode = "sync";

  // Filled by LoadCheckpoint: the file read, and "<path>: <reason>" for each newer one skipped.
  std::string path;
  std::vector<std::string> skipped;
};

// How many checkpoints SaveCheckpoint keeps by default.
inline constexpr int kDefaultKeepCheckpoints = 3;

// The newest checkpoint's path (generation 0), or the one `generation` rounds older.
std::string CheckpointPath(const std::string& dir, int generation = 0);
// The largest checkpoint file LoadCheckpoint reads.
inline constexpr uint64_t kMaxCheckpointBytes = uint64_t{1} << 40;
// Checkpoints holding at least this many bytes of tensors report the progress of their saving
// (core/progress.h): past a second, a line per second with the bytes written, and a closing one
// with the size and the seconds the whole save took.
inline constexpr uint64_t kCheckpointProgressBytes = uint64_t{64} << 20;
// Creates `dir` if needed, keeps the newest keep - 1 older checkpoints (keep >= 1) and writes
// `state` as the newest, atomically.
Status SaveCheckpoint(Env* env, const std::string& dir, const CheckpointState& state,
                      int keep = kDefaultKeepCheckpoints);
// What a driver checks of a good checkpoint besides what LoadCheckpoint does (the simulator: its
// own state file for the same round); an error skips the file like damage does, naming why,
// except InvalidArgument (the run's settings are not the file's), which LoadCheckpoint returns at
// once: an older file of the same run would be refused alike.
using CheckpointCheck = std::function<Status(const CheckpointState&)>;
// The newest good checkpoint among the `keep` newest files (and, with `check`, one it accepts).
// NotFound when there is none at all; Corruption listing each file and what failed when none is
// good; `check`'s InvalidArgument as it is.
Result<CheckpointState> LoadCheckpoint(Env* env, const std::string& dir,
                                       int keep = kDefaultKeepCheckpoints,
                                       const CheckpointCheck& check = {});
// Reads and verifies one checkpoint file. Corruption naming the file and what failed.
Result<CheckpointState> LoadCheckpointFile(Env* env, const std::string& path);

}  // namespace tributary
