// Client (and aggregator) identities carried in certificates.
//
// A client id is 1..64 characters of [A-Za-z0-9._-]. A client certificate carries it twice: as the
// subject CN and as the SAN URI "tributary://client/<id>". The SAN URI is authoritative.
// An aggregator of the aggregation tier (tributary-aggregator) has an id of the same syntax in the
// SAN URI "tributary://aggregator/<id>"; its certificate is both a server's (its clients connect
// to it) and a client's (it connects to the coordinator), and the role comes from the URI, so a
// client certificate can never act as an aggregator, nor an aggregator's as a client.
#pragma once

#include <string>
#include <string_view>

#include "tributary/status.h"

namespace tributary {

inline constexpr size_t kMaxClientIdLength = 64;
inline constexpr std::string_view kClientIdUriPrefix = "tributary://client/";
inline constexpr std::string_view kAggregatorIdUriPrefix = "tributary://aggregator/";

// Who authenticated: a client, or an aggregator of the tier.
enum class PeerRole { kClient, kAggregator };
struct PeerIdentity {
  std::string id;
  PeerRole role = PeerRole::kClient;
};
// "client" or "aggregator".
std::string_view PeerRoleName(PeerRole role);

// OK for a well-formed id; otherwise InvalidArgument saying what is wrong (empty, too long, or the
// first bad character and its position). Rejecting "." and ".." too, since ids name files.
Status ValidateClientId(std::string_view client_id);

// "tributary://client/<id>". Does not validate.
std::string ClientIdUri(std::string_view client_id);
// "tributary://aggregator/<id>". Does not validate.
std::string AggregatorIdUri(std::string_view aggregator_id);

}  // namespace tributary
