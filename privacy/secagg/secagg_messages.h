// The messages of one round of secure aggregation (Bonawitz et al., CCS 2017, figure 4, with the
// SecAgg+ neighbour graph of Bell et al., CCS 2020), as plain structs. The protocol layer carries
// them; SecAggClient and SecAggServer produce and check them.
//
//   phase 0 advertise keys   client -> server  SecAggKeys          (signed with the TLS key)
//                            server -> clients SecAggRoster        (every advertised key)
//   phase 1 share keys       client -> server  SecAggShares        (sealed, one per neighbour)
//                            server -> client  SecAggInbox         (the shares sealed for it)
//   phase 2 masked input     client -> server  SecAggMaskedInput
//                            server -> clients SecAggUnmaskRequest (who survived, who dropped)
//   phase 3 unmask           client -> server  SecAggUnmaskResponse
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "crypto/x25519.h"
#include "privacy/secagg/shamir.h"

namespace tributary {

struct SecAggKeys {
  std::string client_id;
  Key32 enc_public{};              // X25519: keys the shares this client seals and opens
  Key32 mask_public{};             // X25519: keys its pairwise masks
  std::string cert_pem;            // the client's certificate, which peers verify against the CA
  std::vector<uint8_t> signature;  // over SecAggSession::KeysMessage
  bool operator==(const SecAggKeys&) const = default;
};

struct SecAggRoster {
  std::vector<SecAggKeys> clients;  // sorted by client_id, unique
};

struct SecAggSealedShare {
  std::string from, to;
  std::vector<uint8_t> sealed;  // AEAD of the two shares `from` gives `to`
};

struct SecAggShares {
  std::string from;
  std::vector<SecAggSealedShare> shares;
};

struct SecAggInbox {
  std::vector<std::string> senders;  // every client whose shares arrived (U2), sorted
  std::vector<SecAggSealedShare> shares;
};

struct SecAggMaskedInput {
  std::string from;
  std::vector<uint64_t> masked;  // modulo 2^sum_bits
};

struct SecAggUnmaskRequest {
  std::vector<std::string> survivors;  // sent a masked input (U3), sorted
  std::vector<std::string> dropped;    // shared keys but sent no masked input (U2 \ U3), sorted
};

enum class ShareKind : uint8_t {
  kSelfMaskSeed = 1,  // of a survivor: removes its self mask
  kMaskKey = 2,       // of a dropped client: removes the pairwise masks it left behind
};

struct SecAggRevealedShare {
  std::string owner;
  ShareKind kind = ShareKind::kSelfMaskSeed;
  ShamirShare share;
};

struct SecAggUnmaskResponse {
  std::string from;
  std::vector<SecAggRevealedShare> shares;
};

}  // namespace tributary
