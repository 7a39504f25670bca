#include "monitor/monitor_server.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>

#include <fmt/format.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <deque>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "core/log.h"
#include "core/parse_number.h"
#include "protocol/security_log.h"
#include "protocol/transport_util.h"

namespace tributary {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

constexpr uint32_t kMaxHeaderBytes = 8 * 1024;

// Equal lengths and contents, in time that does not depend on where they differ.
bool ConstantTimeEquals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i)
    diff |= static_cast<unsigned char>(a[i]) ^ static_cast<unsigned char>(b[i]);
  return diff == 0;
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// The percent-decoded value of `name` in a target's query string, if present.
std::optional<std::string> QueryParameter(std::string_view target, std::string_view name) {
  const size_t q = target.find('?');
  if (q == std::string_view::npos) return std::nullopt;
  std::string_view query = target.substr(q + 1);
  while (!query.empty()) {
    const size_t amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    const size_t eq = pair.find('=');
    if (pair.substr(0, eq) != name || eq == std::string_view::npos) continue;
    std::string value;
    const std::string_view raw = pair.substr(eq + 1);
    for (size_t i = 0; i < raw.size(); ++i) {
      if (raw[i] == '%' && i + 2 < raw.size()) {
        const int hi = HexValue(raw[i + 1]), lo = HexValue(raw[i + 2]);
        if (hi >= 0 && lo >= 0) {
          value += static_cast<char>(hi * 16 + lo);
          i += 2;
          continue;
        }
      }
      value += raw[i] == '+' ? ' ' : raw[i];
    }
    return value;
  }
  return std::nullopt;
}

// `message` as one server-sent event: a "data:" line per line of it, then a blank line. CR, LF and
// CRLF all end a line for EventSource, so each of them starts a new "data:" line here: a message
// can never smuggle in a field of its own (event:, id:, retry:).
std::string SseEvent(std::string_view message) {
  std::string out;
  out.reserve(message.size() + 16);
  while (true) {
    const size_t end = message.find_first_of("\r\n");
    out += "data: ";
    out += message.substr(0, end);
    out += '\n';
    if (end == std::string_view::npos) break;
    const size_t next = message.compare(end, 2, "\r\n") == 0 ? end + 2 : end + 1;
    message = message.substr(next);
  }
  out += '\n';
  return out;
}

class StreamSession;

// One connection's place in the count of its source address, given back when destroyed; moves
// from a request to the stream it becomes. On the server's thread only.
class AddressSlot {
 public:
  AddressSlot(std::map<std::string, size_t>* counts, std::string address)
      : counts_(counts), address_(std::move(address)) {
    ++(*counts_)[address_];
  }
  AddressSlot(AddressSlot&& other) noexcept
      : counts_(std::exchange(other.counts_, nullptr)), address_(std::move(other.address_)) {}
  AddressSlot& operator=(AddressSlot&&) = delete;
  ~AddressSlot() {
    if (counts_ == nullptr) return;
    const auto it = counts_->find(address_);
    if (it != counts_->end() && --it->second == 0) counts_->erase(it);
  }
  const std::string& address() const { return address_; }

 private:
  std::map<std::string, size_t>* counts_;
  std::string address_;
};

}  // namespace

struct MonitorServer::Impl {
  // Declared before io: the sessions io still holds when it is destroyed use them.
  MonitorServerOptions options;
  std::atomic<size_t> open{0};
  std::atomic<size_t> streams_open{0};
  std::shared_ptr<SecurityLog> security;
  // The viewers of each stream, and the connections open per source address (requests and
  // streams); touched only on the server's thread.
  std::map<std::string, std::vector<std::weak_ptr<StreamSession>>> viewers;
  std::map<std::string, size_t> per_address;
  asio::io_context io;
  tcp::acceptor acceptor{io};
  asio::steady_timer retry{io};  // paces accepting again after an accept error
  uint16_t port = 0;
  std::string address;  // "host:port" as bound
  std::thread thread;

