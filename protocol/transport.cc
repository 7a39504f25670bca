#include "protocol/transport.h"

#include "core/parse_number.h"
#include "crypto/deny_list.h"
#include "protocol/transport_util.h"

namespace tributary {

Status TransportOptions::Validate() const {
  TRIB_RETURN_IF_ERROR(limits.Validate());
  using std::chrono::milliseconds;
  if (handshake_timeout <= milliseconds(0)) {
    return Status::InvalidArgument("handshake_timeout must be > 0");
  }
  if (frame_read_timeout <= milliseconds(0)) {
    return Status::InvalidArgument("frame_read_timeout must be > 0");
  }
  if (write_timeout <= milliseconds(0)) return Status::InvalidArgument("write_timeout must be > 0");
  if (shutdown_timeout <= milliseconds(0)) {
    return Status::InvalidArgument("shutdown_timeout must be > 0");
  }
  if (max_concurrent_handshakes == 0) {
    return Status::InvalidArgument("max_concurrent_handshakes must be > 0");
  }
  if (max_handshakes_per_address == 0) {
    return Status::InvalidArgument("max_handshakes_per_address must be > 0");
  }
  if (first_bytes_timeout <= milliseconds(0)) {
    return Status::InvalidArgument("first_bytes_timeout must be > 0");
  }
  if (budget_wait_keepalive < milliseconds(0)) {
    return Status::InvalidArgument("budget_wait_keepalive must be >= 0 (0: none)");
  }
  return Status::Ok();
}

Status CheckClientIdentity(const TransportOptions& options, const std::string& client_id) {
  if (client_id.empty()) {
    if (options.require_client_identity) {
      return ProtocolError(ErrorCode::kUnauthenticated, "the client presented no identity");
    }
    return Status::Ok();
  }
  if (options.deny_list && options.deny_list->Contains(client_id)) {
    return ProtocolError(ErrorCode::kRevoked, "client id '" + client_id + "' is revoked");
  }
  return Status::Ok();
}

}  // namespace tributary

namespace tributary {

Result<std::vector<std::string>> SplitEndpoints(const std::string& list) {
  std::vector<std::string> out;
  size_t begin = 0;
  while (true) {
    const size_t comma = list.find(',', begin);
    std::string item =
        list.substr(begin, comma == std::string::npos ? std::string::npos : comma - begin);
    const size_t first = item.find_first_not_of(" \t");
    const size_t last = item.find_last_not_of(" \t");
    item = first == std::string::npos ? std::string() : item.substr(first, last - first + 1);
    if (item.empty())
      return Status::InvalidArgument("endpoint list '" + list + "' has an empty entry " +
                                     std::to_string(out.size() + 1));
    if (out.size() == kMaxEndpoints)
      return Status::InvalidArgument("endpoint list '" + list.substr(0, 200) +
                                     "...' names more than " + std::to_string(kMaxEndpoints) +
                                     " endpoints");
    out.push_back(std::move(item));
    if (comma == std::string::npos) break;
    begin = comma + 1;
  }
  return out;
}

Result<std::pair<std::string, std::string>> SplitHostPort(const std::string& address) {
  std::string host;
  std::string port;
  if (!address.empty() && address.front() == '[') {
    const size_t close = address.find(']');
    if (close == std::string::npos || close + 1 >= address.size() || address[close + 1] != ':') {
      return Status::InvalidArgument("address '" + address + "' is not [host]:port");
    }
    host = address.substr(1, close - 1);
    port = address.substr(close + 2);
  } else {
    const size_t colon = address.rfind(':');
    if (colon == std::string::npos) {
      return Status::InvalidArgument("address '" + address + "' has no :port");
    }
    host = address.substr(0, colon);
    port = address.substr(colon + 1);
    if (host.find(':') != std::string::npos) {
      return Status::InvalidArgument("IPv6 address '" + address + "' needs brackets: [host]:port");
    }
  }
  if (host.empty() || port.empty()) {
    return Status::InvalidArgument("address '" + address + "' needs both a host and a port");
  }
  for (char c : port) {
    if (c < '0' || c > '9') {
      return Status::InvalidArgument("address '" + address + "' has a non-numeric port");
    }
  }
  if (!ParseWhole<uint16_t>(port)) {
    return Status::InvalidArgument("address '" + address + "' has a port over 65535");
  }
  return std::make_pair(host, port);
}

}  // namespace tributary
