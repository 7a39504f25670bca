// The wire messages of secure aggregation (docs/privacy.md), types 10-17 of protocol version 3.
// Only rounds with secure aggregation send them; privacy/secagg converts them to and from its own
// structs (secagg_wire.h), where the protocol's rules are checked.
//
//   10 SecAggKeysMsg          client -> coordinator  signed public keys, with the certificate
//   11 SecAggRosterMsg        coordinator -> client  every advertised key (certificates and
//                                                    signatures only for the client's neighbours)
//   12 SecAggSharesMsg        client -> coordinator  one sealed share pair per neighbour
//   13 SecAggInboxMsg         coordinator -> client  the share pairs sealed for it, and who sent
//   14 SecAggMaskedInputMsg   client -> coordinator  the masked input, packed to `bits` per value
//   15 SecAggUnmaskRequestMsg coordinator -> client  who survived and who dropped
//   16 SecAggUnmaskResponseMsg client -> coordinator the shares asked for
//   17 SecAggStartMsg         coordinator -> client  sent just before the round's TaskAssignment:
//                                                    this round is secure, with these parameters
//
// Every field is capped as the rest of the schema (messages.h): keys and signatures by size,
// certificates at 16 KiB, lists by count and by the bytes each element needs on the wire.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/shared_bytes.h"
#include "protocol/schema_caps.h"
#include "protocol/wire_archive.h"

namespace tributary {

inline constexpr uint64_t kSecAggKeyBytes = 32;
inline constexpr uint64_t kMaxCertificateBytes = 16 * 1024;
inline constexpr uint64_t kMaxSignatureBytes = 1024;
inline constexpr uint64_t kMaxSealedShareBytes = 1024;
inline constexpr uint64_t kMaxSecAggClients = uint64_t{1} << 24;  // a roster, a survivor list
inline constexpr uint64_t kMaxSecAggShares = uint64_t{1} << 16;   // shares in one message
inline constexpr uint64_t kMaxShareLimbs = 64;

// The parameters of one round of secure aggregation, as the client needs them (privacy/secagg:
// SecAggSession and IntDomainConfig). The client derives the integer domain itself and checks that
// it comes to `sum_bits`. privacy/secagg/secagg_start.h is the one mapping to and from it.
struct SecAggStartMsg {
  uint64_t round = 0;
  std::string run_id;
  uint64_t vector_length = 0;  // the update's values plus the weight
  uint32_t sum_bits = 0;
  float clip = 0.0f;
  uint32_t quant_bits = 0;
  uint64_t max_weight = 0;
  uint64_t max_clients = 0;
  uint64_t degree = 0;     // k
  uint64_t threshold = 0;  // t
  uint64_t min_clients = 0;
  // Differential privacy with the noise on the clients (privacy/dp/dp_config.h): each clips the
  // values it sums to L2 norm dp_clip_norm and adds N(0, dp_noise_stddev^2) to each; 0: no DP.
  // dp_noise_seed != 0 makes that noise reproducible (experiments only; the coordinator knows it).
  double dp_clip_norm = 0.0;
  double dp_noise_stddev = 0.0;
  uint64_t dp_noise_seed = 0;
  // The dropout the default degree is sized for (secagg.max_dropout; SecAggSession::DegreeFor
  // reads it when degree is 0). Added in protocol version 3: without it the clients sized k for
  // 0.1 whatever the coordinator did, and refused every share.
  double max_dropout = 0.1;

  template <class Ar>
  void serialize(Ar& ar) {
    ar(round, wire::Capped("secagg.run_id", run_id, kMaxNameBytes), vector_length, sum_bits, clip,
       quant_bits, max_weight, max_clients, degree, threshold, min_clients, dp_clip_norm,
       dp_noise_stddev, dp_noise_seed, max_dropout);
  }
  friend bool operator==(const SecAggStartMsg&, const SecAggStartMsg&) = default;
};

// One client's advertised keys.
struct SecAggKeysMsg {
  uint64_t round = 0;
  std::string client_id;
  std::vector<uint8_t> enc_public;   // 32 bytes (X25519)
  std::vector<uint8_t> mask_public;  // 32 bytes (X25519)
  std::string cert_pem;              // empty in a roster entry of a non-neighbour
  std::vector<uint8_t> signature;    // likewise

  template <class Ar>
  void serialize(Ar& ar) {
    ar(round, wire::Capped("secagg.client_id", client_id, kMaxNameBytes),
       wire::Capped("secagg.enc_public", enc_public, kSecAggKeyBytes),
       wire::Capped("secagg.mask_public", mask_public, kSecAggKeyBytes),
       wire::Capped("secagg.cert", cert_pem, kMaxCertificateBytes),
       wire::Capped("secagg.signature", signature, kMaxSignatureBytes));
  }
  friend bool operator==(const SecAggKeysMsg&, const SecAggKeysMsg&) = default;
};
// round, and the five size tags.
inline constexpr uint64_t kMinSecAggKeysWireBytes = 6 * sizeof(uint64_t);

struct SecAggRosterMsg {
  uint64_t round = 0;
  std::vector<SecAggKeysMsg> clients;  // sorted by client id

