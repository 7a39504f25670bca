// Trainer: the seam between federated rounds and local training.
//
// The client runtime calls get_parameters / fit / evaluate; it never sees how training happens.
// Embedding apps implement Trainer with their own framework; NativeTrainer (train/native_trainer.h)
// implements it with Tributary's own engine. The names follow Flower's client API (FitIns/FitRes).
//
// Contract: fit() trains starting from `global` (whose layout must match the trainer's model) and
// returns the new weights, not a delta; the caller computes the delta. num_examples is the count
// of training examples the update represents (it becomes the FedAvg weight): at least 1, and the
// weights finite, or the task fails with an error naming which (the coordinator would refuse the
// update). A Trainer is used from one thread at a time.
//
// Stopping early: the client sets FitConfig::stop, and requests it when nobody will accept the
// result any more (the connection the task came on is lost, or the client is stopping). A fit()
// that checks config.stop.stop_requested() between batches, and returns as soon as it is true (any
// result or status: it is discarded), saves that work; one that never checks is still correct,
// it just trains to the end for nothing. NativeTrainer checks before every batch.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <stop_token>
#include <string>
#include <vector>

#include "tributary/model_weights.h"
#include "tributary/result.h"

namespace tributary {

using Metrics = std::map<std::string, double>;

struct FitConfig {
  int epochs = 1;
  int batch_size = 32;
  float lr = 0.05f;
  float momentum = 0.0f;
  float weight_decay = 0.0f;
  // FedProx: adds mu/2 * ||w - w_global||^2 to the local objective (0 disables it).
  float proximal_mu = 0.0f;
  // Caps the optimizer steps of this fit (0 means no cap); useful for quick rounds and tests.
  int64_t max_steps = 0;
  // Seeds the shuffling of local data; the round engine derives it per client and round.
  uint64_t seed = 0;
  // The local optimizer: "sgd" (with `momentum` above), "adam" or "adamw" (Kingma & Ba, ICLR
  // 2015; Loshchilov & Hutter, ICLR 2019), with PyTorch's semantics: beta1, beta2 and eps are
  // Adam's; weight_decay is added to the gradient for "sgd" and "adam" (L2) and decoupled for
  // "adamw" (w -= lr * weight_decay * w before the step); momentum must be 0 with Adam (beta1 is
  // its momentum). See optimizer_state for how long the optimizer's state lives.
  std::string optimizer = "sgd";
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float eps = 1e-8f;
  // "reset" (the default): the optimizer's state (momentum, Adam's moments and step count) starts
  // from zero every fit; "keep": a trainer that can (NativeTrainer) carries it from one fit to the
  // next on this client, as one optimizer run across rounds (lost when the client restarts).
  std::string optimizer_state = "reset";
  // Requested when the result is no longer wanted (see "Stopping early" above). Set by the client
  // runtime, never sent on the wire, and not part of the value (operator== ignores it). The
  // default token is never requested.
  std::stop_token stop{};
  // SCAFFOLD (Karimireddy et al., ICML 2020): the drift correction c - c_i, one value per
  // parameter in the layout's order, or empty. A trainer that applies it (see
  // Trainer::applies_correction) ends every optimizer step with w -= lr * correction, outside any
  // momentum. Set by the client runtime from the task's server control variate and the client's
  // own, never sent on the wire, not part of the value; valid for the duration of fit().
  std::span<const float> correction{};

