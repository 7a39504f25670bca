// SecAggSession: what the client and the server of one round of secure aggregation agree on, and
// the derivations both compute from it, so that they are written once.
//
// Every key is bound to its purpose, the run, the round and the pair of clients through HKDF's
// info string; nothing derived for one round is valid in another.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "crypto/x25519.h"
#include "privacy/secagg/secagg_messages.h"
#include "tributary/result.h"

namespace tributary {

struct SecAggSession {
  std::string run_id;
  uint64_t round = 0;
  size_t vector_length = 0;   // integers per input (values plus the weight)
  uint64_t modulus_mask = 0;  // 2^sum_bits - 1
  size_t degree = 0;          // neighbours per client (k); 0: NeighbourGraph::DefaultDegree
  double max_dropout = 0.1;   // the dropout the default degree is sized for
  size_t threshold = 0;       // shares that recover a secret (t); 0: DefaultThreshold(k)
  // The fewest clients a phase may end with: a sum of fewer inputs says too much about each.
  size_t min_clients = 3;
  bool operator==(const SecAggSession&) const = default;

  // The bytes a client signs to advertise its keys.
  std::vector<uint8_t> KeysMessage(const SecAggKeys& keys) const;
  // The neighbour graph's seed: a digest of every advertised key in the roster.
  Result<Key32> GraphSeed(const SecAggRoster& roster) const;
  // Sparse secure aggregation (the run's codec is randk): the inputs hold only vector_length - 1
  // of a model's n values, at these coordinates: k distinct indices of [0, n), increasing, the
  // same for every client of the round (a digest of run_id and round seeds them; the coordinator
  // cannot pick them per client). Empty when vector_length - 1 >= n (a dense round).
  std::vector<uint32_t> Coordinates(size_t n) const;
  // k and t for a roster of n clients (the configured ones, or the defaults).
  size_t DegreeFor(size_t n) const;
  size_t ThresholdFor(size_t n) const;

  // The AEAD key of the shares between `a` and `b` (either direction), from their X25519 secret.
  Result<Key32> ShareKey(const Key32& secret, const std::string& a, const std::string& b) const;
  // The associated data of a share sealed from `from` to `to`.
  std::string ShareContext(const std::string& from, const std::string& to) const;
  // The pairwise mask seed of `a` and `b`, from their X25519 secret.
  Result<Key32> PairwiseSeed(const Key32& secret, const std::string& a, const std::string& b) const;
};

// The plaintext inside a sealed share: both shares one client gives one neighbour.
std::vector<uint8_t> EncodeSharePair(const ShamirShare& self_seed, const ShamirShare& mask_key);
Status DecodeSharePair(std::span<const uint8_t> bytes, ShamirShare* self_seed,
                       ShamirShare* mask_key);

}  // namespace tributary
