#include "core/fit_config.h"

#include <fmt/format.h>

#include <cmath>

namespace tributary {

void BindFitConfig(ConfigSchema& s, FitConfig* f) {
  s.Bind("fit.epochs", &f->epochs, "local epochs per round").Flag("--epochs");
  s.Bind("fit.batch_size", &f->batch_size, "local minibatch size").Flag("--batch");
  s.Bind("fit.lr", &f->lr, "local SGD learning rate").Flag("--lr");
  s.Bind("fit.momentum", &f->momentum, "local SGD momentum, in [0, 1)");
  s.Bind("fit.weight_decay", &f->weight_decay, "local L2 weight decay, >= 0");
  s.Bind("fit.proximal_mu", &f->proximal_mu,
         "FedProx proximal term mu, >= 0 (a fedprox strategy sets its own)");
  s.Bind("fit.max_steps", &f->max_steps, "cap on local optimizer steps per round (0: none)");
  s.Bind("fit.optimizer", &f->optimizer,
         "local optimizer: sgd (with fit.momentum), adam, or adamw (decoupled weight decay)");
  s.Bind("fit.beta1", &f->beta1, "Adam's first-moment decay, in [0, 1)");
  s.Bind("fit.beta2", &f->beta2, "Adam's second-moment decay, in [0, 1)");
  s.Bind("fit.eps", &f->eps, "Adam's denominator term, > 0");
  s.Bind("fit.optimizer_state", &f->optimizer_state,
         "reset: the optimizer's state starts from zero every round; keep: each client carries it "
         "from round to round");
}

Status ValidateFitConfig(const FitConfig& f) {
  auto bad = [](const char* key, auto value, const char* range) {
    return Status::InvalidArgument(fmt::format("key '{}' = {} must be {}", key, value, range));
  };
  if (f.epochs < 1) return bad("fit.epochs", f.epochs, ">= 1");
  if (f.batch_size < 1) return bad("fit.batch_size", f.batch_size, ">= 1");
  if (!(f.lr > 0.0f) || !std::isfinite(f.lr)) return bad("fit.lr", f.lr, "> 0");
  if (!(f.momentum >= 0.0f && f.momentum < 1.0f))
    return bad("fit.momentum", f.momentum, "in [0, 1)");
  if (!(f.weight_decay >= 0.0f) || !std::isfinite(f.weight_decay))
    return bad("fit.weight_decay", f.weight_decay, ">= 0");
  if (!(f.proximal_mu >= 0.0f) || !std::isfinite(f.proximal_mu))
    return bad("fit.proximal_mu", f.proximal_mu, ">= 0");
  if (f.max_steps < 0) return bad("fit.max_steps", f.max_steps, ">= 0 (0: no cap)");
  if (f.optimizer != "sgd" && f.optimizer != "adam" && f.optimizer != "adamw")
    return bad("fit.optimizer", "'" + f.optimizer + "'", "'sgd', 'adam' or 'adamw'");
  if (f.optimizer != "sgd" && f.momentum != 0.0f)
    return Status::InvalidArgument(fmt::format(
        "key 'fit.momentum' = {} applies to fit.optimizer 'sgd'; {}'s momentum is fit.beta1: set "
        "fit.momentum = 0",
        f.momentum, f.optimizer));
  if (!(f.beta1 >= 0.0f && f.beta1 < 1.0f)) return bad("fit.beta1", f.beta1, "in [0, 1)");
  if (!(f.beta2 >= 0.0f && f.beta2 < 1.0f)) return bad("fit.beta2", f.beta2, "in [0, 1)");
  if (!(f.eps > 0.0f) || !std::isfinite(f.eps)) return bad("fit.eps", f.eps, "> 0");
  if (f.optimizer_state != "reset" && f.optimizer_state != "keep")
    return bad("fit.optimizer_state", "'" + f.optimizer_state + "'", "'reset' or 'keep'");
  return Status::Ok();
}

}  // namespace tributary
