// PyTrainer: a tributary::Trainer backed by a Python object with get_parameters(), fit() and
// evaluate() (tributary.Trainer documents them).
//
// The client runtime and the simulator call trainers from their own threads; every call takes the
// GIL for its duration, converts the weights (py_common.h), and turns a Python exception into an
// error Status carrying the exception's text, so a failing fit() becomes an Error the coordinator
// receives and the client carries on. What fit() and evaluate() may return:
//   fit:      tributary.FitResult(parameters, num_examples, metrics), or a tuple
//             (parameters, num_examples) / (parameters, num_examples, metrics)
//   evaluate: tributary.EvalResult(loss, accuracy, num_examples, metrics), or a tuple
//             (loss, accuracy, num_examples) / (loss, accuracy, num_examples, metrics)
// fit_split (split learning, docs/split.md) calls trainer.fit_split(parameters, config, exchange)
// with a tributary.SplitExchange (py_split_exchange.h) and reads what it returns as fit's; a
// trainer without fit_split is Unimplemented. A batch whose exchange failed ends the task with
// that failure, whatever fit_split then returned.
// The destructor takes the GIL to drop its reference, so the last owner may be any thread.
#pragma once

#include <pybind11/pybind11.h>

#include "tributary/trainer.h"

namespace tributary::python {

class PyTrainer final : public Trainer {
 public:
  explicit PyTrainer(pybind11::object trainer);
  ~PyTrainer() override;

  Result<ModelWeights> get_parameters() override;
  Result<FitResult> fit(const ModelWeights& global, const FitConfig& config) override;
  Result<EvalResult> evaluate(const ModelWeights& weights, const EvalConfig& config) override;
  Result<FitResult> fit_split(const ModelWeights& global, const FitConfig& config,
                              SplitExchange& server) override;

 private:
  pybind11::object trainer_;
};

}  // namespace tributary::python
