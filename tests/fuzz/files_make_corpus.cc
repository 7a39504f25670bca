// Writes the seed corpus for files_fuzz into the directory given as argv[1]: a valid file of each
// kind (safetensors with metadata, a checkpoint as SaveCheckpoint writes it, an IDX array, the
// example coordinator configuration, every built-in model as a model file), each prefixed with its
// selector byte (files_fuzz.cc). argv[2] is the source tree (for examples/). Run by hand; the
// output is committed.
#include <cstdio>
#include <string>
#include <vector>

#include "coordinator/checkpoint.h"
#include "core/file_util.h"
#include "tests/core/fault_injection_env.h"
#include "train/data/idx.h"
#include "train/model_file.h"
#include "tributary/safetensors.h"

namespace {

using namespace tributary;

int written = 0;
std::string dir;

void Put(const std::string& name, uint8_t selector, const std::vector<uint8_t>& bytes) {
  std::vector<uint8_t> out{selector};
  out.insert(out.end(), bytes.begin(), bytes.end());
  if (WriteFileAtomic(dir + "/" + name, out).ok()) ++written;
}

std::vector<uint8_t> Text(const std::string& s) { return {s.begin(), s.end()}; }

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: files_make_corpus OUT_DIR SOURCE_DIR\n");
    return 2;
  }
  dir = argv[1];
  const std::string src = argv[2];
  ModelWeights w = *ModelWeights::Create({{"encoder/0.W", {3, 2}}, {"head:b", {2}}, {"s", {}}});
  for (size_t i = 0; i < w.size(); ++i) w.data()[i] = 0.5f * static_cast<float>(i) - 1.0f;
  Put("safetensors_small", 0, SerializeSafetensors(w, {{"producer", "seed"}}));

  testing::FaultInjectionEnv env;
  CheckpointState st;
  st.rounds_done = st.model_version = 3;
  st.strategy = "fedavgm";
  st.model_name = "mlp";
  st.model = w;
  st.strategy_state = *ModelWeights::Create({{"m", {4}}});
  if (SaveCheckpoint(&env, "ck", st).ok())
    Put("checkpoint_small", 1, *env.ReadFile(CheckpointPath("ck"), 1 << 20));

  const uint32_t dims[3] = {2, 3, 3};
  std::vector<uint8_t> pixels(18);
  for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<uint8_t>(i * 13);
  Put("idx_images", 2, EncodeIdx(dims, pixels));

  Result<std::vector<uint8_t>> config =
      ReadFileBytes(src + "/examples/configs/coordinator.toml", 1 << 20);
  if (config.ok()) Put("config_coordinator", 3, *config);
  Put("config_small", 3, Text("[run]\nrounds = 3\nmodel = \"\"\n[fit]\nlr = 0.1\n"));

  for (const std::string& name : ModelNames()) {
    Result<ModelSpec> spec = ModelSpecByName(name, {8, 8, 1}, 10);
    if (spec.ok()) Put("model_" + name, 4, Text(ModelSpecToToml(*spec)));
  }
  for (const char* f : {"logreg.toml", "small_cnn.toml", "torch_mlp.toml"}) {
    Result<std::vector<uint8_t>> m = ReadFileBytes(src + "/examples/models/" + f, 1 << 20);
    if (m.ok()) Put(std::string("model_file_") + f, 4, *m);
  }
  std::printf("wrote %d seed inputs to %s\n", written, dir.c_str());
  return 0;
}