  template <class Ar>
  void serialize(Ar& ar) {
    ar(round,
       wire::CappedObjects("secagg.roster", clients, kMaxSecAggClients, kMinSecAggKeysWireBytes));
  }
  friend bool operator==(const SecAggRosterMsg&, const SecAggRosterMsg&) = default;
};

struct SecAggSealedShareMsg {
  std::string from, to;
  std::vector<uint8_t> sealed;

  template <class Ar>
  void serialize(Ar& ar) {
    ar(wire::Capped("secagg.share.from", from, kMaxNameBytes),
       wire::Capped("secagg.share.to", to, kMaxNameBytes),
       wire::Capped("secagg.share.sealed", sealed, kMaxSealedShareBytes));
  }
  friend bool operator==(const SecAggSealedShareMsg&, const SecAggSealedShareMsg&) = default;
};
inline constexpr uint64_t kMinSealedShareWireBytes = 3 * sizeof(uint64_t);

struct SecAggSharesMsg {
  uint64_t round = 0;
  std::vector<SecAggSealedShareMsg> shares;

  template <class Ar>
  void serialize(Ar& ar) {
    ar(round,
       wire::CappedObjects("secagg.shares", shares, kMaxSecAggShares, kMinSealedShareWireBytes));
  }
  friend bool operator==(const SecAggSharesMsg&, const SecAggSharesMsg&) = default;
};

struct SecAggInboxMsg {
  uint64_t round = 0;
  std::vector<std::string> senders;  // every client whose shares arrived, sorted
  std::vector<SecAggSealedShareMsg> shares;

  template <class Ar>
  void serialize(Ar& ar) {
    ar(round, wire::Capped("secagg.senders", senders, kMaxSecAggClients, kMaxNameBytes),
       wire::CappedObjects("secagg.inbox", shares, kMaxSecAggShares, kMinSealedShareWireBytes));
  }
  friend bool operator==(const SecAggInboxMsg&, const SecAggInboxMsg&) = default;
};

struct SecAggMaskedInputMsg {
  uint64_t round = 0;
  uint32_t bits = 0;    // per value, 1..64
  uint64_t length = 0;  // values
  SharedBytes packed;   // ceil(length * bits / 8) bytes, little-endian bit order

  template <class Ar>
  void serialize(Ar& ar) {
    ar(round, bits, length, wire::Capped("secagg.masked", packed, kMaxPayloadBytes));
  }
  friend bool operator==(const SecAggMaskedInputMsg&, const SecAggMaskedInputMsg&) = default;
};

struct SecAggUnmaskRequestMsg {
  uint64_t round = 0;
  std::vector<std::string> survivors, dropped;  // sorted

  template <class Ar>
  void serialize(Ar& ar) {
    ar(round, wire::Capped("secagg.survivors", survivors, kMaxSecAggClients, kMaxNameBytes),
       wire::Capped("secagg.dropped", dropped, kMaxSecAggClients, kMaxNameBytes));
  }
  friend bool operator==(const SecAggUnmaskRequestMsg&, const SecAggUnmaskRequestMsg&) = default;
};

struct SecAggRevealedShareMsg {
  std::string owner;
  uint8_t kind = 0;  // 1: self-mask seed, 2: mask key
  uint32_t x = 0;
  std::vector<uint64_t> y;

  template <class Ar>
  void serialize(Ar& ar) {
    ar(wire::Capped("secagg.reveal.owner", owner, kMaxNameBytes), kind, x,
       wire::Capped("secagg.reveal.y", y, kMaxShareLimbs));
  }
  friend bool operator==(const SecAggRevealedShareMsg&, const SecAggRevealedShareMsg&) = default;
};
// owner's size tag, kind, x, y's size tag.
inline constexpr uint64_t kMinRevealedShareWireBytes = 8 + 1 + 4 + 8;

struct SecAggUnmaskResponseMsg {
  uint64_t round = 0;
  std::vector<SecAggRevealedShareMsg> shares;

  template <class Ar>
  void serialize(Ar& ar) {
    ar(round,
       wire::CappedObjects("secagg.reveal", shares, kMaxSecAggShares, kMinRevealedShareWireBytes));
  }
  friend bool operator==(const SecAggUnmaskResponseMsg&, const SecAggUnmaskResponseMsg&) = default;
};

// The size of each message's encoded body, computed from its fields (without encoding it): what
// the round engine reports as secure aggregation's extra bytes. Equal to EncodeMessageBody's size.
uint64_t WireBytes(const SecAggStartMsg& m);
uint64_t WireBytes(const SecAggKeysMsg& m);
uint64_t WireBytes(const SecAggRosterMsg& m);
uint64_t WireBytes(const SecAggSealedShareMsg& m);
uint64_t WireBytes(const SecAggSharesMsg& m);
uint64_t WireBytes(const SecAggInboxMsg& m);
uint64_t WireBytes(const SecAggMaskedInputMsg& m);
uint64_t WireBytes(const SecAggUnmaskRequestMsg& m);
uint64_t WireBytes(const SecAggUnmaskResponseMsg& m);

}  // namespace tributary