  void Accept();
  // The refusal for a request without the token, or nullopt when it may go on.
  std::optional<http::response<http::string_body>> Refuse(
      const http::request<http::empty_body>& req, const std::string& remote);
  http::response<http::string_body> Answer(const http::request<http::empty_body>& req,
                                           const std::string& remote);
  // The stream `req` asks for, or null.
  const MonitorStream* StreamFor(const http::request<http::empty_body>& req) const;
};

namespace {

// One connection: read one request (bounded), answer, close.
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(MonitorServer::Impl* server, tcp::socket socket, AddressSlot slot)
      : server_(server), stream_(std::move(socket)), slot_(std::move(slot)) {}
  ~Session() { server_->open.fetch_sub(1); }

  // Waits first_byte_timeout for the first bytes, then reads the rest of the header until
  // request_timeout after connecting: a connection that sends nothing gives its place back soon.
  void Start() {
    parser_.header_limit(kMaxHeaderBytes);
    parser_.body_limit(0);
    connected_ = std::chrono::steady_clock::now();
    stream_.expires_after(
        std::min(server_->options.first_byte_timeout, server_->options.request_timeout));
    stream_.async_read_some(
        buffer_.prepare(kMaxHeaderBytes),
        [self = shared_from_this()](beast::error_code e, size_t n) { self->OnFirstBytes(e, n); });
  }

 private:
  void OnFirstBytes(beast::error_code ec, size_t n) {
    if (ec == beast::error::timeout)
      server_->security->Note("monitor connection sent no request in time", remote(),
                              fmt::format("nothing within {} ms (monitor.first_byte_timeout_s)",
                                          server_->options.first_byte_timeout.count()));
    if (ec) return;
    buffer_.commit(n);
    stream_.expires_at(connected_ + server_->options.request_timeout);
    http::async_read(stream_, buffer_, parser_,
                     [self = shared_from_this()](beast::error_code e, size_t) { self->OnRead(e); });
  }
  void OnRead(beast::error_code ec);
  const std::string& remote() const { return slot_.address(); }

 private:
  friend class StreamSession;
  void Respond(http::response<http::string_body> response) {
    response_ = std::move(response);
    response_.keep_alive(false);
    response_.prepare_payload();
    if (parser_.get().method() == http::verb::head) response_.body().clear();  // length stays
    http::async_write(stream_, response_, [self = shared_from_this()](beast::error_code, size_t) {
      beast::error_code ignored;
      self->stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
    });
  }

  MonitorServer::Impl* server_;
  beast::tcp_stream stream_;
  AddressSlot slot_;
  std::chrono::steady_clock::time_point connected_;
  beast::flat_buffer buffer_;
  http::request_parser<http::empty_body> parser_;
  http::response<http::string_body> response_;
};

// A viewer of a stream: after its header and hello, every published message, in order; a
// keepalive comment when nothing was sent for a while. Lives on the server's thread.
class StreamSession : public std::enable_shared_from_this<StreamSession> {
 public:
  StreamSession(MonitorServer::Impl* server, beast::tcp_stream stream, AddressSlot slot)
      : server_(server),
        socket_(stream.release_socket()),
        slot_(std::move(slot)),
        keepalive_(socket_.get_executor()),
        stall_(socket_.get_executor()) {}
  ~StreamSession() { server_->streams_open.fetch_sub(1); }

