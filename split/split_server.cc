#include "split/split_server.h"

#include <chrono>

#include "protocol/wire.h"
#include "split/cut_tensor.h"
#include "train/sgd.h"

namespace tributary {

Result<SplitMode> ParseSplitMode(std::string_view name) {
  if (name == "sflv1") return SplitMode::kSflV1;
  if (name == "sflv2") return SplitMode::kSflV2;
  return Status::InvalidArgument(
      "split.mode must be 'sflv1' (a server part per client, averaged) "
      "or 'sflv2' (one server part, trained in turn), not '" +
      std::string(name) + "'");
}

std::string_view SplitModeName(SplitMode mode) {
  return mode == SplitMode::kSflV1 ? "sflv1" : "sflv2";
}

Result<std::unique_ptr<SplitServer>> SplitServer::Create(SplitServerOptions options,
                                                         const ModelWeights& server_weights) {
  std::unique_ptr<SplitServer> s(new SplitServer());
  TRIB_ASSIGN_OR_RETURN(s->codec_, MakeCodec(options.codec));
  if (s->codec_->uses_error_feedback())
    return Status::InvalidArgument(
        "split.codec '" + options.codec +
        "' uses error feedback, which would carry one batch's "
        "activations into the next; turn it off (e.g. 'topk(0.1, ef=0)')");
  if (options.split.u_shaped() && options.mode != SplitMode::kSflV1)
    return Status::InvalidArgument(
        "a U-shaped split (split.head) needs split.mode = 'sflv1': each batch holds its server "
        "part across two round trips, so under sflv2 every client would wait for the others' "
        "links");
  TRIB_ASSIGN_OR_RETURN(ModelWeights::LayoutSpec dl, DeviceLayout(options.split));
  TRIB_ASSIGN_OR_RETURN(ModelWeights::LayoutSpec sl, ParameterLayout(options.split.server));
  TRIB_ASSIGN_OR_RETURN(ModelWeights d, ModelWeights::Create(dl));
  TRIB_ASSIGN_OR_RETURN(s->weights_, ModelWeights::Create(sl));
  if (!server_weights.same_layout(s->weights_))
    return Status::InvalidArgument("the server part's weights do not have the layout of " +
                                   options.split.server.name);
  s->weights_ = server_weights;
  s->device_fingerprint_ = d.fingerprint();
  s->cut_numel_ = options.split.cut_shape.numel();
  s->head_numel_ = options.split.u_shaped() ? options.split.head_shape.numel() : 0;
  s->options_ = std::move(options);
  return s;
}

Result<std::unique_ptr<Engine>> SplitServer::MakeEngine(int batch) {
  TRIB_ASSIGN_OR_RETURN(std::unique_ptr<Engine> e,
                        CreateCpuEngine(options_.split.server, batch, options_.threads));
  std::lock_guard lock(mu_);
  TRIB_RETURN_IF_ERROR(e->LoadWeights(weights_));
  return e;
}

void SplitServer::OpenRound(uint64_t round, const FitConfig& fit) {
  std::lock_guard lock(mu_);
  round_ = round;
  fit_ = fit;
  copies_.clear();
  shared_ = options_.mode == SplitMode::kSflV2 ? std::make_shared<Copy>() : nullptr;
}

void SplitServer::AddClient(uint64_t round, const std::string& client) {
  std::lock_guard lock(mu_);
  if (round_ != 0 && round == round_) copies_.try_emplace(client, std::make_shared<Copy>());
}

void SplitServer::OpenRound(uint64_t round, const FitConfig& fit,
                            const std::vector<std::string>& clients) {
  OpenRound(round, fit);
  for (const std::string& c : clients) AddClient(round, c);
}

Result<SplitServer::Turn> SplitServer::Find(const std::string& client, uint64_t round,
                                            std::string_view what) const {
  std::lock_guard lock(mu_);
  if (round_ == 0 || round != round_)
    return ProtocolError(ErrorCode::kProtocolViolation,
                         std::string(what) + " for round " + std::to_string(round) +
                             (round_ == 0 ? std::string(", but no split round is open")
                                          : ", but round " + std::to_string(round_) + " is open"));
  auto it = copies_.find(client);
  if (it == copies_.end())
    return ProtocolError(ErrorCode::kProtocolViolation, std::string(what) + " from " + client +
                                                            ", which holds no task in round " +
                                                            std::to_string(round_));
  return Turn{it->second, shared_, fit_};
}

Result<Message> SplitServer::OnMessage(const std::string& client, const Message& message) {
  const bool u = options_.split.u_shaped();
  if (const auto* a = std::get_if<SplitActivations>(&message)) {
    if (u) {
      TRIB_ASSIGN_OR_RETURN(SplitActivations out, OnFrontActivations(client, *a));
      return Message(std::move(out));
    }
    TRIB_ASSIGN_OR_RETURN(SplitGradient out, OnActivations(client, *a));
    return Message(std::move(out));
  }
  if (const auto* g = std::get_if<SplitGradient>(&message); g && u) {
    TRIB_ASSIGN_OR_RETURN(SplitGradient out, OnHeadGradient(client, *g));
    return Message(std::move(out));
  }
  return ProtocolError(ErrorCode::kProtocolViolation,
                       "unexpected " + MessageTypeName(TypeOf(message)) + " from " + client +
                           (u ? std::string() : " (this run's split is not U-shaped)"));
}

Result<SplitGradient> SplitServer::OnActivations(const std::string& client,
                                                 const SplitActivations& batch) {
  TRIB_ASSIGN_OR_RETURN(Turn turn, Find(client, batch.round, "activations"));
  std::shared_ptr<Copy> copy = std::move(turn.copy), shared = std::move(turn.shared);
  const FitConfig fit = turn.fit;
  if (options_.split.u_shaped())
    return ProtocolError(ErrorCode::kProtocolViolation,
                         "this run's split is U-shaped: the server part answers a batch with its "
                         "output, not a gradient");
  const size_t n = batch.labels.size();
  if (batch.samples != n)
    return ProtocolError(ErrorCode::kProtocolViolation,
                         "batch " + std::to_string(batch.batch) + " says it holds " +
                             std::to_string(batch.samples) + " samples and carries " +
                             std::to_string(n) + " labels");
  if (n == 0 || n > static_cast<size_t>(fit.batch_size))
    return ProtocolError(ErrorCode::kProtocolViolation, "a split batch of " + std::to_string(n) +
                                                            " samples; the round's batch "
                                                            "size is " +
                                                            std::to_string(fit.batch_size));
  for (size_t i = 0; i < n; ++i)
    if (batch.labels[i] >= options_.split.server.num_classes)
      return ProtocolError(ErrorCode::kProtocolViolation,
                           "label " + std::to_string(batch.labels[i]) + " of sample " +
                               std::to_string(i) + " is not below the model's " +
                               std::to_string(options_.split.server.num_classes) + " classes");
  const size_t floats = n * static_cast<size_t>(cut_numel_);
  TRIB_ASSIGN_OR_RETURN(std::vector<float> acts,
                        DecodeCutTensor(*codec_, batch.activations, device_fingerprint_, floats,
                                        "the activations of batch " + std::to_string(batch.batch)));

  // The copy's lock (and SFLV2's shared one) is taken after mu_ is let go, and let go before mu_
  // is taken again: CloseRound takes mu_ and then each copy's.
  SplitGradient out;
  double secs = 0.0;
  SplitServerStats delta;  // what this batch cost
  {
    std::unique_lock client_lock(copy->mu);
    if (batch.batch != copy->next_batch)
      return ProtocolError(ErrorCode::kProtocolViolation,
                           "batch " + std::to_string(batch.batch) + " arrived; batch " +
                               std::to_string(copy->next_batch) + " was next");
    std::unique_lock<std::mutex> shared_lock;
    Copy* trains = copy.get();
    if (shared != nullptr) {
      shared_lock = std::unique_lock(shared->mu);
      trains = shared.get();
    }
    if (!trains->engine) {
      TRIB_ASSIGN_OR_RETURN(trains->engine, MakeEngine(fit.batch_size));
    }
    std::vector<float> grad(floats);
    TRIB_ASSIGN_OR_RETURN(SgdConfig sgd, OptimizerOf(fit));
    sgd.proximal_mu = 0.0f;  // the server part has no global anchor of its own
    const auto t0 = std::chrono::steady_clock::now();
    TRIB_ASSIGN_OR_RETURN(StepStats st,
                          trains->engine->TrainFromCut(acts, batch.labels, sgd, grad));
    secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    ++copy->next_batch;
    out.round = batch.round;
    out.batch = batch.batch;
    out.loss_sum = st.loss_sum;
    out.correct = static_cast<uint64_t>(st.correct);
    TRIB_ASSIGN_OR_RETURN(out.gradient,
                          EncodeCutTensor(*codec_, grad, device_fingerprint_, batch.batch));
    delta = {1, n, batch.activations.bytes.size(), out.gradient.bytes.size(), secs};
    copy->stats += delta;
  }
  std::lock_guard lock(mu_);
  stats_ += delta;
  return out;
}

Result<SplitActivations> SplitServer::OnFrontActivations(const std::string& client,
                                                         const SplitActivations& batch) {
  TRIB_ASSIGN_OR_RETURN(Turn turn, Find(client, batch.round, "activations"));
  if (!options_.split.u_shaped())
    return ProtocolError(ErrorCode::kProtocolViolation, "this run's split is not U-shaped");
  if (!batch.labels.empty())
    return ProtocolError(ErrorCode::kProtocolViolation,
                         "batch " + std::to_string(batch.batch) + " carries " +
                             std::to_string(batch.labels.size()) +
                             " labels; a U-shaped split's labels stay on the device");
  const size_t n = batch.samples;
  if (n == 0 || n > static_cast<size_t>(turn.fit.batch_size))
    return ProtocolError(ErrorCode::kProtocolViolation, "a split batch of " + std::to_string(n) +
                                                            " samples; the round's batch "
                                                            "size is " +
                                                            std::to_string(turn.fit.batch_size));
  TRIB_ASSIGN_OR_RETURN(std::vector<float> acts,
                        DecodeCutTensor(*codec_, batch.activations, device_fingerprint_,
                                        n * static_cast<size_t>(cut_numel_),
                                        "the activations of batch " + std::to_string(batch.batch)));
  Copy& copy = *turn.copy;
  SplitActivations out;
  double secs = 0.0;
  SplitServerStats delta;
  {
    std::lock_guard client_lock(copy.mu);
    if (batch.batch != copy.next_batch || copy.pending != 0)
      return ProtocolError(
          ErrorCode::kProtocolViolation,
          "batch " + std::to_string(batch.batch) + " arrived; " +
              (copy.pending != 0
                   ? "batch " + std::to_string(copy.next_batch) + "'s head gradient was next"
                   : "batch " + std::to_string(copy.next_batch) + " was next"));
    if (!copy.engine) {
      TRIB_ASSIGN_OR_RETURN(copy.engine, MakeEngine(turn.fit.batch_size));
    }
    std::vector<float> middle(n * static_cast<size_t>(head_numel_));
    const auto t0 = std::chrono::steady_clock::now();
    TRIB_RETURN_IF_ERROR(copy.engine->ForwardToCut(acts, middle));
    secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    copy.pending = static_cast<int64_t>(n);
    out.round = batch.round;
    out.batch = batch.batch;
    out.samples = batch.samples;
    TRIB_ASSIGN_OR_RETURN(out.activations,
                          EncodeCutTensor(*codec_, middle, device_fingerprint_, batch.batch));
    // The batch is counted when its head gradient has been answered (OnHeadGradient).
    delta = {0, 0, batch.activations.bytes.size(), out.activations.bytes.size(), secs};
    copy.stats += delta;
  }
  std::lock_guard lock(mu_);
  stats_ += delta;
  return out;
}

Result<SplitGradient> SplitServer::OnHeadGradient(const std::string& client,
                                                  const SplitGradient& head) {
  TRIB_ASSIGN_OR_RETURN(Turn turn, Find(client, head.round, "a head gradient"));
  if (!options_.split.u_shaped())
    return ProtocolError(ErrorCode::kProtocolViolation, "this run's split is not U-shaped");
  Copy& copy = *turn.copy;
  SplitGradient out;
  double secs = 0.0;
  SplitServerStats delta;
  int64_t n = 0;
  {
    std::lock_guard client_lock(copy.mu);
    if (copy.pending == 0 || head.batch != copy.next_batch)
      return ProtocolError(ErrorCode::kProtocolViolation, "a head gradient for batch " +
                                                              std::to_string(head.batch) +
                                                              " answers no batch in flight");
    n = copy.pending;
    TRIB_ASSIGN_OR_RETURN(
        std::vector<float> grad,
        DecodeCutTensor(*codec_, head.gradient, device_fingerprint_,
                        static_cast<size_t>(n * head_numel_),
                        "the head gradient of batch " + std::to_string(head.batch)));
    std::vector<float> at_cut(static_cast<size_t>(n * cut_numel_));
    TRIB_ASSIGN_OR_RETURN(SgdConfig sgd, OptimizerOf(turn.fit));
    sgd.proximal_mu = 0.0f;  // the server part has no global anchor of its own
    const auto t0 = std::chrono::steady_clock::now();
    TRIB_RETURN_IF_ERROR(copy.engine->BackwardFromCut(grad, sgd, at_cut));
    secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    copy.pending = 0;
    ++copy.next_batch;
    out.round = head.round;
    out.batch = head.batch;
    out.loss_sum = head.loss_sum;  // the head's, for the client's own metrics
    out.correct = head.correct;
    TRIB_ASSIGN_OR_RETURN(out.gradient,
                          EncodeCutTensor(*codec_, at_cut, device_fingerprint_, head.batch));
    delta = {1, static_cast<uint64_t>(n), head.gradient.bytes.size(), out.gradient.bytes.size(),
             secs};
    copy.stats += delta;
  }
  std::lock_guard lock(mu_);
  stats_ += delta;
  return out;
}

void SplitServer::Accept(const std::string& client, uint64_t num_examples) {
  std::lock_guard lock(mu_);
  auto it = copies_.find(client);
  if (it != copies_.end()) it->second->num_examples = num_examples;
}

const ModelWeights& SplitServer::CloseRound() {
  std::map<std::string, std::shared_ptr<Copy>> copies;
  std::shared_ptr<Copy> shared;
  {
    std::lock_guard lock(mu_);
    round_ = 0;
    copies.swap(copies_);
    shared.swap(shared_);
  }
  ModelWeights w;
  {
    std::lock_guard lock(mu_);
    w = weights_;
  }
  if (shared != nullptr) {
    std::lock_guard c(shared->mu);
    if (shared->engine) (void)shared->engine->StoreWeights(&w);
  } else {
    // FedAvg of the accepted copies, in the order of their ids, summed in double. A copy
    // accepted without a batch counts as the round's start.
    std::vector<double> sum(w.size(), 0.0);
    double total = 0.0;
    ModelWeights copy_w = w;
    for (auto& [id, copy] : copies) {
      std::lock_guard c(copy->mu);
      if (copy->num_examples == 0) continue;
      if (copy->engine) (void)copy->engine->StoreWeights(&copy_w);
      const std::span<const float> v = copy->adopted  ? copy->adopted->data()
                                       : copy->engine ? copy_w.data()
                                                      : w.data();
      const double n = static_cast<double>(copy->num_examples);
      for (size_t i = 0; i < sum.size(); ++i) sum[i] += n * v[i];
      total += n;
    }
    if (total > 0) {
      auto out = w.data();
      for (size_t i = 0; i < sum.size(); ++i) out[i] = static_cast<float>(sum[i] / total);
    }
  }
  std::lock_guard lock(mu_);
  weights_ = std::move(w);
  return weights_;
}

void SplitServer::AbandonRound() {
  std::lock_guard lock(mu_);
  round_ = 0;
  copies_.clear();
  shared_.reset();
}

std::optional<SplitCopy> SplitServer::TrainedCopy(const std::string& client) const {
  std::shared_ptr<Copy> copy;
  SplitCopy out;
  {
    std::lock_guard lock(mu_);
    auto it = copies_.find(client);
    if (options_.mode != SplitMode::kSflV1 || round_ == 0 || it == copies_.end())
      return std::nullopt;
    copy = it->second;
    out.weights = weights_;
  }
  std::lock_guard c(copy->mu);
  if (copy->stats.batches == 0 || !copy->engine) return std::nullopt;
  if (!copy->engine->StoreWeights(&out.weights).ok()) return std::nullopt;
  out.stats = copy->stats;
  return out;
}

Status SplitServer::AdoptCopy(const std::string& client, SplitCopy copy) {
  std::shared_ptr<Copy> mine;
  {
    std::lock_guard lock(mu_);
    if (options_.mode != SplitMode::kSflV1 || round_ == 0)
      return Status::FailedPrecondition(
          "a server part's copy is adopted only in an open SFLV1 round");
    auto it = copies_.find(client);
    if (it == copies_.end())
      return Status::FailedPrecondition("a server part's copy for " + client +
                                        ", which holds no task in round " + std::to_string(round_));
    if (!copy.weights.same_layout(weights_))
      return Status::InvalidArgument("the copy of " + client +
                                     " does not have the layout of the server part " +
                                     options_.split.server.name);
    mine = it->second;
  }
  {
    std::lock_guard c(mine->mu);
    if (mine->next_batch != 0 || mine->adopted)
      return Status::FailedPrecondition("the server part's copy of " + client +
                                        " already trained here");
    mine->next_batch = copy.stats.batches;
    mine->stats = copy.stats;
    mine->adopted = std::move(copy.weights);
  }
  std::lock_guard lock(mu_);
  stats_ += copy.stats;
  return Status::Ok();
}

FitConfig SplitServer::round_fit() const {
  std::lock_guard lock(mu_);
  return fit_;
}

Status SplitServer::LoadWeights(const ModelWeights& weights) {
  std::lock_guard lock(mu_);
  if (!weights.same_layout(weights_))
    return Status::InvalidArgument("the server part's weights do not have the layout of " +
                                   options_.split.server.name);
  weights_ = weights;
  return Status::Ok();
}

SplitServerStats SplitServer::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

}  // namespace tributary
