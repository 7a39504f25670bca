// Shared pieces of the Python bindings (module _tributary): Status -> tributary.Error, and model
// weights <-> Python mappings of NumPy arrays.
//
// Weights cross the boundary as a dict {tensor name: numpy.ndarray (float32)} whose insertion
// order is the layout order (ModelWeights keeps names, shapes and order; the order is part of the
// layout the coordinator agrees on). Arrays are copies: Python may keep or change them freely.
// Anything a mapping of array-likes gives is accepted back: NumPy arrays of any float dtype, and
// CPU torch tensors (through the __array__ protocol); values are converted to float32.
//
// Every function here needs the GIL.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <string_view>

#include "tributary/model_weights.h"
#include "tributary/status.h"

namespace tributary::python {

namespace py = pybind11;

// Raises tributary.Error(message) with .code set to the StatusCode's name ("InvalidArgument",
// ...). Registered by RegisterError, which must run first.
[[noreturn]] void ThrowStatus(const Status& status);
void RegisterError(py::module_& m);

// Unwraps a Result or raises tributary.Error.
template <class T>
T Unwrap(Result<T> r) {
  if (!r.ok()) ThrowStatus(r.status());
  return std::move(r).value();
}
inline void Check(const Status& s) {
  if (!s.ok()) ThrowStatus(s);
}

py::dict WeightsToDict(const ModelWeights& weights);

// InvalidArgument naming `what` (e.g. "fit() returned parameters that") when `mapping` is not a
// mapping of str -> array-like, or a value does not convert to a float32 array.
Result<ModelWeights> WeightsFromMapping(py::handle mapping, std::string_view what);

// The text of the Python exception being handled ("ValueError: ..." and its traceback).
std::string DescribePythonError(const py::error_already_set& e);

}  // namespace tributary::python