  void Start(std::string hello) {
    // A small send buffer, so that what a viewer does not read waits here, where the stall timer
    // sees it, and not in the kernel (which autotunes to megabytes); and a user timeout, so that
    // the kernel cuts a peer that acknowledges nothing (a laptop put to sleep) even while this
    // side has nothing queued. Events go out as they come (no Nagle: an event that waits for the
    // viewer's delayed ACK reaches the dashboard about 40 ms late, and a queue drains slowly).
    beast::error_code ignored;
    socket_.set_option(tcp::no_delay(true), ignored);
    const MonitorServerOptions& o = server_->options;
    if (o.stream_send_buffer > 0)
      socket_.set_option(asio::socket_base::send_buffer_size(
                             static_cast<int>(std::min<size_t>(o.stream_send_buffer, 1 << 30))),
                         ignored);
#ifdef TCP_USER_TIMEOUT
    const unsigned int user_timeout_ms = static_cast<unsigned int>(o.stream_stall_timeout.count());
    ::setsockopt(socket_.native_handle(), IPPROTO_TCP, TCP_USER_TIMEOUT, &user_timeout_ms,
                 sizeof user_timeout_ms);
#endif
    Send(
        "HTTP/1.1 200 OK\r\nServer: tributary-coordinator\r\n"
        "Content-Type: text/event-stream; charset=utf-8\r\nCache-Control: no-store\r\n"
        "X-Accel-Buffering: no\r\nConnection: close\r\n\r\n" +
        SseEvent(hello));
    // Reading only notices that the viewer went away (a stream's request has no body).
    socket_.async_read_some(asio::buffer(sink_), [self = shared_from_this()](
                                                     beast::error_code, size_t) { self->Close(); });
    ArmKeepalive();
  }

  // Closes once what is queued has been sent (at once when nothing is).
  void CloseWhenSent() {
    close_when_sent_ = true;
    if (queue_.empty()) Close();
  }

  void Send(std::string bytes) {
    if (closed_) return;
    backlog_ += bytes.size();
    if (backlog_ > server_->options.max_stream_backlog) {
      server_->security->Note("monitor viewer stopped reading", slot_.address(),
                              fmt::format("{} bytes behind; disconnected", backlog_));
      Abort();
      return;
    }
    queue_.push_back(std::move(bytes));
    if (queue_.size() == 1) WriteNext();
  }

 private:
  void WriteNext() {
    // Each write has stream_stall_timeout to complete: with the small send buffer, a write waits
    // only while the viewer does not read, and a viewer that stopped reading without closing
    // would otherwise hold its place for ever.
    stall_.expires_after(server_->options.stream_stall_timeout);
    stall_.async_wait([self = shared_from_this()](beast::error_code ec) {
      if (ec || self->closed_) return;
      self->server_->security->Note(
          "monitor viewer stopped reading", self->slot_.address(),
          fmt::format("a write waited {} ms (monitor.stream_stall_timeout_s), {} bytes queued; "
                      "disconnected",
                      self->server_->options.stream_stall_timeout.count(), self->backlog_));
      self->Abort();
    });
    asio::async_write(socket_, asio::buffer(queue_.front()),
                      [self = shared_from_this()](beast::error_code ec, size_t) {
                        if (ec == asio::error::timed_out && !self->closed_) {
                          // TCP_USER_TIMEOUT: the viewer's kernel took nothing for that long.
                          self->server_->security->Note(
                              "monitor viewer stopped reading", self->slot_.address(),
                              fmt::format("nothing acknowledged in {} ms "
                                          "(monitor.stream_stall_timeout_s); disconnected",
                                          self->server_->options.stream_stall_timeout.count()));
                          return self->Abort();
                        }
                        if (ec || self->closed_) return self->Close();
                        self->backlog_ -= self->queue_.front().size();
                        self->queue_.pop_front();
                        if (!self->queue_.empty())
                          self->WriteNext();
                        else if (self->close_when_sent_)
                          self->Close();
                        else
                          self->stall_.cancel();
                      });
  }

  void ArmKeepalive() {
    keepalive_.expires_after(server_->options.keepalive);
    keepalive_.async_wait([self = shared_from_this()](beast::error_code ec) {
      if (ec || self->closed_) return;
      if (self->queue_.empty()) self->Send(": keepalive\n\n");
      self->ArmKeepalive();
    });
  }

