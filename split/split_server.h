// SplitServer: the coordinator's half of split learning (docs/split.md): the server part of a cut
// model, trained on the activations clients send, in one of SplitFed's two forms (Thapa et al.,
// "SplitFed: When Federated Learning Meets Split Learning", AAAI 2022):
//   SFLV1  each client trains its own copy of the server part, which starts the round as the
//          round's server part; when the round closes, the copies of the clients whose device
//          updates were accepted are averaged, weighted by their num_examples (FedAvg on the
//          server side, as the paper's fed server does on the device side). A client's result
//          depends only on its own batches, so the round's result does not depend on the order in
//          which batches of different clients arrive.
//   SFLV2  one server part, trained on every batch in the order batches arrive. With one client
//          per round that is centralized training of the whole model; with several it depends on
//          how their batches interleave (the paper trains clients in turn, in a random order).
// The device parts are averaged by the run's strategy as any update is.
//
// The U-shaped split (SplitModel::u_shaped, SFLV1 only): the server part is the middle, each
// batch comes without labels and takes two round trips (OnFrontActivations, OnHeadGradient).
//
// Per batch (OnActivations): the message's round must be the open one and the client one this
// round's tasks went to; its sample count within [1, the round's batch size]; its labels below
// the class count; its activations `samples * cut size` floats in the run's split codec (all
// checked before anything is decoded). The server part takes one SGD step (the round's lr,
// momentum and weight decay) and the answer is the gradient at the cut, encoded the same way.
// Momentum starts from zero each round, as the devices' does.
//
// A round: OpenRound (the round's tasks, with their clients), OnActivations from the pool, Accept
// per accepted device update, then CloseRound, or AbandonRound when the attempt failed (the
// server part goes back to the round's start).
//
// Thread-safe: OnActivations may run on many threads at once (SFLV1 trains different clients'
// copies in parallel; one client's batches, and SFLV2's every batch, take turns); the other calls
// come from the engine's strand.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compression/codec.h"
#include "protocol/messages.h"
#include "train/engine.h"
#include "train/model_split.h"

namespace tributary {

enum class SplitMode { kSflV1, kSflV2 };
// "sflv1" / "sflv2"; InvalidArgument naming both otherwise.
Result<SplitMode> ParseSplitMode(std::string_view name);
std::string_view SplitModeName(SplitMode mode);

struct SplitServerOptions {
  SplitModel split;
  SplitMode mode = SplitMode::kSflV1;
  std::string codec = "dense";  // activations and gradients (split.codec)
  int threads = 1;              // each server engine's CPU threads
};

// What the server part's training cost, since the server was made.
struct SplitServerStats {
  uint64_t batches = 0;
  uint64_t samples = 0;
  uint64_t bytes_in = 0;         // encoded activations received
  uint64_t bytes_out = 0;        // encoded gradients sent
  double compute_seconds = 0.0;  // in TrainFromCut, summed over threads

  SplitServerStats& operator+=(const SplitServerStats& o) {
    batches += o.batches;
    samples += o.samples;
    bytes_in += o.bytes_in;
    bytes_out += o.bytes_out;
    compute_seconds += o.compute_seconds;
    return *this;
  }
};

// One client's SFLV1 copy of the server part after its batches: trained elsewhere (another rank
// of a distributed simulation) and adopted where the round closes.
struct SplitCopy {
  ModelWeights weights;
  SplitServerStats stats;  // what its batches cost
};

class SplitServer {
 public:
  // `server_weights`: the server part's starting weights (the layout of options.split.server).
  static Result<std::unique_ptr<SplitServer>> Create(SplitServerOptions options,
                                                     const ModelWeights& server_weights);

