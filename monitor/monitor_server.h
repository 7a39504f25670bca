// MonitorServer: the coordinator's read-only HTTP endpoint for operators (Boost.Beast), on its own
// listen address and thread, apart from the clients' mutual-TLS port.
//
//   MonitorServerOptions o;
//   o.listen = "127.0.0.1:9464";  o.token = "s3cret";
//   o.routes["/metrics"] = {RunMetrics::kContentType, [&] { return metrics.Scrape(); }};
//   TRIB_ASSIGN_OR_RETURN(auto server, MonitorServer::Start(o));
//
// Each route answers GET (and HEAD) with what its function returns at that moment; other paths get
// 404, other methods 405, and a route function that throws 500 (logged; the server goes on). With a
// token, every request must carry "Authorization: Bearer <token>" (compared in constant time), else
// 401 with "WWW-Authenticate: Bearer"; refused requests are security events
// (protocol/security_log.h), at warning level.
//
// Hostile load is bounded: a request's header is at most 8 KiB and carries no body, a connection
// must send it within request_timeout, gets one answer and is closed, and at most
// max_connections are open at once (more are closed on accept).
//
// Thread-safe: the server runs on its own thread; route functions are called there and must be
// thread-safe with respect to the rest of the program. The destructor stops and joins it.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "tributary/result.h"

namespace tributary {

class SecurityLog;

struct MonitorRoute {
  std::string content_type;
  std::function<std::string()> body;
};

struct MonitorServerOptions {
  std::string listen;  // "host:port"; port 0 picks a free one (see port())
  std::string token;   // "" serves without authentication
  std::map<std::string, MonitorRoute> routes;
  size_t max_connections = 32;
  std::chrono::milliseconds request_timeout{10'000};
  std::shared_ptr<SecurityLog> security_log;  // null: a private one
};

class MonitorServer {
 public:
  // Binds and starts serving; InvalidArgument for a bad address, Unavailable when it cannot bind.
  static Result<std::unique_ptr<MonitorServer>> Start(MonitorServerOptions options);
  ~MonitorServer();
  MonitorServer(const MonitorServer&) = delete;
  MonitorServer& operator=(const MonitorServer&) = delete;

  // The bound port (the real one when listen asked for 0).
  uint16_t port() const;

  struct Impl;  // opaque; public so the connections in monitor_server.cc can name it

 private:
  explicit MonitorServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace tributary