  // Drops a viewer that stopped reading: a reset (linger 0), so that what it did not read is
  // discarded at once rather than left in an orphaned socket that probes a zero window until
  // the kernel gives up on it, possibly without telling the viewer (which then waits for ever).
  void Abort() {
    if (closed_) return;
    beast::error_code ignored;
    socket_.set_option(asio::socket_base::linger(true, 0), ignored);
    closed_ = true;
    keepalive_.cancel();
    stall_.cancel();
    socket_.close(ignored);
  }

  void Close() {
    if (closed_) return;
    closed_ = true;
    beast::error_code ignored;
    keepalive_.cancel();
    stall_.cancel();
    socket_.shutdown(tcp::socket::shutdown_both, ignored);
    socket_.close(ignored);
  }

  MonitorServer::Impl* server_;
  tcp::socket socket_;
  AddressSlot slot_;
  asio::steady_timer keepalive_;
  asio::steady_timer stall_;  // armed while a write is pending
  std::deque<std::string> queue_;
  size_t backlog_ = 0;
  bool closed_ = false;
  bool close_when_sent_ = false;
  char sink_[256];
};

void Session::OnRead(beast::error_code ec) {
  if (ec) return;  // timed out, closed, or over the limits: nothing to answer
  const auto& req = parser_.get();
  if (auto refusal = server_->Refuse(req, remote())) return Respond(std::move(*refusal));
  const MonitorStream* stream = server_->StreamFor(req);
  if (stream == nullptr) return Respond(server_->Answer(req, remote()));
  if (server_->streams_open.fetch_add(1) >= server_->options.max_streams) {
    server_->streams_open.fetch_sub(1);
    http::response<http::string_body> busy{http::status::service_unavailable, req.version()};
    busy.set(http::field::content_type, "text/plain; charset=utf-8");
    busy.set(http::field::retry_after, "10");
    busy.body() = "503 too many viewers\n";
    Log().warn("monitor: refused a viewer from {}: {} streams are open", remote(),
               server_->options.max_streams);
    return Respond(std::move(busy));
  }
  std::string hello;
  try {
    hello = stream->hello();
  } catch (const std::exception& e) {
    server_->streams_open.fetch_sub(1);
    Log().warn("monitor: a stream's snapshot failed: {}", e.what());
    http::response<http::string_body> failed{http::status::internal_server_error, req.version()};
    failed.set(http::field::content_type, "text/plain; charset=utf-8");
    failed.body() = "500 internal error\n";
    return Respond(std::move(failed));
  }
  stream_.expires_never();
  auto viewer = std::make_shared<StreamSession>(server_, std::move(stream_), std::move(slot_));
  std::string_view target(req.target().data(), req.target().size());
  server_->viewers[std::string(target.substr(0, target.find('?')))].push_back(viewer);
  viewer->Start(std::move(hello));
}

}  // namespace

void MonitorServer::Impl::Accept() {
  acceptor.async_accept([this](beast::error_code ec, tcp::socket socket) {
    if (ec == asio::error::operation_aborted) return;
    if (ec) {
      // Out of file descriptors, say: the listening socket stays readable, so accepting again at
      // once would spin. Wait a little first.
      Log().warn("monitor: accept failed: {}", ec.message());
      retry.expires_after(std::chrono::milliseconds(100));
      retry.async_wait([this](beast::error_code wait_ec) {
        if (!wait_ec) Accept();
      });
      return;
    }
    beast::error_code peer_ec;
    const tcp::endpoint peer = socket.remote_endpoint(peer_ec);
    std::string remote = peer_ec ? std::string("unknown") : peer.address().to_string();
    // One address may not take every place; the refusal names it (rate-limited per address).
    const auto from_it = per_address.find(remote);
    const size_t from_remote = from_it == per_address.end() ? 0 : from_it->second;
    beast::error_code ignored;
    if (from_remote >= options.max_connections_per_address) {
      security->Note("too many monitor connections from one address", remote,
                     fmt::format("closed: {} already open from it "
                                 "(monitor.max_connections_per_address)",
                                 from_remote));
      socket.close(ignored);
    } else if (open.fetch_add(1) >= options.max_connections) {
      open.fetch_sub(1);
      security->Note("monitor connection refused: every request slot is taken", remote,
                     fmt::format("closed: {} requests open (monitor.max_connections)",
                                 options.max_connections));
      socket.close(ignored);
    } else {
      AddressSlot slot(&per_address, std::move(remote));
      std::make_shared<Session>(this, std::move(socket), std::move(slot))->Start();
    }
    Accept();
  });
}

