// Tributary's own training engine for apps (CMake: Tributary::train): a Trainer that trains a model
// file, or a built-in model, on samples the app holds in memory, so that an app federates a model
// with no training code of its own. docs/embedding.md ("Training with Tributary's engine").
//
//   tributary::SampleArrays data{.height = 8, .width = 8, .channels = 1, .num_classes = 3};
//   data.features = ...;  // size() * 64 floats, sample after sample (HWC order)
//   data.labels = ...;    // one class id (< num_classes) per sample
//   tributary::NativeTrainingOptions o;
//   o.model = "models/small_cnn.toml";
//   auto trainer = tributary::CreateNativeTrainer(o, std::move(data));
//   auto client = tributary::Client::Create(client_options, std::move(*trainer));
//
// The trainer is the one tributary-client uses (the CPU engine, or the CUDA engine in a build that
// has it): the keys of a round's FitConfig (epochs, batch size, SGD with momentum, Adam and AdamW,
// FedProx, SCAFFOLD, the optimizer's state kept between rounds) all apply. Deterministic for a seed
// and a thread count. A Trainer is used from one thread at a time (trainer.h).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "tributary/result.h"
#include "tributary/trainer.h"

namespace tributary {

// Labelled samples held by the app: labels.size() samples of height * width * channels floats
// each, stored one after the other in features (HWC order within a sample); every label is a class
// id below num_classes. A model whose first layer is dense sees each sample as a flat vector, so
// tabular data of F features is height 1, width F, channels 1.
struct SampleArrays {
  int64_t height = 0;
  int64_t width = 0;
  int64_t channels = 1;
  int num_classes = 0;  // 2..256
  std::vector<float> features;
  std::vector<uint8_t> labels;
};

// Training samples the app reads on demand, for data that does not fit in memory: `size` samples
// of height * width * channels floats, each with a class id below num_classes. read(indices,
// features, labels) fills indices.size() samples, in the order of `indices` (each < size):
// features sample after sample (HWC order), one label per sample. fit() reads one batch at a time,
// in the shuffled order an in-memory set of the same samples is read in, so the same samples give
// the same weights bit for bit; it holds one batch, not the set. A non-OK Status from read ends the
// fit with it (the round's update is not sent); labels and token ids are checked per batch. Trains
// on the CPU engine (device "cpu"), on the calling thread of fit().
struct SampleSource {
  int64_t height = 0;
  int64_t width = 0;
  int64_t channels = 1;
  int num_classes = 0;  // 2..256
  int64_t size = 0;     // 1 .. 2^32 - 1
  std::function<Status(std::span<const uint32_t> indices, float* features, uint8_t* labels)> read;
};

// Progress of a fit, after each local epoch (for an app's progress display).
struct NativeEpochProgress {
  int epoch = 0;  // 1-based
  int epochs = 0;
  double loss = 0.0;      // mean training loss over the epoch
  double accuracy = 0.0;  // training accuracy over the epoch
  double samples_per_second = 0.0;
};

struct NativeTrainingOptions {
  // The model: a model file's path (docs/models.md; it contains '/' or ends in ".toml") or a
  // built-in model's name ("mlp", "cnn", "lenet", ...). A file that leaves out its input shape or
  // class count takes the samples'.
  std::string model;
  // Or the model file's text, for an app that carries it rather than a file; `model` then only
  // names it in errors (and is the model's name when the text gives none). Takes precedence.
  std::string model_toml;
  // "cpu", "cuda", "cuda:N" or "auto" (a GPU when one can be used, else the CPU). "cuda" in a
  // build without the CUDA backend is Unimplemented.
  std::string device = "cpu";
  // Threads of the CPU engine (0: every core). Results are deterministic for a seed and a thread
  // count.
  int threads = 1;
  // Seeds the initial weights (a federated client starts every fit from the coordinator's).
  uint64_t init_seed = 0;
  // Called after each local epoch of fit(), on the thread that called fit().
  std::function<void(const NativeEpochProgress&)> on_epoch;
};

// A Trainer over Tributary's engine that trains options.model on `train` and evaluates on `eval`
// (which may be empty: evaluate() then fails with FailedPrecondition). The arrays are moved in and
// held read-only. InvalidArgument names the field at fault (a shape or size that does not add up, a
// label out of range, a model that does not fit the samples); NotFound for a missing model file.
Result<std::unique_ptr<Trainer>> CreateNativeTrainer(const NativeTrainingOptions& options,
                                                     SampleArrays train, SampleArrays eval = {});

// The same, training on samples read from `train` batch by batch (SampleSource); eval as above.
// InvalidArgument names what does not fit (the source's shape, classes, size or read function, or
// a device other than "cpu").
Result<std::unique_ptr<Trainer>> CreateNativeTrainer(const NativeTrainingOptions& options,
                                                     SampleSource train, SampleArrays eval = {});

}  // namespace tributary
