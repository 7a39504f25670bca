// ClientState: a client's local state directory.
//
// Open() creates the directory (and its parents) when missing and takes an exclusive lock on
// <dir>/LOCK (core/lock_file.h: flock, released when the process ends however it ends, naming the
// holder's pid and host to whoever finds it held), so two clients never share one state dir — it
// will hold error-feedback residuals, which are per client. The small state file
// <dir>/client_state.json records who this client is and how far it got:
//   {"format": 1, "client_id": "edge-001", "last_round": 7, "last_model_version": 6,
//    "tasks_completed": 7}
// Save() replaces it atomically (core/file_util.h WriteFileAtomic), so after a crash it holds
// either the old or the new contents in full.
//
// The error-feedback residual of the client's codec lives next to it in <dir>/codec_state.bin
// (compression/codec_state.h format), also replaced atomically, so it survives a restart.
//
// SCAFFOLD's client control variate c_i lives in <dir>/scaffold_control.safetensors (one tensor,
// "control", of the model's parameter count; metadata: format, the model's layout fingerprint,
// the model version of the task that last updated it, and a SHA-256 as below), replaced atomically
// after every SCAFFOLD fit, so the client's drift correction survives a restart.
//
// The latest global model the client received lives in <dir>/global_model.safetensors, replaced
// atomically, so the app can predict with it after a restart (Client::predict). It is a plain
// safetensors file (any safetensors reader opens it) whose metadata holds the round, the model
// version, the layout fingerprint and a SHA-256 over the metadata, every tensor's name and shape,
// and the data (the scheme of coordinator/checkpoint.h): LoadGlobalModel reports a changed byte
// anywhere as Corruption naming the file.
//
// Errors: IoError when the directory cannot be created; FailedPrecondition when another process
// (or another ClientState in this one) holds the lock; Corruption naming the file when the state
// file does not parse or has fields of the wrong type. The lock is released by the destructor.
// Not thread-safe: use it from one thread at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "compression/codec.h"
#include "core/lock_file.h"
#include "tributary/model_weights.h"
#include "tributary/result.h"

namespace tributary {

// The global model as saved by ClientState::SaveGlobalModel.
struct SavedGlobalModel {
  ModelWeights weights;
  uint64_t round = 0;
  uint64_t model_version = 0;
};

// SCAFFOLD's control variate as ClientState::SaveControl saved it, and the model version of the
// task it was last updated in.
struct SavedControl {
  std::vector<float> values;
  uint64_t model_version = 0;
};

struct ClientStateData {
  std::string client_id;
  uint64_t last_round = 0;
  uint64_t last_model_version = 0;
  // Fit tasks whose update went out; with secure aggregation, counted when the masked input goes
  // (a masking that fails after the fit fails the task, and it is not counted).
  uint64_t tasks_completed = 0;

  friend bool operator==(const ClientStateData&, const ClientStateData&) = default;
};

class ClientState {
 public:
  static constexpr const char* kStateFileName = "client_state.json";
  static constexpr const char* kLockFileName = LockFile::kDirLockName;
  // The state file is tiny; anything larger is not ours.
  static constexpr uint64_t kMaxStateFileBytes = 1 << 20;

  static Result<std::unique_ptr<ClientState>> Open(const std::string& dir);
  ~ClientState();
  ClientState(const ClientState&) = delete;
  ClientState& operator=(const ClientState&) = delete;

  // What the state file held at Open() (defaults when there was none), or what was last saved.
  const ClientStateData& data() const { return data_; }
  Status Save(const ClientStateData& data);

  // The codec state last saved with SaveCodecState; an empty CodecState when there is none.
  // Corruption naming the file when it is malformed or holds more than max_floats values (checked
  // before reading them in).
  static constexpr const char* kCodecStateFileName = "codec_state.bin";
  Result<CodecState> LoadCodecState(size_t max_floats) const;
  Status SaveCodecState(const CodecState& state);

  // The latest global model. Save replaces the file atomically (IoError naming the file on
  // failure). Load checks the file against `layout` (the trainer's, e.g. get_parameters()) before
  // reading it in: NotFound when there is none; FailedPrecondition naming the file when it is
  // larger than a model of that layout can be, or holds a model of another layout (the app's model
  // changed); Corruption naming the file when it is not a well-formed safetensors file of this
  // format, or its checksum does not match (a byte changed since it was written).
  static constexpr const char* kGlobalModelFileName = "global_model.safetensors";
  Status SaveGlobalModel(const ModelWeights& weights, uint64_t round, uint64_t model_version);
  Result<SavedGlobalModel> LoadGlobalModel(const ModelWeights& layout) const;

  // SCAFFOLD's control variate c_i for a model of `layout`, updated in the task on
  // `model_version`. Save replaces the file atomically (IoError naming it). Load: NotFound when
  // there is none; FailedPrecondition naming the file when it belongs to another layout (checked
  // by size before anything is read in, then by fingerprint); Corruption naming the file when it
  // is malformed, fails its checksum or holds a value that is not finite.
  static constexpr const char* kControlFileName = "scaffold_control.safetensors";
  Status SaveControl(std::span<const float> control, const ModelWeights& layout,
                     uint64_t model_version);
  Result<SavedControl> LoadControl(const ModelWeights& layout) const;

  const std::string& dir() const { return dir_; }
  std::string state_file() const { return dir_ + "/" + kStateFileName; }
  std::string global_model_file() const { return dir_ + "/" + kGlobalModelFileName; }

 private:
  ClientState(std::string dir, std::unique_ptr<LockFile> lock)
      : dir_(std::move(dir)), lock_(std::move(lock)) {}
  Status Load();

  std::string dir_;
  std::unique_ptr<LockFile> lock_;
  ClientStateData data_;
};

}  // namespace tributary