  // A round attempt opens, training with `fit` (lr, momentum, weight decay and batch size). Drops
  // whatever an earlier attempt left.
  void OpenRound(uint64_t round, const FitConfig& fit);
  // Round `round`'s task went to `client` (ignored unless that round is open).
  void AddClient(uint64_t round, const std::string& client);
  // OpenRound, then AddClient for each of `clients`.
  void OpenRound(uint64_t round, const FitConfig& fit, const std::vector<std::string>& clients);
  // One batch of `client`'s: the gradient at the cut to send back, or why the batch is refused
  // (a ProtocolError; nothing changed).
  Result<SplitGradient> OnActivations(const std::string& client, const SplitActivations& batch);
  // The U-shaped split (options.split.u_shaped(), SFLV1 only), a batch in two round trips:
  // OnFrontActivations takes the activations at the first cut (no labels; `samples` samples) and
  // answers with the server part's output at the second cut, which the client's head trains
  // from; OnHeadGradient takes the gradient at the second cut for that batch, takes the server
  // part's SGD step and answers with the gradient at the first cut. Checked as OnActivations is
  // (and a head gradient must answer the client's batch in flight); ProtocolError otherwise,
  // nothing changed.
  Result<SplitActivations> OnFrontActivations(const std::string& client,
                                              const SplitActivations& batch);
  Result<SplitGradient> OnHeadGradient(const std::string& client, const SplitGradient& head);
  // A client's split message, whichever the run's shape: the answer to send back, or a
  // ProtocolError (a SplitGradient outside a U-shaped run, any other message).
  Result<Message> OnMessage(const std::string& client, const Message& message);
  // The client's device update was accepted (SFLV1: its copy counts, weighted by num_examples).
  void Accept(const std::string& client, uint64_t num_examples);
  // The round closed: SFLV1 averages the accepted clients' copies (none accepted: the part stays
  // as it was); SFLV2 keeps what its batches made. Returns the new server part.
  const ModelWeights& CloseRound();
  // The round attempt failed: the server part goes back to the round's start.
  void AbandonRound();

  // SFLV1 across processes (the simulator's MPI ranks, sim/simulator_ranks.cc): a client's copy
  // depends only on its own batches, so it can train where the client does and join the average
  // here. TrainedCopy: `client`'s copy in the open round after its batches (nullopt: it sent none,
  // the round is not open, or the mode is SFLV2). AdoptCopy: takes such a copy as `client`'s in
  // the open round, its stats added to stats(); FailedPrecondition unless SFLV1 with the round
  // open, `client` holding one of its tasks and no batch of its own yet; InvalidArgument for
  // another layout.
  std::optional<SplitCopy> TrainedCopy(const std::string& client) const;
  Status AdoptCopy(const std::string& client, SplitCopy copy);
  // The open round's training settings (OpenRound's `fit`).
  FitConfig round_fit() const;

  const ModelWeights& weights() const { return weights_; }
  // Replaces the server part (resuming from a checkpoint); InvalidArgument for another layout.
  Status LoadWeights(const ModelWeights& weights);
  SplitServerStats stats() const;
  const SplitModel& split() const { return options_.split; }
  SplitMode mode() const { return options_.mode; }

 private:
  struct Copy {
    std::mutex mu;
    std::unique_ptr<Engine> engine;       // loaded with the round's start on first use
    std::optional<ModelWeights> adopted;  // AdoptCopy's weights (then no engine)
    uint64_t num_examples = 0;            // Accept's weight; 0 until accepted
    uint64_t next_batch = 0;              // batches must arrive 0, 1, 2, ...
    int64_t pending = 0;  // U-shaped: samples of batch next_batch, whose head gradient is awaited
    SplitServerStats stats;  // this copy's batches (SFLV1)
  };
  // The open round's copy for a client, SFLV2's shared one and the round's settings.
  struct Turn {
    std::shared_ptr<Copy> copy, shared;
    FitConfig fit;
  };
  SplitServer() = default;
  // `client`'s turn in round `round`, or a ProtocolError naming `what` (the round is not open,
  // or the client holds no task in it).
  Result<Turn> Find(const std::string& client, uint64_t round, std::string_view what) const;
  // A server engine for batches of up to `batch`, loaded with weights_ (takes mu_).
  Result<std::unique_ptr<Engine>> MakeEngine(int batch);

  SplitServerOptions options_;
  std::unique_ptr<Codec> codec_;
  uint64_t device_fingerprint_ = 0;
  int64_t cut_numel_ = 0;
  int64_t head_numel_ = 0;  // U-shaped: values per sample at the second cut
  ModelWeights weights_;    // the server part as of the last closed round (under mu_)

  // Lock order: a Copy's mu, then mu_ (briefly); mu_ is never held while a Copy's is taken.
  mutable std::mutex mu_;  // guards weights_ and everything below (not a Copy's contents)
  uint64_t round_ = 0;     // 0: no round open
  FitConfig fit_;
  // This round's clients. Shared: a batch in progress keeps its copy after the round closes.
  std::map<std::string, std::shared_ptr<Copy>> copies_;
  std::shared_ptr<Copy> shared_;  // SFLV2: the copy whose engine every client trains
  SplitServerStats stats_;
};

}  // namespace tributary
