#include "crypto/client_id.h"

#include <cstdio>

namespace tributary {

Status ValidateClientId(std::string_view client_id) {
  if (client_id.empty()) return Status::InvalidArgument("client id is empty");
  if (client_id.size() > kMaxClientIdLength)
    return Status::InvalidArgument("client id is " + std::to_string(client_id.size()) +
                                   " characters, over the limit of " +
                                   std::to_string(kMaxClientIdLength));
  for (size_t i = 0; i < client_id.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(client_id[i]);
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '-';
    if (!ok) {
      char shown[8];
      if (c >= 0x20 && c < 0x7f)
        std::snprintf(shown, sizeof(shown), "'%c'", c);
      else
        std::snprintf(shown, sizeof(shown), "0x%02x", c);
      return Status::InvalidArgument("client id has character " + std::string(shown) +
                                     " at position " + std::to_string(i) +
                                     "; allowed are A-Z a-z 0-9 . _ -");
    }
  }
  // Ids become file names (clients/<id>.crt), so the directory entries are not ids.
  if (client_id == "." || client_id == "..")
    return Status::InvalidArgument("client id may not be '.' or '..'");
  return Status::Ok();
}

std::string ClientIdUri(std::string_view client_id) {
  std::string uri(kClientIdUriPrefix);
  uri += client_id;
  return uri;
}

std::string AggregatorIdUri(std::string_view aggregator_id) {
  std::string uri(kAggregatorIdUriPrefix);
  uri += aggregator_id;
  return uri;
}

std::string_view PeerRoleName(PeerRole role) {
  return role == PeerRole::kAggregator ? "aggregator" : "client";
}

}  // namespace tributary
