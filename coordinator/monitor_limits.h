// MonitorLimits: what the monitor (monitor.listen) lets a client of its HTTP port hold, the
// monitor.* keys besides listen and token; bound and checked with the coordinator's config
// (coordinator_config.h), and passed on to MonitorServerOptions (monitor/monitor_server.h, which
// says what each one bounds). The defaults are the server's. docs/operations.md, "Under hostile
// load", has them with what they cost.
#pragma once

#include <chrono>
#include <cstdint>

namespace tributary {

struct MonitorLimits {
  int64_t max_connections = 32;                            // requests open at once
  int64_t max_connections_per_address = 8;                 // requests and streams from one address
  int64_t max_streams = 32;                                // dashboard viewers at once
  std::chrono::milliseconds first_byte_timeout{2'000};     // a request's first bytes
  std::chrono::milliseconds request_timeout{10'000};       // its whole header
  std::chrono::milliseconds stream_stall_timeout{30'000};  // a viewer's write pending this long
  int64_t stream_send_buffer_kb = 16;  // a viewer's socket send buffer (0: the kernel's)
};

}  // namespace tributary
