// SimCheckpoint: what a simulation keeps beside the coordinator's checkpoint
// (coordinator/checkpoint.h) so that `tributary-sim --resume` goes on bitwise as if it had never
// stopped, in one process or on any number of ranks.
//
// The coordinator's checkpoint holds the model, the strategy's state, the round counter, the
// dispatch counter and the accountant; selection, fit seeds and device draws are derived from
// (seed, round, attempt, client). What only the simulation knows is here:
//   - the simulated clock at the end of the round's last attempt (the next attempt starts there);
//   - the clients' cool-downs (ClientRegistry::cooldowns: who is left out of the next selections);
//   - every client's error-feedback residual (ResidualStore: rank 0 keeps them all);
//   - every client's SCAFFOLD control variate (ControlStore);
//   - the closed rounds' records, so that report.json and report.html cover the whole run;
//   - the run's settings (ResumeSettings), so that a resume with other settings, which would go
//     on silently different, is refused naming the keys that changed.
// The state after round R is <checkpoint_dir>/sim-state.R.bin, written after the attempt that
// closed round R ends (write-temp, fsync, rename: WriteFileAtomic), and bound to its checkpoint by
// the run's uid and R. The files of the newest `keep` rounds are kept (each file lists the rounds
// whose files it kept, so no directory listing is needed). On resume a checkpoint whose state file
// is missing or bad (a crash between the two writes) is skipped for the next older one.
//
// The format: magic "TRS6", the fields below in host byte order (sim/byte_record.h), then the
// SHA-256 of everything before it as 64 hex digits. The decoder checks every length against the
// bytes left before allocating, every value's range, and the checksum first.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "coordinator/client_registry.h"
#include "core/env.h"
#include "sim/residual_store.h"
#include "sim/sim_config.h"
#include "sim/sim_result.h"

namespace tributary {

struct SimCheckpoint {
  std::string run_uid;
  std::string settings;  // ResumeSettings of the run that wrote it
  uint64_t rounds_done = 0;
  double sim_clock = 0.0;  // simulated seconds
  std::map<std::string, Cooldown, std::less<>> cooldowns;
  std::map<uint64_t, ResidualStore::Entry> residuals;
  std::map<uint64_t, std::vector<float>> controls;  // SCAFFOLD's c_i (ControlStore)
  std::vector<SimRound> rounds;
  std::vector<uint64_t> kept;  // earlier rounds whose state files are kept, oldest first
};

// The largest state file LoadSimCheckpoint reads.
inline constexpr uint64_t kMaxSimCheckpointBytes = uint64_t{1} << 40;

std::string SimCheckpointPath(const std::string& dir, uint64_t rounds_done);
// Every key of the configuration (SimConfigJson) but those that cannot change the model: where
// outputs go (output.*, sim.report_dir), log_level, sim.threads (bitwise the same), run.rounds (a
// resume may run longer), when to stop early (sim.target_accuracy, sim.stop_at_target) and
// server-side evaluation (eval.*); as JSON text.
std::string ResumeSettings(const SimConfig& config);
// "" when `saved` and `now` (ResumeSettings texts) agree; else the keys that differ, "key: was
// X, now Y", joined by "; ".
std::string ResumeSettingsDifference(const std::string& saved, const std::string& now);
std::string EncodeSimCheckpoint(const SimCheckpoint& state);
// Corruption saying what is malformed (a truncation, a bad checksum, a value out of range).
Result<SimCheckpoint> DecodeSimCheckpoint(const std::string& bytes);
// Writes `state` atomically as round state.rounds_done's file, then removes the files of rounds
// beyond the newest `keep` (state.kept is updated to the rounds still kept before this one).
Status SaveSimCheckpoint(Env* env, const std::string& dir, SimCheckpoint& state, int keep);
// Round `rounds_done`'s state, checked to belong to run `run_uid`. NotFound when the file is
// missing; Corruption naming the file and what is wrong.
Result<SimCheckpoint> LoadSimCheckpoint(Env* env, const std::string& dir, uint64_t rounds_done,
                                        const std::string& run_uid);

}  // namespace tributary