  friend bool operator==(const FitConfig& a, const FitConfig& b) {
    return a.epochs == b.epochs && a.batch_size == b.batch_size && a.lr == b.lr &&
           a.momentum == b.momentum && a.weight_decay == b.weight_decay &&
           a.proximal_mu == b.proximal_mu && a.max_steps == b.max_steps && a.seed == b.seed &&
           a.optimizer == b.optimizer && a.beta1 == b.beta1 && a.beta2 == b.beta2 &&
           a.eps == b.eps && a.optimizer_state == b.optimizer_state;
  }
};

struct FitResult {
  ModelWeights weights;
  int64_t num_examples = 0;
  Metrics metrics;  // e.g. "train_loss", "train_accuracy", "samples_per_second"
  // The optimizer steps fit() took (SCAFFOLD's client divides its model change by steps * lr);
  // 0 when the trainer does not say. Last, so that FitResult{weights, n, metrics} still builds.
  int64_t steps = 0;
};

struct EvalConfig {
  int batch_size = 256;
  int64_t max_examples = 0;  // 0 means the whole evaluation set
};

struct EvalResult {
  double loss = 0.0;
  double accuracy = 0.0;
  int64_t num_examples = 0;
  Metrics metrics;
};

// Split learning (docs/split.md): the server's half of one batch's training step, for
// Trainer::fit_split. What the coordinator answers to a batch's activations at the cut.
struct CutGradient {
  // The gradient of the batch's mean loss with respect to the activations: as many values as the
  // activations sent, in the same order.
  std::vector<float> gradient;
  double loss_sum = 0.0;  // the server part's loss, summed over the batch's samples
  int64_t correct = 0;    // samples the server part classified correctly
};

// The channel to the server part during a split fit, given by the client runtime. Used from the
// thread that calls fit_split, one batch at a time.
class SplitExchange {
 public:
  virtual ~SplitExchange() = default;
  // Sends one batch's activations at the cut (labels.size() samples, each sample's values one
  // after another) and waits for the gradient. An error (the connection was lost, the server
  // refused the batch, the fit was stopped) should end the fit with it.
  virtual Result<CutGradient> Exchange(std::span<const float> activations,
                                       std::span<const uint8_t> labels) = 0;
  // The U-shaped (label-private) split, where the device also holds the model's head and the
  // labels never leave it (docs/split.md), takes two exchanges per batch instead: ExchangeFront
  // sends the activations at the first cut of `samples` samples (no labels) and writes the server
  // part's output, the head's input, to `middle` (samples times the head's input size);
  // ExchangeHead then sends the gradient of the batch's mean loss with respect to `middle` (the
  // same size), with the head's loss summed over the batch and its correct count, and returns the
  // gradient at the first cut (as many values as the activations; its loss and correct are the
  // head's, echoed). Errors as Exchange's. The default refuses (Unimplemented).
  virtual Status ExchangeFront(std::span<const float> activations, int64_t samples,
                               std::span<float> middle) {
    (void)activations;
    (void)samples;
    (void)middle;
    return Status::Unimplemented("this split exchange has no U-shaped split (ExchangeFront)");
  }
  virtual Result<CutGradient> ExchangeHead(std::span<const float> gradient, double loss_sum,
                                           int64_t correct) {
    (void)gradient;
    (void)loss_sum;
    (void)correct;
    return Status::Unimplemented("this split exchange has no U-shaped split (ExchangeHead)");
  }
};

class Trainer {
 public:
  virtual ~Trainer() = default;
  // The trainer's current weights (initial weights before any fit).
  virtual Result<ModelWeights> get_parameters() = 0;
  virtual Result<FitResult> fit(const ModelWeights& global, const FitConfig& config) = 0;
  virtual Result<EvalResult> evaluate(const ModelWeights& weights, const EvalConfig& config) = 0;
  // Whether fit() applies FitConfig::correction (SCAFFOLD) and reports FitResult::steps. A client
  // whose trainer does not refuses a SCAFFOLD task, rather than train without the correction.
  virtual bool applies_correction() const { return false; }
  // Split learning: trains the device part of a cut model (the layout of get_parameters()) from
  // `global` as fit() does, except that each batch's forward ends at the cut, goes to `server`,
  // and the backward starts from the gradient it returns; FitResult as fit()'s (its train_loss
  // and train_accuracy are the server part's). Labels travel as bytes: at most 256 classes.
  // Optional: the default returns Unimplemented (NativeTrainer has it).
  virtual Result<FitResult> fit_split(const ModelWeights& global, const FitConfig& config,
                                      SplitExchange& server) {
    (void)global;
    (void)config;
    (void)server;
    return Status::Unimplemented("this trainer does not implement split learning (fit_split)");
  }
  // The model's outputs for `count` samples stored one after another in `inputs` (each sample's
  // values in the trainer's own input layout), computed with `weights` (the layout of
  // get_parameters()); for a classifier, count rows of class probabilities. Optional: the default
  // returns Unimplemented. Client::predict() calls it with the latest global model.
  virtual Result<std::vector<float>> predict(const ModelWeights& weights,
                                             std::span<const float> inputs, int64_t count) {
    (void)weights;
    (void)inputs;
    (void)count;
    return Status::Unimplemented("this trainer does not implement predict");
  }
};

}  // namespace tributary
