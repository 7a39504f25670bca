#include "py_trainer.h"

#include <fmt/format.h>
#include <pybind11/stl.h>

#include <cmath>

#include "py_common.h"
#include "py_split_exchange.h"

namespace tributary::python {
namespace {

Status PythonFailure(std::string_view method, const py::error_already_set& e) {
  return Status::Internal(fmt::format("trainer.{}() raised {}", method, DescribePythonError(e)));
}

// Any other C++ exception from pybind11 (a failed cast, a type error) while reading a result.
Status BindingFailure(std::string_view method, const std::exception& e) {
  return Status::InvalidArgument(
      fmt::format("trainer.{}() returned a value that does not convert: {}", method, e.what()));
}

// Reads `metrics` (a mapping of str -> number, or None) into `out`.
Status ReadMetrics(py::handle metrics, std::string_view method, Metrics* out) {
  if (metrics.is_none()) return Status::Ok();
  if (!py::isinstance<py::dict>(metrics))
    return Status::InvalidArgument(
        fmt::format("trainer.{}() returned metrics that are not a dict of str -> float", method));
  for (auto [k, v] : py::reinterpret_borrow<py::dict>(metrics)) {
    if (!py::isinstance<py::str>(k))
      return Status::InvalidArgument(
          fmt::format("trainer.{}() returned a metric name that is not a str", method));
    try {
      (*out)[k.cast<std::string>()] = v.cast<double>();
    } catch (const py::cast_error&) {
      return Status::InvalidArgument(
          fmt::format("trainer.{}() returned metric '{}' = {}, not a "
                      "number",
                      method, k.cast<std::string>(), std::string(py::repr(v))));
    }
  }
  return Status::Ok();
}

// The fields of a result object, or of a tuple in `names`' order (the first `required` given).
Result<std::vector<py::object>> Fields(py::handle result, std::string_view method,
                                       std::initializer_list<const char*> names, size_t required) {
  std::vector<py::object> out;
  if (py::isinstance<py::tuple>(result) || py::isinstance<py::list>(result)) {
    py::sequence seq = py::reinterpret_borrow<py::sequence>(result);
    if (seq.size() < required || seq.size() > names.size())
      return Status::InvalidArgument(
          fmt::format("trainer.{}() returned a sequence of {} items; expected {} to {}: ({})",
                      method, seq.size(), required, names.size(), fmt::join(names, ", ")));
    for (size_t i = 0; i < names.size(); ++i) {
      if (i < seq.size())
        out.push_back(py::reinterpret_borrow<py::object>(seq[i]));
      else
        out.push_back(py::none());
    }
    return out;
  }
  for (const char* name : names) {
    if (!py::hasattr(result, name))
      return Status::InvalidArgument(fmt::format(
          "trainer.{}() returned a {} without '{}'; return tributary.{} or a tuple ({})", method,
          std::string(py::str(result.get_type().attr("__name__"))), name,
          method == "evaluate" ? "EvalResult" : "FitResult", fmt::join(names, ", ")));
    out.push_back(result.attr(name));
  }
  return out;
}

// A fit()'s or fit_split()'s return value (py_trainer.h).
Result<FitResult> ReadFitResult(py::handle r, std::string_view method) {
  TRIB_ASSIGN_OR_RETURN(std::vector<py::object> f,
                        Fields(r, method, {"parameters", "num_examples", "metrics"}, 2));
  FitResult out;
  TRIB_ASSIGN_OR_RETURN(
      out.weights,
      WeightsFromMapping(f[0], fmt::format("trainer.{}() returned parameters that", method)));
  try {
    out.num_examples = f[1].cast<int64_t>();
  } catch (const py::cast_error&) {
    return Status::InvalidArgument(
        fmt::format("trainer.{}() returned num_examples = {}, not an int", method,
                    std::string(py::repr(f[1]))));
  }
  TRIB_RETURN_IF_ERROR(ReadMetrics(f[2], method, &out.metrics));
  return out;
}

}  // namespace

PyTrainer::PyTrainer(py::object trainer) : trainer_(std::move(trainer)) {}

PyTrainer::~PyTrainer() {
  py::gil_scoped_acquire gil;
  trainer_ = py::object();
}

Result<ModelWeights> PyTrainer::get_parameters() {
  py::gil_scoped_acquire gil;
  try {
    py::object params = trainer_.attr("get_parameters")();
    return WeightsFromMapping(params, "trainer.get_parameters() returned a value that");
  } catch (const py::error_already_set& e) {
    return PythonFailure("get_parameters", e);
  } catch (const std::exception& e) {
    return BindingFailure("get_parameters", e);
  }
}

Result<FitResult> PyTrainer::fit(const ModelWeights& global, const FitConfig& config) {
  py::gil_scoped_acquire gil;
  try {
    return ReadFitResult(trainer_.attr("fit")(WeightsToDict(global), config), "fit");
  } catch (const py::error_already_set& e) {
    return PythonFailure("fit", e);
  } catch (const std::exception& e) {
    return BindingFailure("fit", e);
  }
}

Result<FitResult> PyTrainer::fit_split(const ModelWeights& global, const FitConfig& config,
                                       SplitExchange& server) {
  py::gil_scoped_acquire gil;
  if (!py::hasattr(trainer_, "fit_split"))
    return Status::Unimplemented(
        "this trainer has no fit_split(parameters, config, exchange): a split client's trainer "
        "derives from tributary.SplitTrainer (docs/split.md)");
  auto exchange = std::make_shared<PySplitExchange>(&server);
  // Whatever happens, the Python object outlives this call only as an invalid one.
  struct Closer {
    PySplitExchange* e;
    ~Closer() { e->Close(); }
  } closer{exchange.get()};
  Result<FitResult> out = Status::Internal("fit_split did not return");
  try {
    out = ReadFitResult(
        trainer_.attr("fit_split")(WeightsToDict(global), config, py::cast(exchange)), "fit_split");
  } catch (const py::error_already_set& e) {
    out = PythonFailure("fit_split", e);
  } catch (const std::exception& e) {
    out = BindingFailure("fit_split", e);
  }
  // A batch that failed ends the task with that failure (DeadlineExceeded, Aborted, ...), also
  // when fit_split caught the exception and returned a result.
  if (std::optional<Status> failed = exchange->Close()) return *failed;
  return out;
}

Result<EvalResult> PyTrainer::evaluate(const ModelWeights& weights, const EvalConfig& config) {
  py::gil_scoped_acquire gil;
  try {
    py::object r = trainer_.attr("evaluate")(WeightsToDict(weights), config);
    TRIB_ASSIGN_OR_RETURN(
        std::vector<py::object> f,
        Fields(r, "evaluate", {"loss", "accuracy", "num_examples", "metrics"}, 3));
    EvalResult out;
    try {
      out.loss = f[0].cast<double>();
      out.accuracy = f[1].cast<double>();
      out.num_examples = f[2].cast<int64_t>();
    } catch (const py::cast_error&) {
      return Status::InvalidArgument(
          "trainer.evaluate() returned loss, accuracy, num_examples that are not numbers: " +
          std::string(py::repr(r)));
    }
    TRIB_RETURN_IF_ERROR(ReadMetrics(f[3], "evaluate", &out.metrics));
    return out;
  } catch (const py::error_already_set& e) {
    return PythonFailure("evaluate", e);
  } catch (const std::exception& e) {
    return BindingFailure("evaluate", e);
  }
}

}  // namespace tributary::python
