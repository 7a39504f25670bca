// Partitioners: split a data set's sample indices among federated clients.
//
// A Partition lists, per client, the indices of its samples (each list sorted ascending). Every
// partitioner here assigns every sample to exactly one client, is deterministic for a seed, and
// rejects bad arguments with InvalidArgument (never aborts):
//
//   iid                  shuffle, then near-equal contiguous slices (sizes differ by at most 1).
//   dirichlet:ALPHA      label skew (Hsu et al. 2019): for each class, draw client proportions
//                        p ~ Dirichlet(ALPHA) and hand that class's samples out accordingly.
//                        Small ALPHA (0.1) gives clients few classes; large ALPHA (100) is near
//                        IID. Every client gets at least min_size samples: the draw is repeated
//                        up to max_redraws times; if no draw satisfies min_size, the draw with
//                        the largest minimum is fixed up by moving random samples from the
//                        largest client to each short one (this slightly weakens the skew).
//                        Drawing for many clients can take seconds: past one, it logs its progress
//                        over the draws (core/progress.h).
//   shards:K             the FedAvg paper's pathological split (McMahan et al. 2017): sort by
//                        label, cut into num_clients * K equal shards, give each client K random
//                        shards. The sample count must divide evenly into the shards. Two shards
//                        can be of one label, so a client may hold fewer than K labels.
//   labels:K             NIID-Bench's "#C = K" label skew (Li et al., ICDE 2022): client i is
//                        given K distinct labels, label i mod num_classes and K - 1 others drawn
//                        at random; each label's samples are shuffled and split into near-equal
//                        parts (sizes differ by at most 1) among the clients that hold it (a
//                        label with fewer samples than holders leaves some with none of it). A
//                        label no client holds (possible with fewer clients than classes) or a
//                        client left with no sample is an error naming it, never a silent drop.
//   quantity:BETA        NIID-Bench's quantity skew: client sizes follow proportions drawn from
//                        Dirichlet(BETA) over the clients, labels IID (the shuffled samples cut at
//                        the cumulative proportions). min_size and redraws as for dirichlet.
//
// Thread-safe (no shared state).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tributary/result.h"

namespace tributary {

// Indices of each client's samples; partition[k] belongs to client k.
using Partition = std::vector<std::vector<uint32_t>>;

struct DirichletOptions {
  double alpha = 0.5;     // concentration, > 0
  int64_t min_size = 1;   // every client gets at least this many samples (0 allows empty clients)
  int max_redraws = 100;  // draws to try before fixing up the best one by moving samples
};

Result<Partition> PartitionIid(size_t num_samples, int num_clients, uint64_t seed);

Result<Partition> PartitionDirichlet(std::span<const uint8_t> labels, int num_classes,
                                     int num_clients, const DirichletOptions& options,
                                     uint64_t seed);

Result<Partition> PartitionShards(std::span<const uint8_t> labels, int num_clients,
                                  int shards_per_client, uint64_t seed);

Result<Partition> PartitionLabels(std::span<const uint8_t> labels, int num_classes, int num_clients,
                                  int labels_per_client, uint64_t seed);

// options.alpha is the quantity skew's BETA.
Result<Partition> PartitionQuantity(size_t num_samples, int num_clients,
                                    const DirichletOptions& options, uint64_t seed);

// Parses `spec` and runs the partitioner it names. Grammar:
//   "iid" | "dirichlet:ALPHA" | "dirichlet:ALPHA,min_size=N" | "shards:K" | "labels:K"
//   | "quantity:BETA" | "quantity:BETA,min_size=N"
// optionally followed by "+noise:SIGMA", or "noise:SIGMA" alone (iid): feature noise
// (train/data/feature_noise.h), which the caller adds to each client's images; the partition is
// the one without it.
// Errors (InvalidArgument, quoting the spec): unknown kind, malformed or non-positive ALPHA, BETA
// or K, shards that do not divide the samples, K > num_classes for labels:K, more clients than
// samples, labels >= num_classes.
Result<Partition> MakePartition(std::string_view spec, std::span<const uint8_t> labels,
                                int num_classes, int num_clients, uint64_t seed);

// Checks that every index is < num_samples and appears at most once; with require_complete, also
// that every sample is assigned. InvalidArgument naming the client and index otherwise.
Status ValidatePartition(const Partition& partition, size_t num_samples, bool require_complete);

// What a partition looks like: sizes, per-client class histograms and label skew.
struct PartitionStats {
  int num_clients = 0;
  int num_classes = 0;
  int64_t total = 0;                               // samples assigned
  std::vector<int64_t> sizes;                      // [client]
  std::vector<std::vector<int64_t>> class_counts;  // [client][class]
  std::vector<double> label_tv;  // [client] total-variation distance to the global label mix
  int64_t min_size = 0;
  int64_t max_size = 0;
  double mean_size = 0;
  int empty_clients = 0;
  // Label skew: mean and max of label_tv over non-empty clients, in [0, 1]. 0 means every
  // client's label distribution equals the global one (over all assigned samples).
  double mean_label_tv = 0;
  double max_label_tv = 0;
  // Distinct classes held per non-empty client.
  int min_classes = 0;
  int max_classes = 0;
  double mean_classes = 0;
};

// Indices must be < labels.size() and labels < num_classes (checked; a violation is a bug, so
// run ValidatePartition first on a partition from outside).
PartitionStats ComputePartitionStats(const Partition& partition, std::span<const uint8_t> labels,
                                     int num_classes);

// A three-line summary; with max_clients_listed > 0 also one line (size and class histogram) for
// each of the first max_clients_listed clients.
std::string FormatPartitionStats(const PartitionStats& stats, int max_clients_listed = 0);

}  // namespace tributary
