// native_app: an app that federates a model file with Tributary's own engine and no training code
// of its own. It holds its examples in arrays (patterns.h), makes a trainer from the model file
// and those arrays (tributary/native_training.h), and joins a coordinator that runs the same model
// file. After the run it predicts its held-out examples with the federated model.
//
//   native_app --coordinator 127.0.0.1:7700 --ca pki/ca.crt --cert pki/clients/app-1.crt
//              --key pki/clients/app-1.key --model patterns_cnn.toml
//              [--state-dir DIR] [--examples 600] [--seed 1] [--threads 1] [--max-attempts 0]
//
// Returns 0 when the coordinator ended the run, 1 when the run failed, 2 for bad arguments.
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "patterns.h"
#include "tributary/client.h"
#include "tributary/native_training.h"

namespace {

struct Args {
  std::string coordinator, ca, cert, key, model, state_dir;
  long examples = 600, seed = 1, threads = 1, max_attempts = 0;
};

bool Parse(int argc, char** argv, Args* a) {
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) {
      std::fprintf(stderr, "native_app: %s needs a value\n", flag.c_str());
      return false;
    }
    const char* v = argv[++i];
    if (flag == "--coordinator")
      a->coordinator = v;
    else if (flag == "--ca")
      a->ca = v;
    else if (flag == "--cert")
      a->cert = v;
    else if (flag == "--key")
      a->key = v;
    else if (flag == "--model")
      a->model = v;
    else if (flag == "--state-dir")
      a->state_dir = v;
    else if (flag == "--examples")
      a->examples = std::strtol(v, nullptr, 10);
    else if (flag == "--seed")
      a->seed = std::strtol(v, nullptr, 10);
    else if (flag == "--threads")
      a->threads = std::strtol(v, nullptr, 10);
    else if (flag == "--max-attempts")
      a->max_attempts = std::strtol(v, nullptr, 10);
    else {
      std::fprintf(stderr, "native_app: unknown flag %s\n", flag.c_str());
      return false;
    }
  }
  if (a->coordinator.empty() || a->ca.empty() || a->cert.empty() || a->key.empty() ||
      a->model.empty()) {
    std::fprintf(stderr,
                 "usage: native_app --coordinator HOST:PORT --ca CA.crt --cert ME.crt --key ME.key "
                 "--model MODEL.toml [--state-dir DIR] [--examples N] [--seed S] [--threads T] "
                 "[--max-attempts N]\n");
    return false;
  }
  if (a->examples < 1 || a->examples > 1000000) {
    std::fprintf(stderr, "native_app: --examples must be in [1, 1000000]\n");
    return false;
  }
  return true;
}

// n examples from the app's own generator, as the engine's arrays.
tributary::SampleArrays MakeSamples(size_t n, uint64_t seed) {
  tributary::SampleArrays a;
  a.height = PATTERNS_SIDE;
  a.width = PATTERNS_SIDE;
  a.channels = 1;
  a.num_classes = PATTERNS_CLASSES;
  a.features.resize(n * PATTERNS_PIXELS);
  a.labels.resize(n);
  patterns_make(n, seed, 0.5f, a.features.data(), a.labels.data());
  return a;
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  if (!Parse(argc, argv, &args)) return 2;
  const auto seed = static_cast<uint64_t>(args.seed);

  tributary::NativeTrainingOptions training;
  training.model = args.model;
  training.threads = static_cast<int>(args.threads);
  training.on_epoch = [](const tributary::NativeEpochProgress& p) {
    std::printf("native_app: epoch %d/%d loss %.4f accuracy %.1f%% (%.0f samples/s)\n", p.epoch,
                p.epochs, p.loss, 100.0 * p.accuracy, p.samples_per_second);
  };
  tributary::Result<std::unique_ptr<tributary::Trainer>> trainer = tributary::CreateNativeTrainer(
      training, MakeSamples(static_cast<size_t>(args.examples), seed));
  if (!trainer.ok()) {
    std::fprintf(stderr, "native_app: %s\n", trainer.status().ToString().c_str());
    return 2;
  }

  tributary::ClientOptions options;
  options.coordinator = args.coordinator;
  options.ca_cert_file = args.ca;
  options.cert_file = args.cert;
  options.key_file = args.key;
  options.state_dir = args.state_dir;
  options.device = "cpu (native_app)";
  options.num_examples = static_cast<uint64_t>(args.examples);
  options.backoff.max_attempts = static_cast<uint32_t>(args.max_attempts);
  options.backoff.seed = seed;
  options.log_level = tributary::LogLevel::kWarn;
  options.log_callback = [](tributary::LogLevel level, std::string_view message) {
    std::fprintf(stderr, "native_app: [%s] %.*s\n", tributary::LogLevelName(level).data(),
                 static_cast<int>(message.size()), message.data());
  };
  tributary::Result<std::unique_ptr<tributary::Client>> client =
      tributary::Client::Create(std::move(options), std::move(*trainer));
  if (!client.ok()) {
    std::fprintf(stderr, "native_app: %s\n", client.status().ToString().c_str());
    return 2;
  }
  const tributary::Status s = (*client)->run();
  if (!s.ok()) {
    std::fprintf(stderr, "native_app: %s\n", s.ToString().c_str());
    return 1;
  }

  // The federated model on examples this app never trained on.
  const size_t n = 500;
  const tributary::SampleArrays held_out = MakeSamples(n, ~seed);
  tributary::Result<std::vector<float>> p =
      (*client)->predict(held_out.features, static_cast<int64_t>(n));
  if (!p.ok()) {
    std::fprintf(stderr, "native_app: predict: %s\n", p.status().ToString().c_str());
    return 1;
  }
  size_t correct = 0;
  for (size_t i = 0; i < n; ++i) {
    const float* row = p->data() + i * PATTERNS_CLASSES;
    int best = 0;
    for (int k = 1; k < PATTERNS_CLASSES; ++k)
      if (row[k] > row[best]) best = k;
    correct += best == held_out.labels[i];
  }
  std::printf(
      "native_app: the run ended; held-out accuracy of the latest global model %.4f (%zu of %zu)\n",
      static_cast<double>(correct) / n, correct, n);
  return 0;
}
