// logreg_client: bring your own model, in C++. A Tributary client whose model Tributary knows
// nothing about: a binary classifier on D features, either logistic regression (tensors "weight"
// [1, D] and "bias" [1]) or, with --hidden H, a two-layer net with a tanh hidden layer (tensors
// "encoder/0.W" [H, D], "encoder/0.b" [H], "head:W" [1, H], "head:b" [1]). It trains by full-batch
// gradient descent: one step per epoch with the coordinator's learning rate. The coordinator
// starts the run from a safetensors file of the same layout (run.initial_model).
//
//   logreg_client --coordinator HOST:PORT --ca ca.crt --cert me.crt --key me.key
//                 --features x.f32 --labels y.f32 --dim 20 [--hidden 8]
//
// x.f32 holds n x D float32 features (row-major, little-endian), y.f32 n float32 labels (0 or 1).
// Exit status: 0 when the coordinator completed the run, 1 otherwise (the reason is printed).
#include <tributary/client.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

namespace {

using tributary::EvalConfig;
using tributary::EvalResult;
using tributary::FitConfig;
using tributary::FitResult;
using tributary::ModelWeights;
using tributary::Result;
using tributary::Status;

std::vector<float> ReadFloats(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return {};
  std::vector<float> v(static_cast<size_t>(in.tellg()) / sizeof(float));
  in.seekg(0);
  in.read(reinterpret_cast<char*>(v.data()),
          static_cast<std::streamsize>(v.size() * sizeof(float)));
  return v;
}

// The model's forward and backward pass over the whole data set, on the flat parameter buffer in
// layout order. Returns the mean binary cross-entropy; adds the gradient to `grad` when not null.
class BinaryNet {
 public:
  BinaryNet(int64_t dim, int64_t hidden) : d_(dim), h_(hidden) {}

  ModelWeights::LayoutSpec Layout() const {
    if (h_ == 0) return {{"weight", {1, d_}}, {"bias", {1}}};
    return {{"encoder/0.W", {h_, d_}}, {"encoder/0.b", {h_}}, {"head:W", {1, h_}}, {"head:b", {1}}};
  }

  double Pass(const float* p, const std::vector<float>& x, const std::vector<float>& y, float* grad,
              int64_t* correct) const {
    const int64_t n = static_cast<int64_t>(y.size());
    const int64_t width = h_ == 0 ? d_ : h_;
    const float* w1 = p;                      // [H, D] (H > 0)
    const float* b1 = p + h_ * d_;            // [H]
    const float* w2 = h_ == 0 ? p : b1 + h_;  // [1, width]
    const float* b2 = w2 + width;             // [1]
    std::vector<double> hid(static_cast<size_t>(width));
    double loss = 0.0;
    *correct = 0;
    for (int64_t i = 0; i < n; ++i) {
      const float* xi = &x[static_cast<size_t>(i * d_)];
      for (int64_t j = 0; j < width; ++j) {
        if (h_ == 0) {
          hid[j] = xi[j];
        } else {
          double s = b1[j];
          for (int64_t k = 0; k < d_; ++k) s += w1[j * d_ + k] * xi[k];
          hid[j] = std::tanh(s);
        }
      }
      double z = b2[0];
      for (int64_t j = 0; j < width; ++j) z += w2[j] * hid[j];
      const double yi = y[static_cast<size_t>(i)];
      loss += std::max(z, 0.0) - yi * z + std::log1p(std::exp(-std::abs(z)));
      *correct += (z > 0) == (yi > 0.5);
      if (!grad) continue;
      const double g = (1.0 / (1.0 + std::exp(-z)) - yi) / static_cast<double>(n);
      float* gw1 = grad;
      float* gb1 = grad + h_ * d_;
      float* gw2 = h_ == 0 ? grad : gb1 + h_;
      float* gb2 = gw2 + width;
      for (int64_t j = 0; j < width; ++j) gw2[j] += static_cast<float>(g * hid[j]);
      gb2[0] += static_cast<float>(g);
      for (int64_t j = 0; j < h_; ++j) {
        const double dh = g * w2[j] * (1.0 - hid[j] * hid[j]);
        for (int64_t k = 0; k < d_; ++k) gw1[j * d_ + k] += static_cast<float>(dh * xi[k]);
        gb1[j] += static_cast<float>(dh);
      }
    }
    return loss / static_cast<double>(n);
  }

