// DeviceModel: how fast, how reachable and how well connected each virtual client is.
//
// Nothing is stored per client: a client's profile is a pure function of (seed, client index), so
// a population of a million clients costs no memory here, and the draws for a task depend only on
// (seed, client, round, attempt), or (seed, client, task) in an asynchronous run — never on thread
// scheduling — which keeps simulations deterministic.
//
// A task's simulated duration is download + compute + upload:
//   download = latency + bytes_down * 8 / down_bps      (0 when bandwidth is unlimited)
//   compute  = samples processed / samples_per_s
//   upload   = latency + bytes_up * 8 / up_bps
// A client is unreachable with probability 1 - availability (it never starts the task), and one
// that starts drops out with probability `dropout` at a uniformly drawn point of its compute.
//
// Thread-safe (const after Create).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/rng.h"
#include "tributary/result.h"

namespace tributary {

struct HeterogeneityConfig {
  // Named compute tiers "name:fraction:samples_per_s,...", fractions summing to 1, e.g.
  // "phone:0.5:300,laptop:0.4:1500,workstation:0.1:8000". Empty: one tier at samples_per_s.
  std::string speed_tiers;
  double samples_per_s = 2000.0;
  double speed_sigma = 0.0;  // log-normal spread of a client's speed around its tier's
  double availability = 1.0;
  double dropout = 0.0;
  double down_mbps = 0.0;        // 0: unlimited
  double up_mbps = 0.0;          // 0: unlimited
  double bandwidth_sigma = 0.0;  // log-normal spread of each client's bandwidths
  double latency_ms = 0.0;
};

struct SpeedTier {
  std::string name;
  double fraction = 1.0;
  double samples_per_s = 0.0;
};

struct ClientProfile {
  int tier = 0;
  double samples_per_s = 0.0;
  double down_bps = 0.0;  // 0: unlimited
  double up_bps = 0.0;    // 0: unlimited
  double latency_s = 0.0;
};

struct TaskTiming {
  bool available = true;  // false: unreachable, never starts
  bool drops = false;     // true: leaves at drop_at_s without sending
  double drop_at_s = 0.0;
  double download_s = 0.0;
  double compute_s = 0.0;
  double upload_s = 0.0;
  // Split learning (docs/split.md): every batch's activations up and gradient down, after the
  // compute of the device part (AddSplitExchange).
  double exchange_s = 0.0;
  double finish_s() const { return download_s + compute_s + exchange_s + upload_s; }
};

class DeviceModel {
 public:
  // InvalidArgument naming the hetero.* key that is out of range or malformed.
  static Result<DeviceModel> Create(const HeterogeneityConfig& config, uint64_t seed);

  ClientProfile Profile(uint64_t client) const;
  TaskTiming Time(uint64_t client, uint64_t round, int64_t attempt, uint64_t bytes_down,
                  uint64_t bytes_up, double samples) const;
  // The same draws for the asynchronous simulator's task number `task` (its order of dispatch):
  // a stream of their own, keyed by (seed, client, task).
  TaskTiming TimeTask(uint64_t client, uint64_t task, uint64_t bytes_down, uint64_t bytes_up,
                      double samples) const;
  const std::vector<SpeedTier>& tiers() const { return tiers_; }
  // Split learning: `batches` round trips of the client's link, `bytes_up` of activations and
  // `bytes_down` of gradients in all: batches * 2 * latency + the bytes at the client's
  // bandwidths, added to t.exchange_s (the server part's compute is taken as instantaneous).
  void AddSplitExchange(uint64_t client, uint64_t batches, uint64_t bytes_up, uint64_t bytes_down,
                        TaskTiming* t) const;

 private:
  TaskTiming Draw(const ClientProfile& p, Rng rng, uint64_t bytes_down, uint64_t bytes_up,
                  double samples) const;

  HeterogeneityConfig config_;
  std::vector<SpeedTier> tiers_;
  uint64_t seed_ = 0;
};

}  // namespace tributary
