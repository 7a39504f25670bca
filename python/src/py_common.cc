#include "py_common.h"

#include <fmt/format.h>

#include <vector>

namespace tributary::python {
namespace {

py::object& ErrorType() {
  static py::object* type = nullptr;  // set once at import; lives as long as the interpreter
  if (!type) type = new py::object();
  return *type;
}

}  // namespace

void RegisterError(py::module_& m) {
  py::object error = py::reinterpret_steal<py::object>(
      PyErr_NewExceptionWithDoc("tributary.Error",
                                "A Tributary call failed. `code` is the status code's name "
                                "(e.g. 'InvalidArgument', 'FailedPrecondition'); the message "
                                "says what was wrong.",
                                PyExc_RuntimeError, nullptr));
  if (!error) throw py::error_already_set();
  m.attr("Error") = error;
  ErrorType() = error;
}

void ThrowStatus(const Status& status) {
  py::object err = ErrorType()(status.message());
  err.attr("code") = std::string(StatusCodeName(status.code()));
  PyErr_SetObject(ErrorType().ptr(), err.ptr());
  throw py::error_already_set();
}

py::dict WeightsToDict(const ModelWeights& weights) {
  py::dict out;
  for (size_t i = 0; i < weights.num_tensors(); ++i) {
    const TensorInfo& t = weights.tensors()[i];
    py::array_t<float> a(std::vector<py::ssize_t>(t.shape.begin(), t.shape.end()));
    std::span<const float> src = weights.tensor(i);
    std::copy(src.begin(), src.end(), a.mutable_data());
    out[py::str(t.name)] = std::move(a);
  }
  return out;
}

Result<ModelWeights> WeightsFromMapping(py::handle mapping, std::string_view what) {
  using FloatArray = py::array_t<float, py::array::c_style | py::array::forcecast>;
  if (!py::hasattr(mapping, "items"))
    return Status::InvalidArgument(
        fmt::format("{} is a {}, not a mapping of tensor name -> array (e.g. a dict, or a "
                    "torch state_dict)",
                    what, std::string(py::str(mapping.get_type().attr("__name__")))));
  ModelWeights::LayoutSpec layout;
  std::vector<FloatArray> arrays;
  for (py::handle item : mapping.attr("items")()) {
    py::tuple kv = py::reinterpret_borrow<py::tuple>(item);
    if (!py::isinstance<py::str>(kv[0]))
      return Status::InvalidArgument(
          fmt::format("{} has a key that is not a str: {}", what, std::string(py::repr(kv[0]))));
    std::string name = kv[0].cast<std::string>();
    py::object value = kv[1];
    if (py::hasattr(value, "detach") && py::hasattr(value, "numpy"))  // a torch tensor
      value = value.attr("detach")().attr("cpu")().attr("numpy")();
    FloatArray a = FloatArray::ensure(value);
    if (!a) {
      PyErr_Clear();
      return Status::InvalidArgument(
          fmt::format("{} has tensor '{}' of type {}, which does not convert to a float32 array",
                      what, name, std::string(py::str(value.get_type().attr("__name__")))));
    }
    std::vector<int64_t> shape(a.shape(), a.shape() + a.ndim());
    layout.emplace_back(std::move(name), std::move(shape));
    arrays.push_back(std::move(a));
  }
  Result<ModelWeights> w = ModelWeights::Create(layout);
  if (!w.ok()) return w.status().WithContext(std::string(what));
  for (size_t i = 0; i < arrays.size(); ++i) {
    std::span<float> dst = w->tensor(i);
    std::copy(arrays[i].data(), arrays[i].data() + dst.size(), dst.begin());
  }
  return w;
}

std::string DescribePythonError(const py::error_already_set& e) { return e.what(); }

}  // namespace tributary::python
