// SecurityLog: security events (refused handshakes, revoked or unauthenticated clients, hostile
// frames, admission refusals) logged at warning level, so they are visible at the default level,
// without letting a flood of them flood the log.
//
// The first event of a (reason, source address) pair in a window is logged at once, with its
// detail. Further events of the same pair in the window are only counted; when the window ends
// (Flush, called by its owner's timer and on the next event after the window) one line per pair
// summarizes them, with the first kSummaryDetails details that differ from the one shown (so the
// clients behind one address, a NAT's or an aggregator's, are named too, not only the first):
//   security: in the last 60 s: 523 more x 'TLS handshake timed out' from 127.0.0.1 (1 shown
//   above); others: <detail>; <detail>; <detail>; ...
// Counts per reason since the start (Totals) are kept for a metrics endpoint.
//
// Thread-safe: events come from every connection's strand.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tributary {

class SecurityLog {
 public:
  using Clock = std::chrono::steady_clock;
  explicit SecurityLog(std::chrono::seconds window = std::chrono::seconds(60));
  ~SecurityLog();

  // One event: `reason` is a short stable phrase ("TLS handshake failed"), `source` the remote
  // address without port, `detail` what this occurrence adds (a client id, OpenSSL's reason).
  void Note(std::string_view reason, std::string_view source, std::string_view detail,
            Clock::time_point now = Clock::now());
  // Summarizes the window if it is over (or `force`).
  void Flush(bool force = false, Clock::time_point now = Clock::now());
  // Events per reason since the start.
  std::map<std::string, uint64_t> Totals() const;

 private:
  static constexpr size_t kSummaryDetails = 3;
  static constexpr size_t kSummaryDetailBytes = 200;
  struct Pending {
    uint64_t shown = 0;                // logged individually this window
    uint64_t counted = 0;              // only counted this window
    std::string shown_detail;          // the detail logged
    std::vector<std::string> details;  // other details of counted events, in order, distinct
    bool more_details = false;         // others beyond kSummaryDetails
  };
  void FlushLocked(Clock::time_point now);

  const std::chrono::seconds window_;
  mutable std::mutex mu_;
  Clock::time_point window_start_;                                  // GUARDED_BY(mu_)
  std::map<std::pair<std::string, std::string>, Pending> pending_;  // GUARDED_BY(mu_)
  std::map<std::string, uint64_t> totals_;                          // GUARDED_BY(mu_)
};

// The address part of "ip:port" / "[v6]:port" ("unknown" stays as it is).
std::string SourceAddress(std::string_view endpoint);

}  // namespace tributary
