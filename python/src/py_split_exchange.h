// PySplitExchange: tributary.SplitExchange, the channel to the coordinator's server part that a
// Python trainer's fit_split(parameters, config, exchange) receives (docs/split.md).
//
// exchange(activations, labels) sends one batch and returns (gradient, loss_sum, correct) (in a
// U-shaped split, front() and head() instead, below):
//   activations: an array-like of float values shaped [n, ...] (n samples, each sample's values
//                in the device part's output layout; converted to float32, C order);
//   labels:      n integer class labels, each 0..255 (labels travel as bytes);
//   gradient:    a float32 NumPy array of the activations' shape: the gradient of the batch's mean
//                loss with respect to them; loss_sum (float) and correct (int) are the server
//                part's, summed over the batch.
// The GIL is released while the batch is on the wire. A failure (the connection was lost, the
// server refused the batch, the task's deadline passed, the task was stopped) raises
// tributary.Error; fit_split should let it propagate, and the task ends with that failure even if
// fit_split swallows it. The object is valid only during the fit_split call it was given to:
// afterwards it raises tributary.Error (FailedPrecondition).
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <optional>
#include <thread>
#include <vector>

#include "tributary/trainer.h"

namespace tributary::python {

class PySplitExchange {
 public:
  explicit PySplitExchange(SplitExchange* server)
      : server_(server), thread_(std::this_thread::get_id()) {}

  // The binding's __call__ (needs the GIL; releases it around the exchange).
  pybind11::tuple Call(pybind11::handle activations, pybind11::handle labels);
  // The U-shaped split's two exchanges of a batch (SplitExchange::ExchangeFront/ExchangeHead):
  // front(activations, middle_size) -> the head's input [n, middle_size]; head(gradient,
  // loss_sum, correct) -> the gradient at the first cut, shaped as front's activations.
  pybind11::array_t<float> Front(pybind11::handle activations, int64_t middle_size);
  pybind11::array_t<float> Head(pybind11::handle gradient, double loss_sum, int64_t correct);

  // Ends the object's use: later calls raise. Returns the first failure a call raised, if any.
  std::optional<Status> Close();

  // Registers the class tributary.SplitExchange in `m`.
  static void Register(pybind11::module_& m);

 private:
  void CheckUsable() const;                 // raises unless open and on fit_split's thread
  [[noreturn]] void Fail(const Status& s);  // keeps the first failure, raises it

  SplitExchange* server_;                       // null once closed
  std::vector<pybind11::ssize_t> front_shape_;  // the batch in flight's activations (U-shaped)
  std::thread::id thread_;                      // fit_split's: the only one that may call
  std::optional<Status> failure_;
  int64_t batches_ = 0;
};

}  // namespace tributary::python
