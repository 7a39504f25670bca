// Helpers shared by the transport implementations (not part of the public transport API).
#pragma once

#include <string>
#include <utility>

#include "protocol/transport.h"

namespace tributary {

// Admission of an authenticated client id on the accepting side: UNAUTHENTICATED when it is empty
// and options.require_client_identity, REVOKED when options.deny_list holds it, else OK.
Status CheckClientIdentity(const TransportOptions& options, const std::string& client_id);

// Splits "host:port", "[v6]:port" or "v4:port" into host (brackets removed) and port; both must
// be non-empty. InvalidArgument naming the address otherwise.
Result<std::pair<std::string, std::string>> SplitHostPort(const std::string& address);

}  // namespace tributary
