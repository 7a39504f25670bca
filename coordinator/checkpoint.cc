#include "coordinator/checkpoint.h"

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <optional>

#include "core/file_util.h"
#include "core/non_finite.h"
#include "core/progress.h"
#include "core/safetensors_metadata.h"
#include "crypto/model_checksum.h"
#include "tributary/safetensors.h"

namespace tributary {
namespace {

constexpr const char* kModelPrefix = "model.";
constexpr const char* kStrategyPrefix = "strategy.";
constexpr const char* kFormat = "tributary-checkpoint-2";
constexpr const char* kFormatV1 = "tributary-checkpoint-1";  // wave 1: no checksum
constexpr const char* kChecksumKey = "sha256";

// The checkpoint's SHA-256 (crypto/model_checksum.h).
std::string Checksum(const SafetensorsMetadata& meta, const ModelWeights& all) {
  return ModelChecksum(kFormat, meta, kChecksumKey, all);
}

// Copies the tensors of `all` whose names start with `prefix` (prefix removed) into a new model.
Result<ModelWeights> Extract(const ModelWeights& all, const std::string& prefix) {
  ModelWeights::LayoutSpec spec;
  std::vector<const TensorInfo*> picked;
  for (const TensorInfo& t : all.tensors()) {
    if (t.name.rfind(prefix, 0) != 0) continue;
    spec.emplace_back(t.name.substr(prefix.size()), t.shape);
    picked.push_back(&t);
  }
  if (spec.empty()) return ModelWeights();
  TRIB_ASSIGN_OR_RETURN(ModelWeights out, ModelWeights::Create(spec));
  for (size_t i = 0; i < picked.size(); ++i)
    std::memcpy(out.tensor(i).data(), all.data().data() + picked[i]->offset,
                picked[i]->numel * sizeof(float));
  return out;
}

// Corruption naming the first non-finite value of `w` ("model" / "strategy state").
Status CheckFinite(const ModelWeights& w, const char* what, const std::string& path) {
  if (const std::optional<NonFinite> bad = FindNonFinite(w))
    return Status::Corruption(fmt::format("{}: {} tensor '{}' holds {} at index {}", path, what,
                                          bad->tensor, bad->value, bad->index));
  return Status::Ok();
}

}  // namespace

std::string CheckpointPath(const std::string& dir, int generation) {
  return (std::filesystem::path(dir) / (generation == 0
                                            ? std::string("checkpoint.safetensors")
                                            : fmt::format("checkpoint.{}.safetensors", generation)))
      .string();
}

Status SaveCheckpoint(Env* env, const std::string& dir, const CheckpointState& st, int keep) {
  if (keep < 1) return Status::InvalidArgument("checkpoints: keep must be >= 1");
  // A large checkpoint reports its progress from here, so that its seconds count the checksum and
  // the copies as well as the write; lines come as its bytes are written (each 16 MiB piece is
  // checked, which costs nothing next to writing it). The file holds the tensors' bytes and a
  // small header, so the count ends a little past the total.
  std::optional<Progress> progress;
  const uint64_t data_bytes = st.model.size_bytes() + st.strategy_state.size_bytes();
  if (data_bytes >= kCheckpointProgressBytes) {
    Progress::Options every_piece = Progress::Defaults();
    every_piece.check_every = 1;
    progress.emplace("saving checkpoint " + CheckpointPath(dir), data_bytes, "bytes", every_piece);
  }
  TRIB_RETURN_IF_ERROR(env->CreateDirs(dir));
  ModelWeights::LayoutSpec spec;
  for (const TensorInfo& t : st.model.tensors()) spec.emplace_back(kModelPrefix + t.name, t.shape);
  for (const TensorInfo& t : st.strategy_state.tensors())
    spec.emplace_back(kStrategyPrefix + t.name, t.shape);
  TRIB_ASSIGN_OR_RETURN(ModelWeights all, ModelWeights::Create(spec));
  std::memcpy(all.data().data(), st.model.data().data(), st.model.size_bytes());
  if (st.strategy_state.size())
    std::memcpy(all.data().data() + st.model.size(), st.strategy_state.data().data(),
                st.strategy_state.size_bytes());
  SafetensorsMetadata meta{{"format", kFormat},
                           {"rounds_done", std::to_string(st.rounds_done)},
                           {"model_version", std::to_string(st.model_version)},
                           {"seed", std::to_string(st.seed)},
                           {"strategy", st.strategy},
                           {"model", st.model_name},
                           {"model_fingerprint", std::to_string(st.model.fingerprint())}};
  if (!st.privacy.empty()) meta["privacy"] = st.privacy;
  if (!st.run_uid.empty()) meta["run_uid"] = st.run_uid;
  // Only an asynchronous run's: a synchronous checkpoint stays what earlier versions wrote.
  if (st.mode != "sync") {
    meta["mode"] = st.mode;
    meta["dispatches"] = std::to_string(st.dispatches);
  }
  meta[kChecksumKey] = Checksum(meta, all);
  // Rotate: the oldest kept goes, each other moves one generation older, the newest becomes .1.
  for (int g = keep - 1; g >= 1; --g) {
    const std::string from = CheckpointPath(dir, g - 1), to = CheckpointPath(dir, g);
    if (env->FileExists(from)) TRIB_RETURN_IF_ERROR(env->RenameFile(from, to));
  }
  TRIB_RETURN_IF_ERROR(WriteFileAtomic(env, CheckpointPath(dir), SerializeSafetensors(all, meta),
                                       progress ? &*progress : nullptr));
  if (progress) progress->Done();
  return Status::Ok();
}

Result<CheckpointState> LoadCheckpointFile(Env* env, const std::string& path) {
  SafetensorsMetadata meta;
  TRIB_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, env->ReadFile(path, kMaxCheckpointBytes));
  Result<ModelWeights> parsed = ParseSafetensors(bytes, &meta);
  if (!parsed.ok()) return parsed.status().WithContext(path);
  ModelWeights all = std::move(parsed).value();
  const std::string format = meta["format"];
  if (format != kFormat && format != kFormatV1)
    return Status::Corruption(path + ": not a Tributary checkpoint (format '" + format + "')");
  if (format == kFormat) {
    TRIB_RETURN_IF_ERROR(VerifyModelChecksum(path, kFormat, meta, kChecksumKey, all));
  }
  CheckpointState st;
  TRIB_ASSIGN_OR_RETURN(st.rounds_done, MetadataU64(meta, "rounds_done", path));
  TRIB_ASSIGN_OR_RETURN(st.model_version, MetadataU64(meta, "model_version", path));
  TRIB_ASSIGN_OR_RETURN(st.seed, MetadataU64(meta, "seed", path));
  TRIB_ASSIGN_OR_RETURN(uint64_t fp, MetadataU64(meta, "model_fingerprint", path));
  st.strategy = meta["strategy"];
  st.model_name = meta["model"];
  st.privacy = meta["privacy"];
  st.run_uid = meta["run_uid"];
  if (meta.count("mode")) {
    st.mode = meta["mode"];
    TRIB_ASSIGN_OR_RETURN(st.dispatches, MetadataU64(meta, "dispatches", path));
  }
  TRIB_ASSIGN_OR_RETURN(st.model, Extract(all, kModelPrefix));
  TRIB_ASSIGN_OR_RETURN(st.strategy_state, Extract(all, kStrategyPrefix));
  if (st.model.size() == 0) return Status::Corruption(path + ": the checkpoint holds no model");
  if (st.model.fingerprint() != fp)
    return Status::Corruption(path + ": the model's layout fingerprint does not match");
  if (st.model_version < st.rounds_done)
    return Status::Corruption(fmt::format("{}: model version {} is older than rounds done {}", path,
                                          st.model_version, st.rounds_done));
  TRIB_RETURN_IF_ERROR(CheckFinite(st.model, "model", path));
  TRIB_RETURN_IF_ERROR(CheckFinite(st.strategy_state, "strategy state", path));
  st.path = path;
  return st;
}

Result<CheckpointState> LoadCheckpoint(Env* env, const std::string& dir, int keep,
                                       const CheckpointCheck& check) {
  std::vector<std::string> skipped;
  bool any = false;
  for (int g = 0; g < std::max(keep, 1); ++g) {
    const std::string path = CheckpointPath(dir, g);
    if (!env->FileExists(path)) continue;
    any = true;
    Result<CheckpointState> st = LoadCheckpointFile(env, path);
    if (st.ok() && check) {
      if (Status accepted = check(*st); !accepted.ok()) {
        // A good file the run cannot go on from as configured: an older one would not do either.
        if (accepted.code() == StatusCode::kInvalidArgument) return accepted;
        st = Status::Corruption(path + ": " + accepted.message());
      }
    }
    if (st.ok()) {
      st->skipped = std::move(skipped);
      return st;
    }
    skipped.push_back(st.status().message());
  }
  if (!any) return Status::NotFound("no checkpoint in " + dir);
  return Status::Corruption(
      fmt::format("no usable checkpoint in {}: {}", dir, fmt::join(skipped, "; ")));
}

}  // namespace tributary
