#include "py_split_exchange.h"

#include <fmt/format.h>
#include <pybind11/numpy.h>

#include <vector>

#include "py_common.h"

namespace tributary::python {

namespace {
using FloatArray = py::array_t<float, py::array::c_style | py::array::forcecast>;
}  // namespace

void PySplitExchange::CheckUsable() const {
  if (!server_)
    ThrowStatus(Status::FailedPrecondition(
        "this SplitExchange is no longer valid: use it only during the fit_split call it was "
        "given to"));
  if (std::this_thread::get_id() != thread_)
    ThrowStatus(Status::FailedPrecondition(
        "SplitExchange called from another thread than fit_split's: it carries one batch at a "
        "time, from the thread that runs fit_split"));
}

void PySplitExchange::Fail(const Status& s) {
  if (!failure_) failure_ = s;
  ThrowStatus(s);
}

py::array_t<float> PySplitExchange::Front(py::handle activations, int64_t middle_size) {
  CheckUsable();
  FloatArray x = FloatArray::ensure(activations);
  if (!x) {
    PyErr_Clear();
    ThrowStatus(Status::InvalidArgument(
        "SplitExchange.front(activations, middle_size): activations must be an array of floats "
        "(pass a torch tensor as t.detach().numpy())"));
  }
  if (x.ndim() < 1 || x.shape(0) < 1 || x.size() == 0)
    ThrowStatus(Status::InvalidArgument(fmt::format(
        "SplitExchange.front: activations must be shaped [n, ...] with n >= 1 and at least one "
        "value per sample; got {} values in {} dimension(s)",
        x.size(), x.ndim())));
  const py::ssize_t n = x.shape(0);
  if (middle_size < 1 || middle_size > (int64_t{1} << 30))
    ThrowStatus(Status::InvalidArgument(fmt::format(
        "SplitExchange.front: middle_size (the head's input values per sample) must be in [1, "
        "2^30], got {}",
        middle_size)));
  py::array_t<float> middle(std::vector<py::ssize_t>{n, static_cast<py::ssize_t>(middle_size)});
  std::span<const float> values(x.data(), static_cast<size_t>(x.size()));
  std::span<float> out(middle.mutable_data(), static_cast<size_t>(middle.size()));
  Status s;
  {
    py::gil_scoped_release release;
    s = server_->ExchangeFront(values, n, out);
  }
  if (!s.ok()) Fail(s);
  front_shape_.assign(x.shape(), x.shape() + x.ndim());
  return middle;
}

py::array_t<float> PySplitExchange::Head(py::handle gradient, double loss_sum, int64_t correct) {
  CheckUsable();
  FloatArray g = FloatArray::ensure(gradient);
  if (!g) {
    PyErr_Clear();
    ThrowStatus(Status::InvalidArgument(
        "SplitExchange.head(gradient, loss_sum, correct): gradient must be an array of floats"));
  }
  if (front_shape_.empty())
    ThrowStatus(Status::FailedPrecondition(
        "SplitExchange.head: no batch in flight (call front(activations, middle_size) first)"));
  std::span<const float> values(g.data(), static_cast<size_t>(g.size()));
  Result<CutGradient> r = Status::Internal("not sent");
  {
    py::gil_scoped_release release;
    r = server_->ExchangeHead(values, loss_sum, correct);
  }
  if (!r.ok()) Fail(r.status());
  py::array_t<float> out(front_shape_);
  if (static_cast<size_t>(out.size()) != r->gradient.size())
    Fail(
        Status::Internal(fmt::format("SplitExchange.head: the gradient has {} values for {} "
                                     "activations",
                                     r->gradient.size(), out.size())));
  std::copy(r->gradient.begin(), r->gradient.end(), out.mutable_data());
  front_shape_.clear();
  ++batches_;
  return out;
}

py::tuple PySplitExchange::Call(py::handle activations, py::handle labels) {
  CheckUsable();
  using LabelArray = py::array_t<int64_t, py::array::c_style | py::array::forcecast>;
  // ensure() converts (copying only when it must) and gives an empty handle when it cannot.
  FloatArray x = FloatArray::ensure(activations);
  LabelArray y = LabelArray::ensure(labels);
  if (!x || !y) {
    PyErr_Clear();
    ThrowStatus(Status::InvalidArgument(
        "SplitExchange(activations, labels): activations must be an array of floats and labels "
        "an array of integers (pass a torch tensor as t.detach().numpy())"));
  }
  const py::ssize_t count = y.ndim() == 1 ? y.shape(0) : -1;
  if (count < 1)
    ThrowStatus(Status::InvalidArgument(fmt::format(
        "SplitExchange: labels must be a 1-D array of at least one label, got {} dimension(s) "
        "of {} values",
        y.ndim(), y.size())));
  if (x.ndim() < 1 || x.shape(0) != count || x.size() == 0)
    ThrowStatus(Status::InvalidArgument(fmt::format(
        "SplitExchange: activations must be shaped [n, ...] with n = {} (the labels' count) and "
        "at least one value per sample; got {} values in {} dimension(s), first {}",
        count, x.size(), x.ndim(), x.ndim() >= 1 ? x.shape(0) : 0)));
  std::vector<uint8_t> bytes(static_cast<size_t>(count));
  const int64_t* ys = y.data();
  for (py::ssize_t i = 0; i < count; ++i) {
    if (ys[i] < 0 || ys[i] > 255)
      ThrowStatus(Status::InvalidArgument(fmt::format(
          "SplitExchange: label {} (sample {}) is not a class 0..255 (labels travel as bytes)",
          ys[i], i)));
    bytes[static_cast<size_t>(i)] = static_cast<uint8_t>(ys[i]);
  }
  std::span<const float> values(x.data(), static_cast<size_t>(x.size()));
  Result<CutGradient> g = Status::Internal("not sent");
  {
    py::gil_scoped_release release;
    g = server_->Exchange(values, bytes);
  }
  if (!g.ok()) Fail(g.status());
  if (g->gradient.size() != values.size())
    ThrowStatus(
        Status::Internal(fmt::format("SplitExchange: the gradient has {} values for {} "
                                     "activations",
                                     g->gradient.size(), values.size())));
  ++batches_;
  std::vector<py::ssize_t> shape(x.shape(), x.shape() + x.ndim());
  py::array_t<float> gradient(shape);
  std::copy(g->gradient.begin(), g->gradient.end(), gradient.mutable_data());
  return py::make_tuple(std::move(gradient), g->loss_sum, g->correct);
}

std::optional<Status> PySplitExchange::Close() {
  server_ = nullptr;
  return failure_;
}

void PySplitExchange::Register(py::module_& m) {
  py::class_<PySplitExchange, std::shared_ptr<PySplitExchange>>(
      m, "SplitExchange",
      "The channel to the coordinator's server part during Trainer.fit_split (docs/split.md): "
      "exchange(activations, labels) -> (gradient, loss_sum, correct)")
      .def("__call__", &PySplitExchange::Call, py::arg("activations"), py::arg("labels"),
           "Sends one batch's activations at the cut ([n, ...] floats) and its n labels (0..255); "
           "returns the gradient of the batch's mean loss with respect to the activations (a "
           "float32 array of their shape), the server part's loss summed over the batch, and the "
           "count it classified correctly. Raises tributary.Error when the batch could not be "
           "exchanged (the task then ends with that error).")
      .def("front", &PySplitExchange::Front, py::arg("activations"), py::arg("middle_size"),
           "The U-shaped split (a run with split.head; the labels stay here): sends one batch's "
           "activations at the first cut ([n, ...] floats, no labels) and returns the server "
           "part's output, the head's input: a float32 array [n, middle_size]. Then call head().")
      .def("head", &PySplitExchange::Head, py::arg("gradient"), py::arg("loss_sum"),
           py::arg("correct"),
           "The U-shaped split: sends the gradient of the batch's mean loss with respect to what "
           "front() returned (the same size), with the head's loss summed over the batch and its "
           "correct count, and returns the gradient at the first cut (a float32 array of the "
           "activations' shape).")
      .def_property_readonly(
          "batches", [](const PySplitExchange& e) { return e.batches_; },
          "Batches exchanged so far in this fit_split.");
}

}  // namespace tributary::python
