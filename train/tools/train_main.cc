// tributary-train: centralized training of a zoo model on Fashion-MNIST — the baseline that
// federated runs are compared against, and the quickest check that the engine works on a machine.
//
//   tributary-train --model mlp --epochs 10
//   tributary-train --config train.toml --lr 0.02 --save mlp.safetensors
//
// Flags override the TOML file. Prints one line per epoch and the final test accuracy.
#include <CLI/CLI.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>

#include "core/config.h"
#include "core/log.h"
#include "core/rng.h"
#include "train/data/fashion_mnist.h"
#include "train/device.h"
#include "train/native_trainer.h"
#include "tributary/config.h"
#include "tributary/safetensors.h"

namespace tributary {
namespace {

struct Options {
  std::string config;
  std::string model = "mlp";
  int epochs = 10;
  int batch = 32;
  double lr = 0.05;
  double momentum = 0.9;
  double weight_decay = 0.0;
  double lr_decay = 1.0;
  int64_t seed = 1;
  std::string data_dir = kDefaultFashionMnistDir;
  int64_t train_examples = 0;
  std::string save;
  std::string device = "cpu";
  std::string log_level = "info";
};

// Fills every option the command line did not set from the TOML file.
Status ApplyConfigFile(const CLI::App& app, Options* o) {
  TRIB_ASSIGN_OR_RETURN(Config cfg, Config::LoadFile(o->config));
  TRIB_RETURN_IF_ERROR(cfg.CheckKnownKeys({"model", "epochs", "batch_size", "lr", "momentum",
                                           "weight_decay", "lr_decay", "seed", "data_dir",
                                           "train_examples", "save", "device", "log_level"}));
  Status st;
  // Takes the file's value for `key` unless `flag` was given on the command line.
  auto take = [&](const char* flag, auto* dst, auto result) {
    if (!st.ok() || app.count(flag) != 0) return;
    if (!result.ok())
      st = result.status();
    else
      *dst = static_cast<std::remove_pointer_t<decltype(dst)>>(*result);
  };
  take("--model", &o->model, cfg.GetString("model", o->model));
  take("--epochs", &o->epochs, cfg.GetInt("epochs", o->epochs));
  take("--batch", &o->batch, cfg.GetInt("batch_size", o->batch));
  take("--lr", &o->lr, cfg.GetDouble("lr", o->lr));
  take("--momentum", &o->momentum, cfg.GetDouble("momentum", o->momentum));
  take("--weight-decay", &o->weight_decay, cfg.GetDouble("weight_decay", o->weight_decay));
  take("--lr-decay", &o->lr_decay, cfg.GetDouble("lr_decay", o->lr_decay));
  take("--seed", &o->seed, cfg.GetInt("seed", o->seed));
  take("--data", &o->data_dir, cfg.GetString("data_dir", o->data_dir));
  take("--train-examples", &o->train_examples, cfg.GetInt("train_examples", o->train_examples));
  take("--save", &o->save, cfg.GetString("save", o->save));
  take("--device", &o->device, cfg.GetString("device", o->device));
  take("--log-level", &o->log_level, cfg.GetString("log_level", o->log_level));
  return st;
}

Status Run(const Options& o) {
  TRIB_RETURN_IF_ERROR(InitLogging(o.log_level));
  if (o.epochs < 1) return Status::InvalidArgument("--epochs must be >= 1");
  if (!(o.lr_decay > 0.0 && o.lr_decay <= 1.0))
    return Status::InvalidArgument("--lr-decay must be in (0, 1]");
  TRIB_ASSIGN_OR_RETURN(ModelSpec spec, ModelSpecByName(o.model));
  TRIB_ASSIGN_OR_RETURN(EngineFactory factory, SelectEngineFactory(o.device));

  auto t0 = std::chrono::steady_clock::now();
  TRIB_ASSIGN_OR_RETURN(Dataset train,
                        LoadFashionMnist(o.data_dir, FashionMnistSplit::kTrain, o.train_examples));
  TRIB_ASSIGN_OR_RETURN(Dataset test, LoadFashionMnist(o.data_dir, FashionMnistSplit::kTest));
  std::printf(
      "tributary-train %s: model %s (%zu parameters), %lld train / %lld test examples from %s "
      "(%.1fs)\n",
      TRIBUTARY_VERSION, spec.name.c_str(), InitWeights(spec, 0)->size(),
      static_cast<long long>(train.size()), static_cast<long long>(test.size()), o.data_dir.c_str(),
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  std::printf(
      "settings: epochs %d, batch %d, lr %g (x%g per epoch), momentum %g, weight decay %g, seed "
      "%lld, device %s\n",
      o.epochs, o.batch, o.lr, o.lr_decay, o.momentum, o.weight_decay,
      static_cast<long long>(o.seed), o.device.c_str());
  std::fflush(stdout);

  auto train_ptr = std::make_shared<const Dataset>(std::move(train));
  auto test_ptr = std::make_shared<const Dataset>(std::move(test));
  TRIB_ASSIGN_OR_RETURN(auto trainer,
                        NativeTrainer::Create(spec, train_ptr, test_ptr, o.seed, factory));
  TRIB_ASSIGN_OR_RETURN(ModelWeights weights, trainer->get_parameters());
  FitConfig fit;
  fit.epochs = 1;
  fit.batch_size = o.batch;
  fit.lr = static_cast<float>(o.lr);
  fit.momentum = static_cast<float>(o.momentum);
  fit.weight_decay = static_cast<float>(o.weight_decay);
  EvalResult eval;
  for (int epoch = 1; epoch <= o.epochs; ++epoch) {
    fit.seed = DeriveSeed(o.seed, {static_cast<uint64_t>(epoch)});
    fit.lr = static_cast<float>(o.lr * std::pow(o.lr_decay, epoch - 1));
    auto te = std::chrono::steady_clock::now();
    TRIB_ASSIGN_OR_RETURN(FitResult res, trainer->fit(weights, fit));
    weights = std::move(res.weights);
    TRIB_ASSIGN_OR_RETURN(eval, trainer->evaluate(weights, EvalConfig{}));
    std::printf(
        "epoch %2d/%d  loss %.4f  train-acc %5.2f%%  test-loss %.4f  test-acc %5.2f%%  %8.0f "
        "samples/s  %.1fs\n",
        epoch, o.epochs, res.metrics["train_loss"], 100 * res.metrics["train_accuracy"], eval.loss,
        100 * eval.accuracy, res.metrics["samples_per_second"],
        std::chrono::duration<double>(std::chrono::steady_clock::now() - te).count());
    std::fflush(stdout);
  }
  std::printf("final test accuracy: %.2f%% (%lld examples), model %s, %d epochs, %.0fs total\n",
              100 * eval.accuracy, static_cast<long long>(eval.num_examples), spec.name.c_str(),
              o.epochs,
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  if (!o.save.empty()) {
    char acc[32];
    std::snprintf(acc, sizeof(acc), "%.4f", eval.accuracy);
    TRIB_RETURN_IF_ERROR(SaveSafetensors(weights, o.save,
                                         {{"model", spec.name},
                                          {"epochs", std::to_string(o.epochs)},
                                          {"test_accuracy", acc},
                                          {"producer", "tributary-train"}}));
    std::printf("saved %s\n", o.save.c_str());
  }
  return Status::Ok();
}

}  // namespace
}  // namespace tributary

int main(int argc, char** argv) {
  tributary::Options o;
  CLI::App app{
      "tributary-train: centralized training on Fashion-MNIST (the baseline for federated runs)"};
  // A flag given twice takes the last value, so wrappers such as scripts/demo can be overridden.
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.add_option("-c,--config", o.config, "TOML config file (flags override it)")
      ->check(CLI::ExistingFile);
  app.add_option("-m,--model", o.model, "model: mlp, cnn or lenet")->capture_default_str();
  app.add_option("--epochs", o.epochs, "training epochs")->capture_default_str();
  app.add_option("--batch", o.batch, "batch size")->capture_default_str();
  app.add_option("--lr", o.lr, "learning rate")->capture_default_str();
  app.add_option("--momentum", o.momentum, "SGD momentum")->capture_default_str();
  app.add_option("--weight-decay", o.weight_decay, "L2 weight decay")->capture_default_str();
  app.add_option("--lr-decay", o.lr_decay, "multiply the learning rate by this after each epoch")
      ->capture_default_str();
  app.add_option("--seed", o.seed, "seed for initialization and shuffling")->capture_default_str();
  app.add_option("--data", o.data_dir, "Fashion-MNIST directory (IDX or IDX.gz files)")
      ->capture_default_str();
  app.add_option("--train-examples", o.train_examples,
                 "use only the first N training examples (0 = all)");
  app.add_option("--save", o.save, "write the trained model here as safetensors");
  app.add_option("--device", o.device, "cpu, auto or cuda[:N]")->capture_default_str();
  app.add_option("--log-level", o.log_level, "trace, debug, info, warn, error")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  if (!o.config.empty()) {
    if (auto s = tributary::ApplyConfigFile(app, &o); !s.ok()) {
      std::fprintf(stderr, "tributary-train: %s\n", s.ToString().c_str());
      return 2;
    }
  }
  tributary::Status s = tributary::Run(o);
  if (!s.ok()) {
    std::fprintf(stderr, "tributary-train: %s\n", s.ToString().c_str());
    return 1;
  }
  return 0;
}
