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
// Hostile load is bounded (docs/operations.md, "Under hostile load"): a request's header is at
// most 8 KiB and carries no body; a connection must send its first bytes within
// first_byte_timeout and the whole header within request_timeout of connecting, else it is closed
// unanswered; it gets one answer and is closed. At most max_connections requests are open at once,
// and at most max_connections_per_address connections (requests and streams) from one source
// address; more are closed on accept, a security event naming the address. A stream stays open,
// outside max_connections; at most max_streams are (more viewers get 503). A viewer must keep
// reading: a stream's socket has a send buffer of stream_send_buffer bytes (so the kernel holds
// little for it) and TCP_USER_TIMEOUT = stream_stall_timeout (a peer that acknowledges nothing is
// cut by the kernel), and a viewer whose next message has waited stream_stall_timeout to be
// written, or that falls max_stream_backlog bytes behind, is disconnected (a security event).
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
  size_t max_connections = 32;             // requests open at once (streams are not counted)
  size_t max_connections_per_address = 8;  // requests and streams open at once from one address
  size_t max_streams = 32;
  size_t max_stream_backlog = 8 << 20;   // bytes queued for one viewer before it is dropped
  size_t stream_send_buffer = 16 << 10;  // SO_SNDBUF of a stream's socket (0: the kernel's own)
  std::chrono::milliseconds keepalive{15'000};
  std::chrono::milliseconds first_byte_timeout{2'000};     // from connecting to the first bytes
  std::chrono::milliseconds request_timeout{10'000};       // from connecting to the whole header
  std::chrono::milliseconds stream_stall_timeout{30'000};  // a viewer's write pending this long
  std::shared_ptr<SecurityLog> security_log;               // null: a private one
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
  // The bound address as "host:port" ("[v6]:port"), with the real port.
  std::string address() const;
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
