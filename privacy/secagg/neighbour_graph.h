// NeighbourGraph: who shares keys with whom in SecAgg+ (Bell et al., CCS 2020, section 3): instead
// of every pair of n clients, each client shares with k neighbours, so a client's work and the
// shares it sends grow with log n, not n.
//
// The graph is a Harary graph H(k, n) over a random order of the clients: the order is a shuffle
// seeded by `seed` (derived from the roster of advertised keys, so every party computes the same
// graph and the coordinator cannot pick it freely), and each client is joined to the k/2 clients
// on either side of it in that order (k rounded up to even). With k >= n - 1 every pair is joined
// (the original protocol of Bonawitz et al.). Neighbours are listed as indices into the roster,
// ascending. Immutable; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "crypto/x25519.h"

namespace tributary {

class NeighbourGraph {
 public:
  NeighbourGraph(size_t n, size_t k, const Key32& seed);

  size_t size() const { return neighbours_.size(); }
  const std::vector<uint32_t>& of(size_t i) const { return neighbours_[i]; }
  bool Joined(size_t a, size_t b) const;

  // The default degree: the smallest even k >= 2 ceil(log2 n) (SecAgg+'s O(log n)) such that,
  // when each client drops with probability `max_dropout` after sharing its keys, the chance that
  // some client keeps fewer than DefaultThreshold(k) live neighbours, n P[Bin(k, 1 - max_dropout)
  // < k/2 + 1], is at most `round_failure` (such a round fails and is retried); at most n - 1.
  static size_t DefaultDegree(size_t n, double max_dropout = 0.1, double round_failure = 0.01);
  // P[Bin(k, p) < m].
  static double BinomialBelow(size_t k, double p, size_t m);
  // A strict majority of k: the coordinator, telling different neighbours different stories,
  // cannot collect `threshold` shares of both secrets of one client.
  static size_t DefaultThreshold(size_t k) { return k / 2 + 1; }

 private:
  std::vector<std::vector<uint32_t>> neighbours_;
};

}  // namespace tributary
