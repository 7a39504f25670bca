// split_memory: the peak memory of training one part of a cut model, measured (docs/results.md).
//
//   split_memory MODEL PART [BATCH]     PART: whole, device or server
//
// Creates the CPU engine (one thread) for the whole model, its device part or its server part
// (cut where the model file says), trains it on BATCH (default 32) synthetic Fashion-MNIST-shaped
// samples for 3 steps (device: ForwardToCut + BackwardFromCut from a made-up gradient; server:
// TrainFromCut on made-up activations), and prints the growth of the process's peak RSS (VmHWM)
// over those steps: the engine's parameters, gradients, optimizer state and activation buffers.
// Run each part in its own process: peak RSS never goes down.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <numeric>
#include <string>

#include "train/cpu/cpu_engine.h"
#include "train/data/synthetic.h"
#include "train/model_split.h"

namespace {

long PeakKib() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::stol(line.substr(6));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace tributary;
  if (argc < 3) {
    std::fprintf(stderr, "usage: split_memory MODEL whole|device|server [BATCH]\n");
    return 2;
  }
  const std::string part = argv[2];
  const int batch = argc > 3 ? std::atoi(argv[3]) : 32;
  Result<ModelSpec> whole = ModelSpecByName(argv[1]);
  if (!whole.ok() || whole->cut == 0) {
    std::fprintf(stderr, "model %s: unknown or without a cut\n", argv[1]);
    return 2;
  }
  const SplitModel split = *CutModel(*whole, static_cast<size_t>(whole->cut));
  SyntheticSpec ss;
  ss.n = batch;
  ss.height = 28;
  ss.width = 28;
  const Dataset data = MakeSyntheticDataset(ss);
  std::vector<uint32_t> idx(static_cast<size_t>(batch));
  std::iota(idx.begin(), idx.end(), 0u);
  const size_t cut = static_cast<size_t>(batch) * static_cast<size_t>(split.cut_shape.numel());
  std::vector<float> acts(cut, 0.1f), grad(cut, 1e-3f);
  std::vector<uint8_t> labels(data.labels.begin(), data.labels.end());
  const long before = PeakKib();
  const ModelSpec& spec = part == "device"   ? split.device
                          : part == "server" ? split.server
                                             : *whole;
  auto engine = *cpu::CpuEngine::Create(spec, batch, 1);
  (void)engine->LoadWeights(*InitWeights(spec, 1));
  const SgdConfig sgd{0.01f, 0.9f, 0.0f, 0.0f};
  for (int step = 0; step < 3; ++step) {
    if (part == "device") {
      (void)engine->ForwardToCut(data, idx, acts);
      (void)engine->BackwardFromCut(grad, sgd);
    } else if (part == "server") {
      (void)engine->TrainFromCut(acts, labels, sgd, grad);
    } else {
      engine->TrainStep(data, idx, sgd);
    }
  }
  std::printf("%s %s batch %d: peak RSS grew %.2f MiB (%zu parameters)\n", argv[1], part.c_str(),
              batch, (PeakKib() - before) / 1024.0,
              ModelWeights::Create(*ParameterLayout(spec))->size());
  return 0;
}