namespace {

http::response<http::string_body> PlainResponse(unsigned version, http::status status,
                                                std::string text) {
  http::response<http::string_body> res{status, version};
  res.set(http::field::server, "tributary-coordinator");
  res.set(http::field::cache_control, "no-store");
  res.set(http::field::content_type, "text/plain; charset=utf-8");
  res.body() = std::move(text);
  return res;
}

std::string_view PathOf(const http::request<http::empty_body>& req) {
  const std::string_view target(req.target().data(), req.target().size());
  return target.substr(0, target.find('?'));
}

}  // namespace

namespace {

// Whether a request's Host names this machine by address or as localhost. Without a token the
// monitor listens on loopback only; this keeps a web page that an operator's browser loads from
// elsewhere from reading it through DNS rebinding (its Host is then the page's own name).
bool LocalHost(std::string_view host) {
  if (host.size() > 1 && host.front() == '[') {  // [IPv6]:port
    const size_t close = host.find(']');
    if (close == std::string_view::npos) return false;
    host = host.substr(1, close - 1);
  } else if (const size_t colon = host.rfind(':'); colon != std::string_view::npos) {
    host = host.substr(0, colon);
  }
  std::string name(host);
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (name == "localhost") return true;
  beast::error_code ec;
  asio::ip::make_address(name, ec);
  return !ec;
}

}  // namespace

std::optional<http::response<http::string_body>> MonitorServer::Impl::Refuse(
    const http::request<http::empty_body>& req, const std::string& remote) {
  if (options.token.empty()) {
    const auto host = req.find(http::field::host);
    if (host == req.end() ||
        !LocalHost(std::string_view(host->value().data(), host->value().size()))) {
      security->Note("monitor request for another host", remote, std::string(PathOf(req)));
      return PlainResponse(req.version(), http::status::forbidden,
                           "403 forbidden: without monitor.token, the Host must be an IP address "
                           "or localhost\n");
    }
  } else {
    const auto auth = req.find(http::field::authorization);
    const std::string_view given =
        auth == req.end() ? std::string_view()
                          : std::string_view(auth->value().data(), auth->value().size());
    const std::string_view target(req.target().data(), req.target().size());
    const std::optional<std::string> param = QueryParameter(target, "access_token");
    const bool header_ok = ConstantTimeEquals(given, "Bearer " + options.token);
    const bool param_ok = param && ConstantTimeEquals(*param, options.token);
    if (!header_ok && !param_ok) {
      const auto method = req.method_string();
      security->Note("monitor request without a valid token", remote,
                     std::string(method.data(), method.size()) + " " + std::string(PathOf(req)));
      auto res = PlainResponse(req.version(), http::status::unauthorized,
                               "401 unauthorized: send Authorization: Bearer, or access_token=\n");
      res.set(http::field::www_authenticate, "Bearer realm=\"tributary\"");
      return res;
    }
  }
  if (req.method() != http::verb::get && req.method() != http::verb::head) {
    auto res =
        PlainResponse(req.version(), http::status::method_not_allowed, "405 method not allowed\n");
    res.set(http::field::allow, "GET, HEAD");
    return res;
  }
  return std::nullopt;
}

const MonitorStream* MonitorServer::Impl::StreamFor(
    const http::request<http::empty_body>& req) const {
  if (req.method() != http::verb::get) return nullptr;
  const auto it = options.streams.find(std::string(PathOf(req)));
  return it == options.streams.end() ? nullptr : &it->second;
}

