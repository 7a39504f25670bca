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
// token, every request must carry it, as "Authorization: Bearer <token>" or, for browsers (whose
// EventSource cannot set headers), as the query parameter "access_token=<token>" (RFC 6750, 2.1
// and 2.3); it is compared in constant time. Otherwise the answer is 401 with "WWW-Authenticate:
// Bearer"; refused requests are security events (protocol/security_log.h), at warning level, logged
// without their query string so that a wrong token is not written to the log. Without a token (the
// coordinator allows that on loopback only), the Host header must be an IP address or localhost,
// else 403: a web page elsewhere cannot read the monitor through DNS rebinding.
//
// Streams are server-sent events (text/event-stream, the HTML living standard's EventSource): a GET
// of a stream's path is answered with its hello() message (a snapshot) and then, until either side
// closes, with every message Publish()ed to that path, each as one "data:" event, and a comment
// line every keepalive so that dead viewers are noticed. A viewer that falls behind by more than
// max_stream_backlog bytes is disconnected (its browser reconnects and gets a fresh snapshot).
//
// Hostile load is bounded: a request's header is at most 8 KiB and carries no body, a connection
// must send it within request_timeout, gets one answer and is closed, and at most max_connections
// requests are open at once (more are closed on accept). A stream stays open, outside that count;
// at most max_streams are (more viewers get 503).
//
// Thread-safe: the server runs on its own thread; route and hello functions are called there and
// must be thread-safe with respect to the rest of the program. Publish may be called from any
// thread. The destructor stops and joins it.
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

struct MonitorStream {
  // The first message a new viewer gets (one line of text, e.g. JSON), on the server's thread.
  std::function<std::string()> hello;
};

struct MonitorServerOptions {
  std::string listen;  // "host:port"; port 0 picks a free one (see port())
  std::string token;   // "" serves without authentication
  std::map<std::string, MonitorRoute> routes;
  std::map<std::string, MonitorStream> streams;
  size_t max_connections = 32;
  size_t max_streams = 32;
  size_t max_stream_backlog = 8 << 20;  // bytes queued for one viewer before it is dropped
  std::chrono::milliseconds keepalive{15'000};
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
  // Sends `message` (one line; newlines are sent as separate data lines) to every viewer of the
  // stream at `path`. Thread-safe; returns at once (the sending happens on the server's thread).
  void Publish(const std::string& path, std::string message);
  // Viewers connected to any stream now (thread-safe).
  size_t viewers() const;

  struct Impl;  // opaque; public so the connections in monitor_server.cc can name it

 private:
  explicit MonitorServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace tributary
