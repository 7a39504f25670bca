// NormClip: a pre-aggregation stage ("clip(norm=C)+<rule>") that bounds each update's L2 norm.
//
// Every update u is first decoded (unscaled) into an O(model) scratch buffer and clipped there by
// ClipL2 (compression/l2_clip.h, the clip the clients and differential privacy use too): if
// ||u||_2 > C every value is scaled by C / ||u||_2 (so its norm becomes C). The clipped values
// are then handed to the wrapped rule with the same aggregation weight. Norm bounding limits how
// far one client, honest or not, can move the model (Sun et al. 2019, "Can You Really Backdoor
// Federated Learning?"). Streaming rules stay streaming: the stage adds one model-sized float
// buffer, whatever the number of clients.
//
// Everything else (round-size checks, proximal mu, state) is the wrapped rule's. Not thread-safe.
#pragma once

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "aggregation/strategy.h"

namespace tributary {

class NormClip final : public Strategy {
 public:
  std::string needs_each_update() const override {
    return "norm clipping at the coordinator measures each client's update (clip on the clients, "
           "secagg.clip, instead)";
  }
  // max_norm > 0 is validated by MakeStrategy.
  NormClip(double max_norm, std::unique_ptr<Strategy> inner);

  std::string_view name() const override { return name_; }
  Status BeginRound(const ModelWeights& global) override;
  Status Accumulate(uint64_t weight, const UpdateWriter& writer) override;
  size_t num_accumulated() const override { return inner_->num_accumulated(); }
  Result<ModelWeights> Finalize() override { return inner_->Finalize(); }
  Status CheckRoundSize(int64_t n) const override { return inner_->CheckRoundSize(n); }
  float client_proximal_mu() const override { return inner_->client_proximal_mu(); }
  std::string needs_each_weight() const override { return inner_->needs_each_weight(); }
  // The control deltas are the wrapped rule's (clipping bounds the model update only).
  bool uses_control_variates() const override { return inner_->uses_control_variates(); }
  std::span<const float> server_control() const override { return inner_->server_control(); }
  Status CheckControl(const UpdateStats& stats) const override {
    return inner_->CheckControl(stats);
  }
  Status AccumulateControl(std::span<const float> delta) override {
    return inner_->AccumulateControl(delta);
  }
  Result<ModelWeights> SaveState() const override { return inner_->SaveState(); }
  Status LoadState(const ModelWeights& state, size_t model_size) override {
    return inner_->LoadState(state, model_size);
  }
  // Clipping bounds every value by max_norm, so the wrapped rule sees at most that.
  const PartialSum* partial_sum() const override { return inner_->partial_sum(); }
  Status MergePartialSum(const PartialSum& partial) override {
    return inner_->MergePartialSum(partial);  // each process clipped its updates before folding
  }
  Status CheckUpdate(const UpdateStats& stats, uint64_t weight) const override {
    UpdateStats clipped = stats;
    clipped.max_abs = std::min(stats.max_abs, max_norm_);
    return inner_->CheckUpdate(clipped, weight);
  }

  const Strategy& inner() const { return *inner_; }
  // Updates clipped since BeginRound.
  size_t num_clipped() const { return clipped_; }

 private:
  double max_norm_;
  std::unique_ptr<Strategy> inner_;
  std::string name_;
  std::vector<float> scratch_;
  size_t clipped_ = 0;
  bool begun_ = false;
};

}  // namespace tributary
