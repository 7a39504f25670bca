// Client identities carried in client certificates.
//
// A client id is 1..64 characters of [A-Za-z0-9._-]. A client certificate carries it twice: as the
// subject CN and as the SAN URI "tributary://client/<id>". The SAN URI is authoritative.
#pragma once

#include <string>
#include <string_view>

#include "tributary/status.h"

namespace tributary {

inline constexpr size_t kMaxClientIdLength = 64;
inline constexpr std::string_view kClientIdUriPrefix = "tributary://client/";

// OK for a well-formed id; otherwise InvalidArgument saying what is wrong (empty, too long, or the
// first bad character and its position). Rejecting "." and ".." too, since ids name files.
Status ValidateClientId(std::string_view client_id);

// "tributary://client/<id>". Does not validate.
std::string ClientIdUri(std::string_view client_id);

}  // namespace tributary