 private:
  int64_t d_, h_;
};

class BinaryTrainer final : public tributary::Trainer {
 public:
  BinaryTrainer(BinaryNet net, std::vector<float> x, std::vector<float> y)
      : net_(net), x_(std::move(x)), y_(std::move(y)) {}

  // The layout declared to the coordinator; the values are not used (the coordinator's initial
  // model is the run's starting point).
  Result<ModelWeights> get_parameters() override { return ModelWeights::Create(net_.Layout()); }

  Result<FitResult> fit(const ModelWeights& global, const FitConfig& config) override {
    FitResult r;
    r.weights = global;
    std::vector<float> grad(global.size());
    int64_t steps = config.epochs;
    if (config.max_steps > 0) steps = std::min<int64_t>(steps, config.max_steps);
    int64_t correct = 0;
    double loss = 0.0;
    for (int64_t s = 0; s < steps; ++s) {
      std::fill(grad.begin(), grad.end(), 0.0f);
      loss = net_.Pass(r.weights.data().data(), x_, y_, grad.data(), &correct);
      for (size_t i = 0; i < grad.size(); ++i) r.weights.data()[i] -= config.lr * grad[i];
    }
    r.num_examples = static_cast<int64_t>(y_.size());
    r.metrics = {{"train_loss", loss},
                 {"train_accuracy", static_cast<double>(correct) / static_cast<double>(y_.size())}};
    return r;
  }

  Result<EvalResult> evaluate(const ModelWeights& weights, const EvalConfig&) override {
    EvalResult e;
    int64_t correct = 0;
    e.loss = net_.Pass(weights.data().data(), x_, y_, nullptr, &correct);
    e.num_examples = static_cast<int64_t>(y_.size());
    e.accuracy = static_cast<double>(correct) / static_cast<double>(e.num_examples);
    return e;
  }

 private:
  BinaryNet net_;
  std::vector<float> x_, y_;
};

}  // namespace

int main(int argc, char** argv) {
  tributary::ClientOptions options;
  std::string features, labels;
  int64_t dim = 0, hidden = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--coordinator")
      options.coordinator = value;
    else if (flag == "--ca")
      options.ca_cert_file = value;
    else if (flag == "--cert")
      options.cert_file = value;
    else if (flag == "--key")
      options.key_file = value;
    else if (flag == "--state-dir")
      options.state_dir = value;
    else if (flag == "--features")
      features = value;
    else if (flag == "--labels")
      labels = value;
    else if (flag == "--dim")
      dim = std::stoll(value);
    else if (flag == "--hidden")
      hidden = std::stoll(value);
    else {
      std::cerr << "logreg_client: unknown flag " << flag << "\n";
      return 2;
    }
  }
  std::vector<float> x = ReadFloats(features), y = ReadFloats(labels);
  if (dim <= 0 || y.empty() || x.size() != y.size() * static_cast<size_t>(dim)) {
    std::cerr << "logreg_client: need --dim D > 0, --features (n x D float32) and --labels (n "
                 "float32); got "
              << x.size() << " features and " << y.size() << " labels\n";
    return 2;
  }
  options.num_examples = y.size();
  options.backoff.max_attempts = 20;
  auto trainer =
      std::make_shared<BinaryTrainer>(BinaryNet(dim, hidden), std::move(x), std::move(y));
  auto client = tributary::Client::Create(options, trainer);
  if (!client.ok()) {
    std::cerr << "logreg_client: " << client.status().ToString() << "\n";
    return 1;
  }
  const Status s = (*client)->run();
  if (!s.ok()) {
    std::cerr << "logreg_client: the run did not complete: " << s.ToString() << "\n";
    return 1;
  }
  std::cout << "logreg_client: the run is complete\n";
  return 0;
}
