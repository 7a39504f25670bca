// SecAggStart: everything a client needs to take part in one round of secure aggregation, as the
// coordinator decides it (the session, the integer domain, differential privacy on the clients),
// and its mapping to and from the wire's SecAggStartMsg (protocol/secagg_messages.h). This is the
// only place that maps the two: the coordinator's SecAggRound sends ToWire(start) and a client's
// SecAggTask builds its session from FromWire(msg), so the two sides derive the same neighbour
// degree k and threshold t from the same parameters (SecAggSession::DegreeFor). Every field of
// SecAggSession the derivations read travels (tests/privacy/secagg_start_test.cc checks the round
// trip field by field, and that k agrees for secagg.degree = 0 at any max_dropout).
//
// Pure functions; thread-safe.
#pragma once

#include <cstdint>

#include "privacy/secagg/int_domain.h"
#include "privacy/secagg/secagg_session.h"
#include "protocol/secagg_messages.h"
#include "tributary/result.h"

namespace tributary {

// Differential privacy with the noise on the clients (privacy/dp/dp_config.h): each client clips
// the values it sums to L2 norm clip_norm and adds N(0, noise_stddev^2) to each; clip_norm 0: none.
// noise_seed != 0 makes the noise reproducible (experiments only; the coordinator knows it).
struct DpOnClients {
  double clip_norm = 0.0;
  double noise_stddev = 0.0;
  uint64_t noise_seed = 0;
  bool operator==(const DpOnClients&) const = default;
};

struct SecAggStart {
  SecAggSession session;  // modulus_mask is the domain's
  IntDomainConfig domain;
  DpOnClients dp;
};

// The start message of `start`. InvalidArgument when the domain does not fit (IntDomain::Create)
// or the session's modulus is not the domain's.
Result<SecAggStartMsg> ToWire(const SecAggStart& start);

// The client's side: the start the message describes, with the modulus derived from the domain.
// InvalidArgument naming the field when the domain cannot be derived, its sum does not have the
// message's sum_bits, the vector length is outside [1, 2^36], max_dropout is outside [0, 0.5)
// (secagg.max_dropout's range), or the differential privacy parameters are out of range.
Result<SecAggStart> FromWire(const SecAggStartMsg& msg);

}  // namespace tributary
