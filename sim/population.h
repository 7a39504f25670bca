// Population: the registered virtual clients and the training examples each one holds.
//
// A virtual client is only an index. Its id is ClientId(index) ("client-<index>", the same id a
// deployment's certificate carries), its data is a list of example indices into the shared training
// set, and its device profile is derived on demand (device_model.h). Data comes in two forms:
//   - a partition ("iid", "dirichlet:A", "shards:K", "labels:K", "quantity:B"): every example
//     belongs to exactly one client; stored as one flat index array plus per-client offsets (4
//     bytes per example, 8 per client);
//   - "replacement:N": each client draws N examples uniformly with replacement, regenerated from
//     (seed, client) whenever the client is materialized, so nothing is stored per client. This is
//     how population-scale runs (clients >> examples) get data.
// Either form may end in "+noise:SIGMA" (or be "noise:SIGMA": iid): client c's materialized images
// then carry its feature noise (train/data/feature_noise.h); Indices are unchanged.
// Only clients selected for a round are materialized (Materialize copies their examples).
//
// Thread-safe (const after Create).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "train/data/dataset.h"
#include "train/data/partition.h"
#include "tributary/result.h"

namespace tributary {

class Population {
 public:
  // `partition_spec` as above; InvalidArgument naming it when malformed or when it cannot split
  // `train` among `num_clients`.
  static Result<std::unique_ptr<Population>> Create(std::shared_ptr<const Dataset> train,
                                                    const std::string& partition_spec,
                                                    int64_t num_clients, uint64_t seed);

  static std::string ClientId(uint64_t index);
  // The index of a ClientId, or nullopt for any other string.
  static std::optional<uint64_t> IndexOf(const std::string& id);

  uint64_t size() const { return num_clients_; }
  uint64_t num_examples(uint64_t client) const;
  std::vector<uint32_t> Indices(uint64_t client) const;
  Dataset Materialize(uint64_t client) const;
  // The standard deviation of the client's feature noise (0 without "+noise:").
  double noise_level(uint64_t client) const;
  // Sizes and per-class counts of every client (train/data/partition.h), for the start-up table
  // and the report; nullopt for replacement:N (clients draw anew) and above `max_clients`, where
  // the per-client vectors would cost more than they tell.
  std::optional<PartitionStats> Stats(uint64_t max_clients) const;
  const Dataset& train() const { return *train_; }
  // Bytes this object holds per client beyond the shared data set (offsets; 0 for replacement).
  double bytes_per_client() const;
  bool with_replacement() const { return draw_per_client_ > 0; }

 private:
  Population() = default;
  std::shared_ptr<const Dataset> train_;
  uint64_t num_clients_ = 0;
  uint64_t seed_ = 0;
  int64_t draw_per_client_ = 0;    // > 0: replacement:N
  double noise_sigma_ = 0.0;       // "+noise:SIGMA"
  std::vector<uint64_t> offsets_;  // partition: client c owns flat_[offsets_[c], offsets_[c+1])
  std::vector<uint32_t> flat_;
};

}  // namespace tributary
