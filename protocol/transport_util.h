// Helpers shared by the transport implementations (not part of the public transport API).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "protocol/transport.h"

namespace tributary {

// Admission of an authenticated client id on the accepting side: UNAUTHENTICATED when it is empty
// and options.require_client_identity, REVOKED when options.deny_list holds it, else OK.
Status CheckClientIdentity(const TransportOptions& options, const std::string& client_id);

// Splits "host:port", "[v6]:port" or "v4:port" into host (brackets removed) and port; both must
// be non-empty. InvalidArgument naming the address otherwise.
Result<std::pair<std::string, std::string>> SplitHostPort(const std::string& address);

// The endpoints of a client's `coordinator` option: one address, or several separated by commas
// ("agg-a:7070,agg-b:7070"; spaces around each are dropped), in the order given. Addresses are
// not checked here (an in-memory transport's are plain names); InvalidArgument for an empty list
// or an empty entry, and for more than kMaxEndpoints.
inline constexpr size_t kMaxEndpoints = 64;
Result<std::vector<std::string>> SplitEndpoints(const std::string& list);

}  // namespace tributary