http::response<http::string_body> MonitorServer::Impl::Answer(
    const http::request<http::empty_body>& req, const std::string& /*remote*/) {
  const auto route = options.routes.find(std::string(PathOf(req)));
  if (route == options.routes.end())
    return PlainResponse(req.version(), http::status::not_found, "404 not found\n");
  http::response<http::string_body> res{http::status::ok, req.version()};
  res.set(http::field::server, "tributary-coordinator");
  res.set(http::field::cache_control, "no-store");
  res.set(http::field::content_type, route->second.content_type);
  try {
    res.body() = route->second.body();
  } catch (const std::exception& e) {
    // A route that fails answers 500; it never takes the coordinator down.
    Log().warn("monitor: {} failed: {}", route->first, e.what());
    return PlainResponse(req.version(), http::status::internal_server_error,
                         "500 internal error\n");
  }
  return res;
}

MonitorServer::MonitorServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Result<std::unique_ptr<MonitorServer>> MonitorServer::Start(MonitorServerOptions options) {
  TRIB_ASSIGN_OR_RETURN(auto host_port, SplitHostPort(options.listen));
  auto impl = std::make_unique<Impl>();
  beast::error_code ec;
  const asio::ip::address address = asio::ip::make_address(host_port.first, ec);
  if (ec)
    return Status::InvalidArgument("monitor address '" + options.listen +
                                   "': the host must be an IP address (" + ec.message() + ")");
  const std::optional<uint16_t> port = ParseWhole<uint16_t>(host_port.second);
  if (!port) return Status::InvalidArgument("monitor address '" + options.listen + "': bad port");
  const tcp::endpoint endpoint(address, *port);
  impl->acceptor.open(endpoint.protocol(), ec);
  if (!ec) impl->acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) impl->acceptor.bind(endpoint, ec);
  if (!ec) impl->acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec)
    return Status::Unavailable("monitor: cannot listen on " + options.listen + ": " + ec.message());
  const tcp::endpoint bound = impl->acceptor.local_endpoint(ec);
  impl->port = bound.port();
  impl->address = (bound.address().is_v6() ? "[" + bound.address().to_string() + "]"
                                           : bound.address().to_string()) +
                  ":" + std::to_string(impl->port);
  impl->security = options.security_log ? options.security_log : std::make_shared<SecurityLog>();
  impl->options = std::move(options);
  impl->Accept();
  Impl* raw = impl.get();
  impl->thread = std::thread([raw] { raw->io.run(); });
  return std::unique_ptr<MonitorServer>(new MonitorServer(std::move(impl)));
}

MonitorServer::~MonitorServer() {
  // The streams send what is queued (the run's last changes) before the server stops: up to a
  // second, for viewers that read.
  Impl* impl = impl_.get();
  asio::post(impl->io, [impl] {
    impl->acceptor.close();
    for (auto& [path, list] : impl->viewers)
      for (auto& weak : list)
        if (auto viewer = weak.lock()) viewer->CloseWhenSent();
  });
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  while (impl->streams_open.load() > 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  impl_->io.stop();
  if (impl_->thread.joinable()) impl_->thread.join();
}

uint16_t MonitorServer::port() const { return impl_->port; }

std::string MonitorServer::address() const { return impl_->address; }

void MonitorServer::Publish(const std::string& path, std::string message) {
  Impl* impl = impl_.get();
  asio::post(impl->io, [impl, path, event = SseEvent(message)] {
    const auto it = impl->viewers.find(path);
    if (it == impl->viewers.end()) return;
    auto& list = it->second;
    // Send to the viewers still there, and forget the others.
    std::erase_if(list, [&event](const std::weak_ptr<StreamSession>& weak) {
      const auto viewer = weak.lock();
      if (viewer) viewer->Send(event);
      return !viewer;
    });
  });
}

size_t MonitorServer::viewers() const { return impl_->streams_open.load(); }

}  // namespace tributary
