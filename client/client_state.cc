#include "client/client_state.h"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "compression/codec_state.h"
#include "core/file_util.h"
#include "core/lock_file.h"
#include "core/model_layout.h"
#include "core/safetensors_metadata.h"
#include "crypto/model_checksum.h"
#include "tributary/safetensors.h"

namespace tributary {
namespace {

constexpr int kStateFormat = 1;

Result<uint64_t> GetCount(const nlohmann::json& j, const char* key, const std::string& file) {
  if (!j.contains(key)) return uint64_t{0};
  const nlohmann::json& v = j.at(key);
  if (!v.is_number_unsigned())
    return Status::Corruption(file + ": \"" + key + "\" must be a non-negative integer");
  return v.get<uint64_t>();
}

constexpr const char* kGlobalModelFormat = "tributary-global-model-1";
constexpr const char* kControlFormat = "tributary-scaffold-control-1";
constexpr const char* kChecksumKey = "sha256";

// The file's SHA-256 (crypto/model_checksum.h; coordinator/checkpoint.cc checks its files the same
// way).
std::string GlobalModelChecksum(const SafetensorsMetadata& meta, const ModelWeights& w) {
  return ModelChecksum(kGlobalModelFormat, meta, kChecksumKey, w);
}

// The largest file SaveGlobalModel writes for a model of `layout`: the 8-byte header length, the
// JSON header (per tensor: its name, escaped at worst 6 bytes per byte, its shape and offsets; the
// metadata fits in the fixed part), and the data.
uint64_t MaxGlobalModelFileBytes(const ModelWeights& layout) {
  uint64_t header = 4096;
  for (const TensorInfo& t : layout.tensors())
    header += 6 * uint64_t{t.name.size()} + 128 + 21 * uint64_t{t.shape.size()};
  return 8 + header + layout.size_bytes();
}

// The safetensors file `file` as ClientState writes it: at most max_bytes (checked before it is
// read in; larger is FailedPrecondition: "<file> is larger than <larger_than> can be (N bytes):
// ..."), its metadata's format `format` (naming the file as not `what` otherwise) and its
// checksum verified. NotFound when there is none.
Result<ModelWeights> ReadCheckedSafetensors(const std::string& file, uint64_t max_bytes,
                                            const char* format, std::string_view what,
                                            std::string_view larger_than,
                                            SafetensorsMetadata* meta) {
  Result<std::vector<uint8_t>> bytes = ReadFileBytes(file, max_bytes);
  if (!bytes.ok()) {
    if (bytes.status().code() == StatusCode::kOutOfRange)
      return Status::FailedPrecondition(
          fmt::format("{} is larger than {} can be ({} bytes): it holds another model, or was "
                      "damaged",
                      file, larger_than, max_bytes));
    return bytes.status();  // NotFound when nothing was saved yet
  }
  Result<ModelWeights> parsed = ParseSafetensors(*bytes, meta);
  if (!parsed.ok()) return parsed.status().WithContext(file);
  const std::string got = (*meta)["format"];
  if (got != format)
    return Status::Corruption(
        fmt::format("{}: not {} (format '{}', expected '{}')", file, what, got, format));
  TRIB_RETURN_IF_ERROR(VerifyModelChecksum(file, format, *meta, kChecksumKey, *parsed));
  return parsed;
}

}  // namespace

Result<std::unique_ptr<ClientState>> ClientState::Open(const std::string& dir) {
  if (dir.empty()) return Status::InvalidArgument("state dir: the path is empty");
  // A LockFile is its own open file description, so a second Open() in this process is refused
  // just like another process.
  TRIB_ASSIGN_OR_RETURN(std::unique_ptr<LockFile> lock,
                        LockFile::AcquireDir(dir, {"state dir " + dir, "another client",
                                                   "give each client its own state dir"}));
  std::unique_ptr<ClientState> state(new ClientState(dir, std::move(lock)));
  TRIB_RETURN_IF_ERROR(state->Load());
  return state;
}

ClientState::~ClientState() = default;  // the LockFile releases the lock

Status ClientState::Load() {
  const std::string file = state_file();
  Result<std::vector<uint8_t>> bytes = ReadFileBytes(file, kMaxStateFileBytes);
  if (!bytes.ok()) {
    if (bytes.status().code() == StatusCode::kNotFound) return Status::Ok();  // a fresh dir
    return bytes.status();
  }
  nlohmann::json j = nlohmann::json::parse(bytes->begin(), bytes->end(), nullptr,
                                           /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object())
    return Status::Corruption(file + " is not a JSON object; delete it to start afresh");
  if (!j.contains("format") || !j["format"].is_number_integer() ||
      j["format"].get<int64_t>() != kStateFormat)
    return Status::Corruption(file + ": \"format\" must be " + std::to_string(kStateFormat));
  ClientStateData d;
  if (j.contains("client_id")) {
    if (!j["client_id"].is_string())
      return Status::Corruption(file + ": \"client_id\" must be a string");
    d.client_id = j["client_id"].get<std::string>();
  }
  TRIB_ASSIGN_OR_RETURN(d.last_round, GetCount(j, "last_round", file));
  TRIB_ASSIGN_OR_RETURN(d.last_model_version, GetCount(j, "last_model_version", file));
  TRIB_ASSIGN_OR_RETURN(d.tasks_completed, GetCount(j, "tasks_completed", file));
  data_ = std::move(d);
  return Status::Ok();
}

Status ClientState::Save(const ClientStateData& data) {
  nlohmann::json j = {{"format", kStateFormat},
                      {"client_id", data.client_id},
                      {"last_round", data.last_round},
                      {"last_model_version", data.last_model_version},
                      {"tasks_completed", data.tasks_completed}};
  const std::string text = j.dump(2) + "\n";
  TRIB_RETURN_IF_ERROR(
      WriteFileAtomic(state_file(), {reinterpret_cast<const uint8_t*>(text.data()), text.size()}));
  data_ = data;
  return Status::Ok();
}

Result<CodecState> ClientState::LoadCodecState(size_t max_floats) const {
  const std::string file = dir_ + "/" + kCodecStateFileName;
  // The file is a small header plus 4 bytes per value; the cap keeps a stray huge file out.
  Result<std::vector<uint8_t>> bytes = ReadFileBytes(file, 4096 + uint64_t{max_floats} * 4);
  if (!bytes.ok()) {
    if (bytes.status().code() == StatusCode::kNotFound) return CodecState{};
    return bytes.status();
  }
  Result<CodecState> state = ParseCodecState(*bytes, max_floats);
  if (!state.ok()) return Status::Corruption(file + ": " + state.status().message());
  return state;
}

Status ClientState::SaveCodecState(const CodecState& state) {
  return WriteFileAtomic(dir_ + "/" + kCodecStateFileName, SerializeCodecState(state));
}

Status ClientState::SaveControl(std::span<const float> control, const ModelWeights& layout,
                                uint64_t model_version) {
  const std::string file = dir_ + "/" + kControlFileName;
  if (control.size() != layout.size())
    return Status::InvalidArgument(
        fmt::format("{}: a control variate of {} values for a model of {}", file, control.size(),
                    layout.size()));
  TRIB_ASSIGN_OR_RETURN(
      ModelWeights w, ModelWeights::Create({{"control", {static_cast<int64_t>(control.size())}}}));
  std::copy(control.begin(), control.end(), w.data().begin());
  SafetensorsMetadata meta{{"format", kControlFormat},
                           {"model_fingerprint", std::to_string(layout.fingerprint())},
                           {"model_version", std::to_string(model_version)}};
  meta[kChecksumKey] = ModelChecksum(kControlFormat, meta, kChecksumKey, w);
  return WriteFileAtomic(file, SerializeSafetensors(w, meta))
      .WithContext("cannot save SCAFFOLD's control variate to " + file);
}

Result<SavedControl> ClientState::LoadControl(const ModelWeights& layout) const {
  const std::string file = dir_ + "/" + kControlFileName;
  SafetensorsMetadata meta;
  TRIB_ASSIGN_OR_RETURN(
      ModelWeights parsed,
      ReadCheckedSafetensors(
          file, 8 + 4096 + layout.size_bytes(), kControlFormat, "a SCAFFOLD control variate",
          fmt::format("a control variate of the trainer's {} parameters", layout.size()), &meta));
  TRIB_ASSIGN_OR_RETURN(const uint64_t fingerprint, MetadataU64(meta, "model_fingerprint", file));
  if (fingerprint != layout.fingerprint() || parsed.size() != layout.size())
    return Status::FailedPrecondition(
        fmt::format("{} belongs to a model of layout {:016x} with {} parameters; the trainer's has "
                    "layout {:016x} with {}",
                    file, fingerprint, parsed.size(), layout.fingerprint(), layout.size()));
  SavedControl out;
  TRIB_ASSIGN_OR_RETURN(out.model_version, MetadataU64(meta, "model_version", file));
  out.values.assign(parsed.data().begin(), parsed.data().end());
  for (float v : out.values)
    if (!std::isfinite(v)) return Status::Corruption(file + ": a value is not finite");
  return out;
}

Status ClientState::SaveGlobalModel(const ModelWeights& weights, uint64_t round,
                                    uint64_t model_version) {
  SafetensorsMetadata meta{{"format", kGlobalModelFormat},
                           {"round", std::to_string(round)},
                           {"model_version", std::to_string(model_version)},
                           {"model_fingerprint", std::to_string(weights.fingerprint())}};
  meta[kChecksumKey] = GlobalModelChecksum(meta, weights);
  const std::string file = global_model_file();
  return WriteFileAtomic(file, SerializeSafetensors(weights, meta))
      .WithContext("cannot save the global model to " + file);
}

Result<SavedGlobalModel> ClientState::LoadGlobalModel(const ModelWeights& layout) const {
  const std::string file = global_model_file();
  SafetensorsMetadata meta;
  // Checked before anything is read in or allocated: a model of this layout cannot be larger.
  TRIB_ASSIGN_OR_RETURN(
      ModelWeights parsed,
      ReadCheckedSafetensors(
          file, MaxGlobalModelFileBytes(layout), kGlobalModelFormat, "a saved global model",
          fmt::format("a saved model of the trainer's layout ({} floats)", layout.size()), &meta));
  SavedGlobalModel out;
  TRIB_ASSIGN_OR_RETURN(out.round, MetadataU64(meta, "round", file));
  TRIB_ASSIGN_OR_RETURN(out.model_version, MetadataU64(meta, "model_version", file));
  TRIB_ASSIGN_OR_RETURN(const uint64_t fingerprint, MetadataU64(meta, "model_fingerprint", file));
  if (fingerprint != parsed.fingerprint())
    return Status::Corruption(file + ": the model's layout fingerprint does not match its tensors");
  if (!parsed.same_layout(layout))
    return Status::FailedPrecondition(
        fmt::format("{} holds a model of another layout: {}", file,
                    LayoutDifference(LayoutOf(layout), "the trainer's model", LayoutOf(parsed),
                                     "the saved one")));
  out.weights = std::move(parsed);
  return out;
}

}  // namespace tributary
