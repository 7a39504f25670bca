// DenyList: the set of revoked client ids that the coordinator refuses after the TLS handshake.
//
// Revocation is by id (the id a client certificate carries, see client_id.h), so revoking a client
// needs no CRL: add its id to the file and LoadFile() again. The file format is text, one id per
// line; leading and trailing whitespace is ignored, '#' starts a comment that runs to the end of
// the line, and blank lines are skipped:
//     # lost laptop, 2025-03-02
//     edge-17
//     edge-42   # retired
// Thread safety: all methods may be called concurrently (a shared mutex guards the set); a reload
// replaces the whole set at once, so a reader never sees a half-loaded list.
#pragma once

#include <cstdint>
#include <set>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <vector>

#include "tributary/result.h"

namespace tributary {

class DenyList {
 public:
  // A deny-list file larger than this is refused (OutOfRange) before it is read.
  static constexpr uint64_t kMaxFileBytes = 16 << 20;

  DenyList() = default;
  DenyList(const DenyList&) = delete;
  DenyList& operator=(const DenyList&) = delete;

  // Parses deny-list text. A line that is not a valid client id is InvalidArgument naming
  // "<source>:<line>" and the reason; duplicates are allowed and collapse.
  static Result<std::set<std::string, std::less<>>> Parse(std::string_view text,
                                                          std::string_view source);

  // Replaces the set with the ids in `path`. On any error (missing file: NotFound; too large;
  // bad line) the set is left as it was.
  Status LoadFile(const std::string& path);

  // Adds one id (InvalidArgument if malformed); returns OK also when it was already present.
  Status Add(std::string_view client_id);
  // Removes one id; returns whether it was present.
  bool Remove(std::string_view client_id);

  bool Contains(std::string_view client_id) const;
  size_t size() const;
  // A sorted snapshot of the ids.
  std::vector<std::string> Ids() const;

 private:
  mutable std::shared_mutex mu_;
  std::set<std::string, std::less<>> ids_;  // GUARDED_BY(mu_)
};

}  // namespace tributary
