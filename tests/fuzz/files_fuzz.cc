// libFuzzer entry point for the files Tributary reads from disk besides users' data (data_fuzz.cc):
// safetensors models (run.initial_model, final models), coordinator checkpoints, IDX arrays,
// configuration files against the coordinator's schema, and model files. Input layout:
//   byte 0     which reader (modulo 5): 0 safetensors, 1 checkpoint, 2 IDX, 3 config, 4 model file
//   the rest   the file's bytes
// Besides "no crash, no sanitizer report", it aborts when a property breaks:
//   - safetensors: an accepted model serializes and parses back to the same names, shapes, order
//     and bytes;
//   - checkpoint: an accepted one (its checksum verified) holds a non-empty model whose weights and
//     optimizer state are all finite, and a rejection is Corruption (or OutOfRange) naming the
//     file;
//   - IDX: an accepted array holds exactly the product of its dimensions;
//   - config: a document the coordinator's schema accepts prints (ValuesToml) to TOML that loads
//     back to the same values;
//   - model file: an accepted spec has valid layer shapes and ModelSpecToToml reads back equal.
// Built with clang as files_fuzzer, and with any compiler into files_fuzz_replay, which ctest runs
// over files_corpus/ (regenerate with files_make_corpus tests/fuzz/files_corpus).
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "coordinator/checkpoint.h"
#include "coordinator/coordinator_config.h"
#include "core/config.h"
#include "core/config_schema.h"
#include "core/file_util.h"
#include "tests/core/fault_injection_env.h"
#include "train/data/idx.h"
#include "train/model_file.h"
#include "tributary/safetensors.h"

namespace {

using namespace tributary;

void Require(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "fuzz property broken: %s\n", what);
    std::abort();
  }
}

bool SameBytes(const ModelWeights& a, const ModelWeights& b) {
  return a.same_layout(b) &&
         (a.size() == 0 || std::memcmp(a.data().data(), b.data().data(), a.size_bytes()) == 0);
}

void Safetensors(std::span<const uint8_t> bytes) {
  SafetensorsMetadata meta;
  Result<ModelWeights> w = ParseSafetensors(bytes, &meta);
  if (!w.ok()) {
    Require(w.status().code() == StatusCode::kCorruption ||
                w.status().code() == StatusCode::kOutOfRange ||
                w.status().code() == StatusCode::kInvalidArgument,
            "a safetensors rejection is Corruption, OutOfRange or InvalidArgument");
    return;
  }
  SafetensorsMetadata again_meta;
  Result<ModelWeights> again = ParseSafetensors(SerializeSafetensors(*w, meta), &again_meta);
  Require(again.ok(), "a serialized model parses");
  Require(SameBytes(*w, *again), "a serialized model parses back to itself");
  Require(again_meta == meta, "metadata round-trips");
}

void Checkpoint(std::span<const uint8_t> bytes) {
  testing::FaultInjectionEnv env;
  Require(env.CreateDirs("ck").ok(), "mkdir");
  Require(
      WriteFileAtomic(&env, CheckpointPath("ck"), std::vector<uint8_t>(bytes.begin(), bytes.end()))
          .ok(),
      "write");
  Result<CheckpointState> st = LoadCheckpointFile(&env, CheckpointPath("ck"));
  if (!st.ok()) {
    Require(st.status().code() == StatusCode::kCorruption ||
                st.status().code() == StatusCode::kOutOfRange ||
                st.status().code() == StatusCode::kInvalidArgument,
            "a checkpoint rejection is Corruption, OutOfRange or InvalidArgument");
    Require(st.status().message().find("ck/checkpoint.safetensors") != std::string::npos,
            "a checkpoint rejection names the file");
    return;
  }
  Require(st->model.size() > 0, "an accepted checkpoint holds a model");
  for (float v : st->model.data()) Require(std::isfinite(v), "accepted weights are finite");
  for (float v : st->strategy_state.data()) Require(std::isfinite(v), "accepted state is finite");
  Require(st->model_version >= st->rounds_done, "versions are consistent");
}

void Idx(std::span<const uint8_t> bytes) {
  IdxReadOptions opt;
  opt.max_elements = 1 << 20;
  Result<IdxArray> a = ParseIdx(bytes, "fuzz-input", opt);
  if (!a.ok()) return;
  Require(a->data.size() == a->num_elements(), "an IDX array holds the product of its dims");
  Require(a->num_elements() <= opt.max_elements, "an IDX array is within the cap");
}

void ConfigFile(std::string_view text) {
  Result<Config> doc = Config::Parse(text, "fuzz.toml");
  if (!doc.ok()) return;
  CoordinatorConfig cfg;
  ConfigSchema schema("tributary-coordinator");
  BindCoordinatorConfig(schema, &cfg);
  if (!schema.Load(*doc).ok()) return;
  const std::string printed = schema.ValuesToml();
  Result<Config> again_doc = Config::Parse(printed, "printed.toml");
  Require(again_doc.ok(), "ValuesToml is TOML");
  CoordinatorConfig again;
  ConfigSchema again_schema("tributary-coordinator");
  BindCoordinatorConfig(again_schema, &again);
  Require(again_schema.Load(*again_doc).ok(), "ValuesToml loads back");
  Require(again_schema.ValuesToml() == printed, "ValuesToml loads back to the same values");
}

void ModelFile(std::string_view text) {
  Result<ModelSpec> spec = ParseModelToml(text, "fuzz.toml", {8, 8, 1}, 10);
  if (!spec.ok()) {
    Require(spec.status().message().find("fuzz.toml") != std::string::npos,
            "a model-file rejection names the file");
    return;
  }
  Require(LayerOutputShapes(*spec).ok(), "an accepted model has valid shapes");
  Result<ModelSpec> again = ParseModelToml(ModelSpecToToml(*spec), "again.toml", {8, 8, 1}, 10);
  Require(again.ok(), "ModelSpecToToml parses");
  Require(again->layers == spec->layers && again->input == spec->input &&
              again->num_classes == spec->num_classes,
          "ModelSpecToToml reads back to the same spec");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const std::span<const uint8_t> rest(data + 1, size - 1);
  const std::string_view text(reinterpret_cast<const char*>(rest.data()), rest.size());
  switch (data[0] % 5) {
    case 0:
      Safetensors(rest);
      break;
    case 1:
      Checkpoint(rest);
      break;
    case 2:
      Idx(rest);
      break;
    case 3:
      ConfigFile(text);
      break;
    default:
      ModelFile(text);
      break;
  }
  return 0;
}
