#include "monitor/monitor_server.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <boost/asio/steady_timer.hpp>

#include <atomic>
#include <charconv>
#include <thread>

#include "core/log.h"
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

}  // namespace

struct MonitorServer::Impl {
  // Declared before io: the sessions io still holds when it is destroyed use them.
  MonitorServerOptions options;
  std::atomic<size_t> open{0};
  std::shared_ptr<SecurityLog> security;
  asio::io_context io;
  tcp::acceptor acceptor{io};
  asio::steady_timer retry{io};  // paces accepting again after an accept error
  uint16_t port = 0;
  std::thread thread;

  void Accept();
  void Serve(tcp::socket socket);
  http::response<http::string_body> Answer(const http::request<http::empty_body>& req,
                                           const std::string& remote);
};

namespace {

// One connection: read one request (bounded), answer, close.
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(MonitorServer::Impl* server, tcp::socket socket)
      : server_(server), stream_(std::move(socket)) {}
  ~Session() { server_->open.fetch_sub(1); }

  void Start() {
    beast::error_code ec;
    const tcp::endpoint peer = stream_.socket().remote_endpoint(ec);
    remote_ = ec ? std::string("unknown") : peer.address().to_string();
    parser_.header_limit(kMaxHeaderBytes);
    parser_.body_limit(0);
    stream_.expires_after(server_->options.request_timeout);
    http::async_read(stream_, buffer_, parser_,
                     [self = shared_from_this()](beast::error_code e, size_t) { self->OnRead(e); });
  }

 private:
  void OnRead(beast::error_code ec) {
    if (ec) return;  // timed out, closed, or over the limits: nothing to answer
    response_ = server_->Answer(parser_.get(), remote_);
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
  beast::flat_buffer buffer_;
  http::request_parser<http::empty_body> parser_;
  http::response<http::string_body> response_;
  std::string remote_;
};

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
    if (open.fetch_add(1) >= options.max_connections) {
      open.fetch_sub(1);
      beast::error_code ignored;
      socket.close(ignored);
    } else {
      std::make_shared<Session>(this, std::move(socket))->Start();
    }
    Accept();
  });
}

http::response<http::string_body> MonitorServer::Impl::Answer(
    const http::request<http::empty_body>& req, const std::string& remote) {
  http::response<http::string_body> res;
  res.version(req.version());
  res.set(http::field::server, "tributary-coordinator");
  res.set(http::field::cache_control, "no-store");
  auto plain = [&](http::status status, std::string text) {
    res.result(status);
    res.set(http::field::content_type, "text/plain; charset=utf-8");
    res.body() = std::move(text);
    return res;
  };
  if (!options.token.empty()) {
    const auto auth = req.find(http::field::authorization);
    const std::string_view given =
        auth == req.end() ? std::string_view()
                          : std::string_view(auth->value().data(), auth->value().size());
    if (!ConstantTimeEquals(given, "Bearer " + options.token)) {
      const auto method = req.method_string();
      security->Note("monitor request without a valid token", remote,
                     std::string(method.data(), method.size()) + " " +
                         std::string(req.target().data(), req.target().size()));
      res.set(http::field::www_authenticate, "Bearer realm=\"tributary\"");
      return plain(http::status::unauthorized, "401 unauthorized: send Authorization: Bearer\n");
    }
  }
  if (req.method() != http::verb::get && req.method() != http::verb::head) {
    res.set(http::field::allow, "GET, HEAD");
    return plain(http::status::method_not_allowed, "405 method not allowed\n");
  }
  std::string_view target(req.target().data(), req.target().size());
  target = target.substr(0, target.find('?'));
  const auto route = options.routes.find(std::string(target));
  if (route == options.routes.end()) return plain(http::status::not_found, "404 not found\n");
  res.result(http::status::ok);
  res.set(http::field::content_type, route->second.content_type);
  try {
    res.body() = route->second.body();
  } catch (const std::exception& e) {
    // A route that fails answers 500; it never takes the coordinator down.
    Log().warn("monitor: {} failed: {}", route->first, e.what());
    return plain(http::status::internal_server_error, "500 internal error\n");
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
  const std::string& port_text = host_port.second;
  unsigned port = 0;
  const auto parsed = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (parsed.ec != std::errc() || parsed.ptr != port_text.data() + port_text.size() || port > 65535)
    return Status::InvalidArgument("monitor address '" + options.listen + "': bad port");
  const tcp::endpoint endpoint(address, static_cast<uint16_t>(port));
  impl->acceptor.open(endpoint.protocol(), ec);
  if (!ec) impl->acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) impl->acceptor.bind(endpoint, ec);
  if (!ec) impl->acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec)
    return Status::Unavailable("monitor: cannot listen on " + options.listen + ": " + ec.message());
  impl->port = impl->acceptor.local_endpoint(ec).port();
  impl->security = options.security_log ? options.security_log : std::make_shared<SecurityLog>();
  impl->options = std::move(options);
  impl->Accept();
  Impl* raw = impl.get();
  impl->thread = std::thread([raw] { raw->io.run(); });
  return std::unique_ptr<MonitorServer>(new MonitorServer(std::move(impl)));
}

MonitorServer::~MonitorServer() {
  impl_->io.stop();
  if (impl_->thread.joinable()) impl_->thread.join();
}

uint16_t MonitorServer::port() const { return impl_->port; }

}  // namespace tributary
