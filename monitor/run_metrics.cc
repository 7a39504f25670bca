#include "monitor/run_metrics.h"

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <type_traits>

namespace tributary {
namespace {

using prometheus::BuildCounter;
using prometheus::BuildGauge;
using prometheus::BuildHistogram;
using prometheus::Histogram;

prometheus::Gauge& Gauge(prometheus::Registry& r, const std::string& name, const std::string& help,
                         const prometheus::Labels& labels = {}) {
  return BuildGauge().Name(name).Help(help).Register(r).Add(labels);
}

prometheus::Counter& Counter(prometheus::Registry& r, const std::string& name,
                             const std::string& help) {
  return BuildCounter().Name(name).Help(help).Register(r).Add({});
}

}  // namespace

RunMetrics::RunMetrics() : registry_(std::make_shared<prometheus::Registry>()) {
  prometheus::Registry& r = *registry_;
  info_ = &BuildGauge()
               .Name("tributary_run_info")
               .Help("1, labelled with the run's model, strategy and codecs")
               .Register(r);
  rounds_target_ = &Gauge(r, "tributary_run_rounds", "rounds the run is configured for");
  finished_ = &Gauge(r, "tributary_run_finished", "1 once the run has ended");
  ok_ = &Gauge(r, "tributary_run_ok", "1 once the run has ended well");
  round_ = &Gauge(r, "tributary_round", "the latest round opened (or done, when resumed)");
  round_open_ = &Gauge(r, "tributary_round_open", "1 while a round attempt is open");
  epsilon_ = &Gauge(r, "tributary_dp_epsilon",
                    "differential privacy spent so far, at the run's delta (0 without DP)");
  closed_ = &Counter(r, "tributary_rounds_closed_total", "rounds closed");
  failures_ = &Counter(r, "tributary_round_failures_total",
                       "round attempts that failed (too few updates before the deadline)");
  accepted_ = &Counter(r, "tributary_updates_accepted_total", "client updates folded in");
  refused_ = &BuildCounter()
                  .Name("tributary_updates_refused_total")
                  .Help("client updates refused, by the refusal's status code")
                  .Register(r);
  dropped_ = &Counter(r, "tributary_clients_dropped_total",
                      "selected clients that left or never answered in closed rounds");
  checkpoint_failures_ =
      &Counter(r, "tributary_checkpoint_failures_total", "checkpoints that could not be written");
  bytes_ = &BuildCounter()
                .Name("tributary_transfer_bytes_total")
                .Help("model bytes sent (down) and update bytes received (up) in closed rounds")
                .Register(r);
  split_batches_ = &Counter(r, "tributary_split_batches_total",
                            "split learning: batches the server part trained on, in closed rounds");
  split_samples_ =
      &Counter(r, "tributary_split_samples_total", "split learning: samples in those batches");
  split_seconds_ = &Counter(r, "tributary_split_server_seconds_total",
                            "split learning: the server part's compute, summed over its threads");
  split_bytes_ = &BuildCounter()
                      .Name("tributary_split_bytes_total")
                      .Help(
                          "split learning: encoded activations received (up) and gradients sent "
                          "(down), in closed rounds")
                      .Register(r);
  staleness_ = &BuildHistogram()
                    .Name("tributary_update_staleness")
                    .Help(
                        "asynchronous runs: model versions between the one an accepted update was "
                        "trained on and the current one")
                    .Register(r)
                    .Add({}, Histogram::BucketBoundaries{0, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 64});
  round_seconds_ = &BuildHistogram()
                        .Name("tributary_round_duration_seconds")
                        .Help("how long closed rounds took, from opening to closing")
                        .Register(r)
                        .Add({}, Histogram::BucketBoundaries{0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60,
                                                             120, 300, 600, 1800});
  checkpoint_seconds_ =
      &BuildHistogram()
           .Name("tributary_checkpoint_write_seconds")
           .Help("how long writing a checkpoint took")
           .Register(r)
           .Add({}, Histogram::BucketBoundaries{0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30});
  auto& clients = BuildGauge()
                      .Name("tributary_clients")
                      .Help("connected clients, and of those the idle and the training ones")
                      .Register(r);
  connected_ = &clients.Add({{"state", "connected"}});
  idle_ = &clients.Add({{"state", "idle"}});
  training_ = &clients.Add({{"state", "training"}});
  cooling_ = &BuildGauge()
                  .Name("tributary_clients_cooling")
                  .Help(
                      "clients left out of selection for a cool-down after a miss (no update by "
                      "the deadline, or one refused)")
                  .Register(r)
                  .Add({});
  auto& loss = BuildGauge()
                   .Name("tributary_evaluation_loss")
                   .Help("the latest evaluation's mean loss, on the server or federated")
                   .Register(r);
  auto& accuracy =
      BuildGauge()
          .Name("tributary_evaluation_accuracy")
          .Help("the latest evaluation's accuracy (0 to 1), on the server or federated")
          .Register(r);
  server_loss_ = &loss.Add({{"source", "server"}});
  federated_loss_ = &loss.Add({{"source", "federated"}});
  server_accuracy_ = &accuracy.Add({{"source", "server"}});
  federated_accuracy_ = &accuracy.Add({{"source", "federated"}});
}

RunMetrics::~RunMetrics() = default;

prometheus::Counter& RunMetrics::Refused(const std::string& code) {
  return refused_->Add({{"code", code.empty() ? std::string("unknown") : code}});
}

prometheus::Counter& RunMetrics::Bytes(const std::string& direction, const std::string& codec) {
  return bytes_->Add({{"direction", direction}, {"codec", codec}});
}

void RunMetrics::RefreshClients() {
  if (!sampler_) return;
  const auto [connected, idle] = sampler_();
  SetClients(connected, idle, connected - idle);
  if (cooling_sampler_) cooling_->Set(static_cast<double>(cooling_sampler_()));
}

void RunMetrics::OnEvent(const RunEvent& event) {
  RefreshClients();
  std::visit(
      [&](const auto& e) {
        using E = std::decay_t<decltype(e)>;
        if constexpr (std::is_same_v<E, RunStarted>) {
          {
            std::lock_guard<std::mutex> lock(mu_);
            codec_ = e.codec;
            download_codec_ = e.download_codec;
          }
          info_
              ->Add({{"model", e.model},
                     {"strategy", e.strategy},
                     {"codec", e.codec},
                     {"download_codec", e.download_codec}})
              .Set(1);
          rounds_target_->Set(static_cast<double>(e.rounds));
          round_->Set(static_cast<double>(e.rounds_done));
        } else if constexpr (std::is_same_v<E, RoundOpened>) {
          round_->Set(static_cast<double>(e.round));
          round_open_->Set(1);
        } else if constexpr (std::is_same_v<E, UpdateAccepted>) {
          accepted_->Increment();
          if (e.staleness) staleness_->Observe(static_cast<double>(e.staleness->staleness));
        } else if constexpr (std::is_same_v<E, UpdateRefused>) {
          Refused(e.code).Increment();
        } else if constexpr (std::is_same_v<E, RoundFailed>) {
          failures_->Increment();
          round_open_->Set(0);
        } else if constexpr (std::is_same_v<E, CheckpointWritten>) {
          if (e.error.empty())
            checkpoint_seconds_->Observe(e.seconds);
          else
            checkpoint_failures_->Increment();
        } else if constexpr (std::is_same_v<E, Evaluated>) {
          server_loss_->Set(e.loss);
          server_accuracy_->Set(e.accuracy);
        } else if constexpr (std::is_same_v<E, RoundClosed>) {
          const RoundSummary& s = e.summary;
          closed_->Increment();
          round_open_->Set(0);
          round_seconds_->Observe(s.duration_s);
          dropped_->Increment(static_cast<double>(s.dropped));
          std::string up, down;
          {
            std::lock_guard<std::mutex> lock(mu_);
            up = codec_;
            down = download_codec_;
          }
          Bytes("up", up).Increment(static_cast<double>(s.bytes_up));
          Bytes("down", down).Increment(static_cast<double>(s.bytes_down));
          if (s.dp) epsilon_->Set(s.dp->epsilon);
          if (s.split) {
            split_batches_->Increment(static_cast<double>(s.split->batches));
            split_samples_->Increment(static_cast<double>(s.split->samples));
            split_seconds_->Increment(s.split->server_seconds);
            split_bytes_->Add({{"direction", "up"}})
                .Increment(static_cast<double>(s.split->bytes_in));
            split_bytes_->Add({{"direction", "down"}})
                .Increment(static_cast<double>(s.split->bytes_out));
          }
        } else if constexpr (std::is_same_v<E, FederatedEvaluated>) {
          federated_loss_->Set(e.summary.loss);
          federated_accuracy_->Set(e.summary.accuracy);
        } else if constexpr (std::is_same_v<E, RunFinished>) {
          finished_->Set(1);
          ok_->Set(e.ok ? 1 : 0);
          round_open_->Set(0);
        }
      },
      event);
}

void RunMetrics::SetClients(int64_t connected, int64_t idle, int64_t training) {
  connected_->Set(static_cast<double>(connected));
  idle_->Set(static_cast<double>(idle));
  training_->Set(static_cast<double>(training));
}

std::string RunMetrics::Scrape() const {
  return prometheus::TextSerializer().Serialize(registry_->Collect());
}

}  // namespace tributary
