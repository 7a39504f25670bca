// Feature-noise skew: NIID-Bench's "noise-based feature imbalance" (Li, Diao, Chen, He, "Federated
// Learning on Non-IID Data Silos: An Experimental Study", ICDE 2022, section IV-C).
//
// A partition spec may end in "+noise:SIGMA" ("dirichlet:0.5+noise:0.1"), or be "noise:SIGMA"
// alone, which means "iid+noise:SIGMA" (NIID-Bench's own setting: a homogeneous split, then noise).
// Client i of N then gets Gaussian noise of standard deviation SIGMA * i / (N - 1) added to every
// feature of its training examples: client 0 none, the last client SIGMA (a lone client SIGMA), as
// NIID-Bench computes it. The images are not clipped back into [0, 1] (nor are they there).
//
// NIID-Bench draws the noise anew each time an image is loaded (a torchvision transform); here it
// is drawn once per (seed, client, example index), so a client's data set is fixed, as a device's
// skewed sensor is, and every program that holds the example (the simulator on any rank,
// tributary-client, tb.load_data) gets the same noisy image. Evaluation data gets no noise.
//
// Thread-safe (no shared state).
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "train/data/dataset.h"
#include "tributary/result.h"

namespace tributary {

struct FeatureNoiseSpec {
  std::string_view base;  // the partitioner's part ("iid" when the spec is "noise:SIGMA")
  double sigma = 0.0;     // 0: no noise
};

// Splits a partition spec into its partitioner's part and the noise's SIGMA (0 when there is no
// "+noise:" part). InvalidArgument quoting the spec when SIGMA is not a finite number >= 0.
Result<FeatureNoiseSpec> SplitFeatureNoise(std::string_view spec);

// The standard deviation of client `client`'s noise among `num_clients`: sigma * client /
// (num_clients - 1), or sigma when there is one client.
double FeatureNoiseLevel(double sigma, uint64_t client, uint64_t num_clients);

// Adds Gaussian noise of standard deviation `level` to every feature of `data`, whose example j is
// the data set's example indices[j] (indices.size() == data.size(); checked). The draws for an
// example come from (seed, client, its index) alone. A level of 0 changes nothing.
Status AddFeatureNoise(Dataset& data, std::span<const uint32_t> indices, double level,
                       uint64_t seed, uint64_t client);

}  // namespace tributary
