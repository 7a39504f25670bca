// tributary-train: centralized training of a zoo model or a model file on Fashion-MNIST — the
// baseline that federated runs are compared against, and the quickest check that the engine works
// on a machine.
//
//   tributary-train --model mlp --epochs 10
//   tributary-train --model examples/models/logreg.toml --epochs 3   a model file (docs/models.md)
//   tributary-train --config train.toml --lr 0.02 --save mlp.safetensors
//   tributary-train --print-config            every key with its default and flag
//   tributary-train --model cnn --print-model  the model as a model file, to start one from
//
// Flags and --set key=value override the TOML file; the keys are the federated programs' names
// for the same settings. Prints one line per epoch and the final test accuracy.
#include <CLI/CLI.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>

#include "core/config_cli.h"
#include "core/fit_config.h"
#include "core/log.h"
#include "core/rng.h"
#include "core/stderr_log.h"
#include "train/cpu/gemm.h"
#include "train/data/data_config.h"
#include "train/data/fashion_mnist.h"
#include "train/device.h"
#include "train/model_file.h"
#include "train/native_trainer.h"
#include "tributary/config.h"
#include "tributary/safetensors.h"

namespace tributary {
namespace {

// tributary-train's settings, with the keys the federated programs use for the same things
// (run.model, run.init_seed, fit.*, data.*, output.final_model) plus train.lr_decay and
// train.threads.
struct TrainConfig {
  TrainConfig() {
    fit.epochs = 10;
    fit.momentum = 0.9f;  // with fit.optimizer = sgd only (main() clears it for adam)
  }
  std::string log_level = "info";
  std::string model = "mlp";
  uint64_t init_seed = 1;
  FitConfig fit;
  double lr_decay = 1.0;
  int64_t threads = 0;
  DataConfig data;
  std::string device = "cpu";
  std::string save;
};

void BindTrainConfig(ConfigSchema& s, TrainConfig* c) {
  s.Bind("log_level", &c->log_level, "trace, debug, info, warn or error").Flag("--log-level");
  s.Bind("run.model", &c->model, "a built-in model (mlp, cnn, lenet) or a model file (.toml)")
      .Flag("--model")
      .Path(IsModelFilePath);
  s.Bind("run.init_seed", &c->init_seed, "seeds the initial weights and the shuffling")
      .Flag("--seed");
  BindFitConfig(s, &c->fit);
  s.SetFlag("fit.momentum", "--momentum");
  s.SetFlag("fit.weight_decay", "--weight-decay");
  s.Refuse("fit.proximal_mu", "centralized training has no global model to stay near");
  s.Bind("train.lr_decay", &c->lr_decay, "multiply the learning rate by this after each epoch")
      .Flag("--lr-decay");
  BindDataConfig(s, &c->data, /*partitioned=*/false);
  s.Bind("device", &c->device, "cpu, auto or cuda[:N]").Flag("--device");
  s.Bind("train.threads", &c->threads, kCpuThreadsHelp).Flag("--threads");
  s.Bind("output.final_model", &c->save, "write the trained model here (safetensors)")
      .Flag("--save")
      .Path();
  const std::pair<const char*, const char*> renamed[] = {
      {"model", "run.model"},
      {"seed", "run.init_seed"},
      {"epochs", "fit.epochs"},
      {"batch_size", "fit.batch_size"},
      {"lr", "fit.lr"},
      {"momentum", "fit.momentum"},
      {"weight_decay", "fit.weight_decay"},
      {"lr_decay", "train.lr_decay"},
      {"data_dir", "data.dir"},
      {"train_examples", "data.train_examples"},
      {"save", "output.final_model"},
  };
  for (const auto& [from, to] : renamed) s.Rename(from, to);
}

// run.model for the configured data's shape and class count.
Result<ModelSpec> ResolveModel(const TrainConfig& o) {
  TRIB_ASSIGN_OR_RETURN(DataShape data, DataShapeOf(o.data));
  Result<ModelSpec> spec =
      ResolveModelSpec(o.model, Shape3{data.height, data.width, data.channels}, data.num_classes);
  if (!spec.ok()) return spec.status().WithContext("key 'run.model'");
  return spec;
}

Status Run(const TrainConfig& o) {
  TRIB_RETURN_IF_ERROR(InitLogging(o.log_level));
  TRIB_RETURN_IF_ERROR(ValidateFitConfig(o.fit));
  TRIB_RETURN_IF_ERROR(o.data.Validate());
  if (!(o.lr_decay > 0.0 && o.lr_decay <= 1.0))
    return Status::InvalidArgument("key 'train.lr_decay' (--lr-decay) must be in (0, 1]");
  TRIB_ASSIGN_OR_RETURN(ModelSpec spec, ResolveModel(o));
  TRIB_ASSIGN_OR_RETURN(int threads, ResolveCpuThreads(o.threads));
  TRIB_ASSIGN_OR_RETURN(EngineFactory factory, SelectEngineFactory(o.device, threads));

  auto t0 = std::chrono::steady_clock::now();
  TRIB_ASSIGN_OR_RETURN(DataSplits data, LoadDataSplits(o.data, true, true));
  if (!data.test)
    return Status::InvalidArgument(
        "key 'data.test' is empty: tributary-train evaluates every epoch on a test set");
  const std::string source = o.data.dataset == "synthetic" ? std::string("the synthetic data set")
                             : o.data.dataset == "files"   ? o.data.train
                             : o.data.dir.empty()          ? std::string(kDefaultFashionMnistDir)
                                                           : o.data.dir;
  std::printf(
      "tributary-train %s: model %s (%zu parameters), %lld train / %lld test examples from %s "
      "(%.1fs)\n",
      TRIBUTARY_VERSION, spec.name.c_str(), InitWeights(spec, 0)->size(),
      static_cast<long long>(data.train->size()), static_cast<long long>(data.test->size()),
      source.c_str(), std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  std::printf(
      "settings: epochs %d, batch %d, optimizer %s, lr %g (x%g per epoch), momentum %g, weight "
      "decay %g, seed %llu, device %s, %d CPU thread(s) (GEMM: %s)\n",
      o.fit.epochs, o.fit.batch_size, o.fit.optimizer.c_str(), static_cast<double>(o.fit.lr),
      o.lr_decay, static_cast<double>(o.fit.momentum), static_cast<double>(o.fit.weight_decay),
      static_cast<unsigned long long>(o.init_seed), o.device.c_str(), threads, cpu::GemmPath());
  std::fflush(stdout);

  TRIB_ASSIGN_OR_RETURN(auto trainer,
                        NativeTrainer::Create(spec, data.train, data.test, o.init_seed, factory));
  TRIB_ASSIGN_OR_RETURN(ModelWeights weights, trainer->get_parameters());
  FitConfig fit = o.fit;
  fit.epochs = 1;  // one fit per epoch, with its own seed and learning rate
  EvalResult eval;
  for (int epoch = 1; epoch <= o.fit.epochs; ++epoch) {
    fit.seed = DeriveSeed(o.init_seed, {static_cast<uint64_t>(epoch)});
    fit.lr = static_cast<float>(o.fit.lr * std::pow(o.lr_decay, epoch - 1));
    auto te = std::chrono::steady_clock::now();
    TRIB_ASSIGN_OR_RETURN(FitResult res, trainer->fit(weights, fit));
    weights = std::move(res.weights);
    TRIB_ASSIGN_OR_RETURN(eval, trainer->evaluate(weights, EvalConfig{}));
    std::printf(
        "epoch %2d/%d  loss %.4f  train-acc %5.2f%%  test-loss %.4f  test-acc %5.2f%%  %8.0f "
        "samples/s  %.1fs\n",
        epoch, o.fit.epochs, res.metrics["train_loss"], 100 * res.metrics["train_accuracy"],
        eval.loss, 100 * eval.accuracy, res.metrics["samples_per_second"],
        std::chrono::duration<double>(std::chrono::steady_clock::now() - te).count());
    std::fflush(stdout);
  }
  std::printf("final test accuracy: %.2f%% (%lld examples), model %s, %d epochs, %.0fs total\n",
              100 * eval.accuracy, static_cast<long long>(eval.num_examples), spec.name.c_str(),
              o.fit.epochs,
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  if (!o.save.empty()) {
    char acc[32];
    std::snprintf(acc, sizeof(acc), "%.4f", eval.accuracy);
    TRIB_RETURN_IF_ERROR(SaveSafetensors(weights, o.save,
                                         {{"model", spec.name},
                                          {"epochs", std::to_string(o.fit.epochs)},
                                          {"test_accuracy", acc},
                                          {"producer", "tributary-train"}}));
    std::printf("saved %s\n", o.save.c_str());
  }
  return Status::Ok();
}

}  // namespace
}  // namespace tributary

int main(int argc, char** argv) {
  tributary::TrainConfig o;
  tributary::ConfigSchema schema("tributary-train");
  tributary::BindTrainConfig(schema, &o);
  CLI::App app{
      "tributary-train: centralized training on Fashion-MNIST (the baseline for federated runs)"};
  tributary::ConfigCommandLine cli(app, schema);
  bool print_model = false;
  app.add_flag("--print-model", print_model,
               "print run.model, resolved for the data, as a model file (TOML) and exit");
  CLI11_PARSE(app, argc, argv);
  if (cli.print_config()) {
    std::fputs(schema.DefaultsToml().c_str(), stdout);
    return 0;
  }
  if (tributary::Status s = cli.Apply(); !s.ok()) {
    std::fprintf(stderr, "tributary-train: %s\n", s.ToString().c_str());
    return 2;
  }
  // This program's momentum default (0.9) is SGD's: Adam's momentum is fit.beta1, so with Adam and
  // momentum left at its default, momentum is 0 (another momentum with Adam is refused by name).
  if (o.fit.optimizer != "sgd" && schema.IsDefault("fit.momentum")) o.fit.momentum = 0.0f;
  if (print_model) {
    tributary::Result<tributary::ModelSpec> spec = tributary::ResolveModel(o);
    if (!spec.ok()) {
      std::fprintf(stderr, "tributary-train: %s\n", spec.status().ToString().c_str());
      return 2;
    }
    std::fputs(tributary::ModelSpecToToml(*spec).c_str(), stdout);
    return 0;
  }
  tributary::Status s = tributary::Run(o);
  if (!s.ok()) {
    std::fprintf(stderr, "tributary-train: %s\n", s.ToString().c_str());
    return 1;
  }
  return 0;
}
