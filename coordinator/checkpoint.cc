#include "coordinator/checkpoint.h"

#include <cstring>
#include <filesystem>

#include "core/file_util.h"
#include "tributary/safetensors.h"

namespace tributary {
namespace {

constexpr const char* kModelPrefix = "model.";
constexpr const char* kStrategyPrefix = "strategy.";

Result<uint64_t> ParseU64(const SafetensorsMetadata& meta, const std::string& key,
                          const std::string& path) {
  auto it = meta.find(key);
  if (it == meta.end())
    return Status::Corruption(path + ": checkpoint metadata lacks '" + key + "'");
  try {
    size_t used = 0;
    uint64_t v = std::stoull(it->second, &used);
    if (used != it->second.size()) throw std::invalid_argument("trailing");
    return v;
  } catch (const std::exception&) {
    return Status::Corruption(path + ": checkpoint metadata '" + key + "' is not a number");
  }
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

}  // namespace

std::string CheckpointPath(const std::string& dir) {
  return (std::filesystem::path(dir) / "checkpoint.safetensors").string();
}

Status SaveCheckpoint(Env* env, const std::string& dir, const CheckpointState& st) {
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
  SafetensorsMetadata meta{{"format", "tributary-checkpoint-1"},
                           {"rounds_done", std::to_string(st.rounds_done)},
                           {"model_version", std::to_string(st.model_version)},
                           {"seed", std::to_string(st.seed)},
                           {"strategy", st.strategy},
                           {"model", st.model_name},
                           {"model_fingerprint", std::to_string(st.model.fingerprint())}};
  return WriteFileAtomic(env, CheckpointPath(dir), SerializeSafetensors(all, meta));
}

Result<CheckpointState> LoadCheckpoint(Env* env, const std::string& dir) {
  const std::string path = CheckpointPath(dir);
  SafetensorsMetadata meta;
  TRIB_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, env->ReadFile(path, kMaxCheckpointBytes));
  Result<ModelWeights> parsed = ParseSafetensors(bytes, &meta);
  if (!parsed.ok()) return parsed.status().WithContext(path);
  ModelWeights all = std::move(parsed).value();
  if (meta["format"] != "tributary-checkpoint-1")
    return Status::Corruption(path + ": not a Tributary checkpoint (format '" + meta["format"] +
                              "')");
  CheckpointState st;
  TRIB_ASSIGN_OR_RETURN(st.rounds_done, ParseU64(meta, "rounds_done", path));
  TRIB_ASSIGN_OR_RETURN(st.model_version, ParseU64(meta, "model_version", path));
  TRIB_ASSIGN_OR_RETURN(st.seed, ParseU64(meta, "seed", path));
  TRIB_ASSIGN_OR_RETURN(uint64_t fp, ParseU64(meta, "model_fingerprint", path));
  st.strategy = meta["strategy"];
  st.model_name = meta["model"];
  TRIB_ASSIGN_OR_RETURN(st.model, Extract(all, kModelPrefix));
  TRIB_ASSIGN_OR_RETURN(st.strategy_state, Extract(all, kStrategyPrefix));
  if (st.model.fingerprint() != fp)
    return Status::Corruption(path + ": the model's layout fingerprint does not match");
  return st;
}

}  // namespace tributary
