// RunMetrics: a run's state as Prometheus metrics (prometheus-cpp's registry and text format).
//
// A RunObserver (coordinator/run_events.h): the run driver's events update the metrics, and
// Scrape() renders them in the text exposition format (version 0.0.4) for GET /metrics
// (monitor/monitor_server.h). The coordinator also reports its clients' states with SetClients.
// Names follow Prometheus conventions: the tributary_ prefix, base units (seconds, bytes), _total
// for counters. What is exported:
//
//   tributary_run_info{model,strategy,codec,download_codec}  1 while the run is known
//   tributary_run_rounds                       the run's total rounds (run.rounds)
//   tributary_run_finished, tributary_run_ok   0/1 each
//   tributary_round                            the latest round opened (or done, when resumed)
//   tributary_round_open                       1 while a round attempt is open, else 0
//   tributary_rounds_closed_total, tributary_round_failures_total
//   tributary_round_duration_seconds           histogram of closed rounds' durations
//   tributary_updates_accepted_total
//   tributary_updates_refused_total{code}      by the refusal's status code (bounded: a dozen)
//   tributary_clients_dropped_total            selected clients that left or never answered
//   tributary_transfer_bytes_total{direction="up"|"down",codec}   bytes of closed rounds
//   tributary_clients{state="connected"|"idle"|"training"}
//   tributary_clients_cooling                  clients left out of selection after a miss
//   tributary_evaluation_loss{source="server"|"federated"}, tributary_evaluation_accuracy{...}
//   tributary_checkpoint_write_seconds         histogram; tributary_checkpoint_failures_total
//   tributary_dp_epsilon                       privacy spent (runs with differential privacy)
//
// Thread-safe: OnEvent on the run's thread, SetClients and Scrape from any thread.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "coordinator/run_events.h"

namespace prometheus {
class Counter;
class Gauge;
class Histogram;
class Registry;
template <typename T>
class Family;
}  // namespace prometheus

namespace tributary {

class RunMetrics final : public RunObserver {
 public:
  // The Content-Type of Scrape()'s text.
  static constexpr const char* kContentType = "text/plain; version=0.0.4; charset=utf-8";

  RunMetrics();
  ~RunMetrics() override;

  void OnEvent(const RunEvent& event) override;
  void SetClients(int64_t connected, int64_t idle, int64_t training);
  // Called at every event, on the run's thread (where the round engine's client registry may be
  // read), to refresh tributary_clients: {connected, idle}.
  void set_client_sampler(std::function<std::pair<int64_t, int64_t>()> sampler) {
    sampler_ = std::move(sampler);
  }
  // Called with the client sampler, for tributary_clients_cooling.
  void set_cooling_sampler(std::function<int64_t()> sampler) {
    cooling_sampler_ = std::move(sampler);
  }
  // Samples the clients again (on the run's thread, like OnEvent): between events, clients join
  // and leave too.
  void RefreshClients();
  std::string Scrape() const;

 private:
  prometheus::Counter& Refused(const std::string& code);
  prometheus::Counter& Bytes(const std::string& direction, const std::string& codec);

  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Family<prometheus::Gauge>* info_;
  prometheus::Family<prometheus::Counter>* refused_;
  prometheus::Family<prometheus::Counter>* bytes_;
  prometheus::Gauge *rounds_target_, *finished_, *ok_, *round_, *round_open_, *epsilon_;
  prometheus::Counter *closed_, *failures_, *accepted_, *dropped_, *checkpoint_failures_;
  prometheus::Counter *split_batches_, *split_samples_, *split_seconds_;
  prometheus::Family<prometheus::Counter>* split_bytes_;
  prometheus::Histogram *round_seconds_, *checkpoint_seconds_, *staleness_;
  prometheus::Gauge *connected_, *idle_, *training_;
  prometheus::Gauge *server_loss_, *server_accuracy_, *federated_loss_, *federated_accuracy_;
  std::function<std::pair<int64_t, int64_t>()> sampler_;
  std::function<int64_t()> cooling_sampler_;
  prometheus::Gauge* cooling_;
  std::mutex mu_;  // the run's codecs, set by RunStarted
  std::string codec_, download_codec_;
};

}  // namespace tributary
