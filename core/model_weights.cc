#include "tributary/model_weights.h"

#include <cstring>
#include <unordered_set>

#include "core/hash.h"

namespace tributary {

ModelWeights::ModelWeights() : layout_(std::make_shared<const Layout>()) {}

Result<ModelWeights> ModelWeights::Create(const LayoutSpec& spec, size_t max_floats) {
  auto layout = std::make_shared<Layout>();
  std::unordered_set<std::string> seen;
  size_t total = 0;
  Fnv1a64 fp;
  for (const auto& [name, shape] : spec) {
    if (name.empty()) return Status::InvalidArgument("tensor name is empty");
    if (!seen.insert(name).second) return Status::InvalidArgument("tensor name repeated: " + name);
    size_t numel = 1;
    for (int64_t d : shape) {
      if (d < 0) return Status::InvalidArgument("tensor " + name + " has a negative dimension");
      if (d != 0 && numel > max_floats / static_cast<size_t>(d))
        return Status::OutOfRange("tensor " + name + " exceeds the size cap");
      numel *= static_cast<size_t>(d);
    }
    if (numel > max_floats - total)
      return Status::OutOfRange("model exceeds the cap of " + std::to_string(max_floats) +
                                " floats");
    layout->tensors.push_back(TensorInfo{name, shape, total, numel});
    total += numel;
    fp.Add(name.data(), name.size() + 1);  // include the terminator so "ab","c" != "a","bc"
    uint64_t ndim = shape.size();
    fp.Add(&ndim, sizeof(ndim));
    fp.Add(shape.data(), shape.size() * sizeof(int64_t));
  }
  layout->fingerprint = fp.value();
  ModelWeights w;
  w.layout_ = std::move(layout);
  w.data_.assign(total, 0.0f);
  return w;
}

ModelWeights ModelWeights::ZerosLike() const {
  ModelWeights w;
  w.layout_ = layout_;
  w.data_.assign(data_.size(), 0.0f);
  return w;
}

const std::vector<TensorInfo>& ModelWeights::tensors() const { return layout_->tensors; }

std::span<float> ModelWeights::tensor(size_t index) {
  const TensorInfo& t = layout_->tensors.at(index);
  return std::span<float>(data_).subspan(t.offset, t.numel);
}

std::span<const float> ModelWeights::tensor(size_t index) const {
  const TensorInfo& t = layout_->tensors.at(index);
  return std::span<const float>(data_).subspan(t.offset, t.numel);
}

const TensorInfo* ModelWeights::find(std::string_view name) const {
  for (const auto& t : layout_->tensors)
    if (t.name == name) return &t;
  return nullptr;
}

uint64_t ModelWeights::fingerprint() const { return layout_->fingerprint; }

uint64_t ModelWeights::content_hash() const {
  Fnv1a64 h;
  uint64_t fp = fingerprint();
  h.Add(&fp, sizeof(fp));
  h.Add(data_.data(), data_.size() * sizeof(float));
  return h.value();
}

bool ModelWeights::same_layout(const ModelWeights& other) const {
  if (layout_ == other.layout_) return true;
  if (fingerprint() != other.fingerprint() || size() != other.size()) return false;
  const auto& a = tensors();
  const auto& b = other.tensors();
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].name != b[i].name || a[i].shape != b[i].shape) return false;
  return true;
}

bool operator==(const ModelWeights& a, const ModelWeights& b) {
  return a.same_layout(b) &&
         (a.data_.empty() || std::memcmp(a.data_.data(), b.data_.data(), a.size_bytes()) == 0);
}

}  // namespace tributary
