#include "mlp_trainer.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <string>

namespace edge_app {

using tributary::EvalResult;
using tributary::FitResult;
using tributary::ModelWeights;
using tributary::Result;
using tributary::Status;

MlpTrainer::MlpTrainer(std::vector<int> widths, Examples train, Examples eval, uint64_t seed)
    : widths_(std::move(widths)), train_(std::move(train)), eval_(std::move(eval)), seed_(seed) {}

Result<ModelWeights> MlpTrainer::get_parameters() {
  ModelWeights::LayoutSpec layout;
  for (size_t l = 0; l + 1 < widths_.size(); ++l) {
    const std::string name = "fc" + std::to_string(l + 1);
    layout.emplace_back(name + ".weight", std::vector<int64_t>{widths_[l + 1], widths_[l]});
    layout.emplace_back(name + ".bias", std::vector<int64_t>{widths_[l + 1]});
  }
  Result<ModelWeights> w = ModelWeights::Create(layout);
  if (!w.ok()) return w.status();
  // He initialization; the coordinator sends its own weights, so this only matters offline.
  std::mt19937_64 rng(seed_);
  for (size_t l = 0; l + 1 < widths_.size(); ++l) {
    std::normal_distribution<float> init(0.0f, std::sqrt(2.0f / static_cast<float>(widths_[l])));
    for (float& v : w->tensor(2 * l)) v = init(rng);
  }
  return w;
}

std::pair<double, int64_t> MlpTrainer::Forward(const ModelWeights& w, const Examples& data,
                                               const std::vector<int64_t>& order, int64_t begin,
                                               int64_t n) {
  const size_t layers = widths_.size() - 1;
  acts_.resize(layers + 1);
  acts_[0].resize(static_cast<size_t>(n) * widths_[0]);
  for (int64_t i = 0; i < n; ++i)
    std::copy_n(&data.x[order[begin + i] * widths_[0]], widths_[0], &acts_[0][i * widths_[0]]);
  for (size_t l = 0; l < layers; ++l) {
    const int in = widths_[l], out = widths_[l + 1];
    std::span<const float> W = w.tensor(2 * l), b = w.tensor(2 * l + 1);
    acts_[l + 1].assign(static_cast<size_t>(n) * out, 0.0f);
    for (int64_t i = 0; i < n; ++i) {
      const float* a = &acts_[l][i * in];
      float* z = &acts_[l + 1][i * out];
      for (int o = 0; o < out; ++o) {
        const float* row = &W[static_cast<size_t>(o) * in];
        float s = b[o];
        for (int k = 0; k < in; ++k) s += row[k] * a[k];
        z[o] = (l + 1 < layers) ? std::max(s, 0.0f) : s;  // ReLU between layers
      }
    }
  }
  // Softmax cross-entropy on the logits, in place (the last activation becomes probabilities).
  double loss = 0.0;
  int64_t correct = 0;
  const int classes = widths_.back();
  for (int64_t i = 0; i < n; ++i) {
    float* z = &acts_[layers][i * classes];
    const int label = data.y[order[begin + i]];
    const float mx = *std::max_element(z, z + classes);
    correct += (std::max_element(z, z + classes) - z) == label;
    double sum = 0.0;
    for (int c = 0; c < classes; ++c) sum += std::exp(static_cast<double>(z[c] - mx));
    loss += std::log(sum) - (z[label] - mx);
    for (int c = 0; c < classes; ++c) z[c] = static_cast<float>(std::exp(z[c] - mx) / sum);
  }
  return {loss, correct};
}

void MlpTrainer::BackwardAndStep(ModelWeights& w, const Examples& data,
                                 const std::vector<int64_t>& order, int64_t begin, int64_t n,
                                 float lr, float weight_decay) {
  const size_t layers = widths_.size() - 1;
  const int classes = widths_.back();
  // dL/dlogits = (softmax - onehot) / n.
  std::vector<float> grad(acts_[layers]);
  for (int64_t i = 0; i < n; ++i) grad[i * classes + data.y[order[begin + i]]] -= 1.0f;
  for (float& g : grad) g /= static_cast<float>(n);
  for (size_t l = layers; l-- > 0;) {
    const int in = widths_[l], out = widths_[l + 1];
    std::span<float> W = w.tensor(2 * l), b = w.tensor(2 * l + 1);
    std::vector<float> prev;
    if (l > 0) {  // the gradient for the layer below, through this layer's weights and its ReLU
      prev.assign(static_cast<size_t>(n) * in, 0.0f);
      for (int64_t i = 0; i < n; ++i)
        for (int o = 0; o < out; ++o) {
          const float g = grad[i * out + o];
          const float* row = &W[static_cast<size_t>(o) * in];
          for (int k = 0; k < in; ++k) prev[i * in + k] += g * row[k];
        }
      for (size_t j = 0; j < prev.size(); ++j)
        if (acts_[l][j] <= 0.0f) prev[j] = 0.0f;
    }
    for (int o = 0; o < out; ++o) {
      float* row = &W[static_cast<size_t>(o) * in];
      float db = 0.0f;
      for (int64_t i = 0; i < n; ++i) {
        const float g = grad[i * out + o];
        db += g;
        const float* a = &acts_[l][i * in];
        for (int k = 0; k < in; ++k) row[k] -= lr * g * a[k];
      }
      if (weight_decay > 0.0f)
        for (int k = 0; k < in; ++k) row[k] -= lr * weight_decay * row[k];
      b[o] -= lr * db;
    }
    grad = std::move(prev);
  }
}

Result<FitResult> MlpTrainer::fit(const ModelWeights& global, const tributary::FitConfig& config) {
  if (config.epochs < 1 || config.batch_size < 1)
    return Status::InvalidArgument("epochs and batch_size must be >= 1");
  FitResult out;
  out.weights = global;
  std::vector<int64_t> order(static_cast<size_t>(train_.size()));
  std::iota(order.begin(), order.end(), 0);
  std::mt19937_64 rng(config.seed);
  double loss = 0.0;
  int64_t correct = 0, seen = 0, steps = 0;
  for (int e = 0; e < config.epochs; ++e) {
    std::shuffle(order.begin(), order.end(), rng);
    loss = 0.0;
    correct = seen = 0;
    for (int64_t begin = 0; begin < train_.size(); begin += config.batch_size) {
      if (config.max_steps > 0 && steps >= config.max_steps) break;
      const int64_t n = std::min<int64_t>(config.batch_size, train_.size() - begin);
      auto [batch_loss, batch_correct] = Forward(out.weights, train_, order, begin, n);
      BackwardAndStep(out.weights, train_, order, begin, n, config.lr, config.weight_decay);
      loss += batch_loss;
      correct += batch_correct;
      seen += n;
      ++steps;
    }
  }
  out.num_examples = train_.size();
  out.metrics["train_loss"] = seen ? loss / static_cast<double>(seen) : 0.0;
  out.metrics["train_accuracy"] =
      seen ? static_cast<double>(correct) / static_cast<double>(seen) : 0.0;
  return out;
}

Result<EvalResult> MlpTrainer::evaluate(const ModelWeights& weights,
                                        const tributary::EvalConfig& config) {
  int64_t n = eval_.size();
  if (config.max_examples > 0) n = std::min(n, config.max_examples);
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  double loss = 0.0;
  int64_t correct = 0;
  const int64_t batch = std::max(1, config.batch_size);
  for (int64_t begin = 0; begin < n; begin += batch) {
    auto [l, c] = Forward(weights, eval_, order, begin, std::min(batch, n - begin));
    loss += l;
    correct += c;
  }
  EvalResult r;
  r.num_examples = n;
  r.loss = n ? loss / static_cast<double>(n) : 0.0;
  r.accuracy = n ? static_cast<double>(correct) / static_cast<double>(n) : 0.0;
  return r;
}

}  // namespace edge_app
