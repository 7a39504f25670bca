// MonitorServer (monitor/monitor_server.h) over real loopback TCP: routes, the bearer token, and
// the limits on what a client may send.
#include "monitor/monitor_server.h"

#include <gtest/gtest.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "protocol/security_log.h"
#include "tests/core/log_capture.h"

namespace tributary {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

// Sends `request` as is and returns everything the server answers before closing.
std::string Exchange(uint16_t port, const std::string& request) {
  asio::io_context io;
  tcp::socket socket(io);
  socket.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
  asio::write(socket, asio::buffer(request));
  std::string answer;
  boost::system::error_code ec;
  char buf[4096];
  for (;;) {
    const size_t n = socket.read_some(asio::buffer(buf), ec);
    if (ec) break;
    answer.append(buf, n);
  }
  return answer;
}

std::string Get(uint16_t port, const std::string& path, const std::string& auth = "") {
  std::string req = "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n";
  if (!auth.empty()) req += "Authorization: " + auth + "\r\n";
  return Exchange(port, req + "\r\n");
}

class MonitorServerTest : public ::testing::Test {
 protected:
  // The server under test; `tweak` changes its options last.
  void StartServer(const std::string& token,
                   const std::function<void(MonitorServerOptions&)>& tweak = {}) {
    MonitorServerOptions o;
    o.listen = "127.0.0.1:0";
    o.token = token;
    o.security_log = security_;
    o.request_timeout = std::chrono::milliseconds(300);
    o.routes["/metrics"] = {"text/plain; version=0.0.4", [this] {
                              ++scrapes_;
                              return std::string("tributary_round 7\n");
                            }};
    o.routes["/broken"] = {"text/plain",
                           []() -> std::string { throw std::runtime_error("the route failed"); }};
    o.streams["/events"] = {[this] { return "hello " + std::to_string(++hellos_); }};
    o.max_streams = 2;
    o.keepalive = std::chrono::milliseconds(200);
    if (tweak) tweak(o);
    auto s = MonitorServer::Start(std::move(o));
    ASSERT_TRUE(s.ok()) << s.status();
    server_ = std::move(*s);
    ASSERT_NE(server_->port(), 0);
  }

  std::shared_ptr<SecurityLog> security_ = std::make_shared<SecurityLog>();
  std::atomic<int> scrapes_{0};
  std::atomic<int> hellos_{0};
  std::unique_ptr<MonitorServer> server_;
};

// A viewer of a server-sent event stream over a real socket.
class Viewer {
 public:
  // From `from` (any address of 127.0.0.0/8), with a receive buffer of `receive_buffer` bytes
  // (0: the kernel's).
  Viewer(uint16_t port, const std::string& target, const std::string& from = "127.0.0.1",
         int receive_buffer = 0)
      : socket_(io_) {
    socket_.open(tcp::v4());
    if (receive_buffer > 0)
      socket_.set_option(asio::socket_base::receive_buffer_size(receive_buffer));
    socket_.bind(tcp::endpoint(asio::ip::make_address(from), 0));
    socket_.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
    asio::write(socket_,
                asio::buffer("GET " + target + " HTTP/1.1\r\nHost: localhost:9464\r\n\r\n"));
  }
  // Reads until `text` has arrived (or the server closes); everything received so far.
  const std::string& ReadUntil(const std::string& text) {
    boost::system::error_code ec;
    char buf[65536];
    size_t from = 0;  // only the new bytes (and a text's length before them) are searched again
    while (received_.find(text, from) == std::string::npos) {
      from = received_.size() >= text.size() ? received_.size() - text.size() + 1 : 0;
      const size_t n = socket_.read_some(asio::buffer(buf), ec);
      if (ec) break;
      received_.append(buf, n);
    }
    return received_;
  }
  void Close() { socket_.close(); }

 private:
  asio::io_context io_;
  tcp::socket socket_;
  std::string received_;
};

// Polls `fn` until it is true, for up to 5 s.
template <typename F>
bool Eventually(F fn) {
  for (int i = 0; i < 500 && !fn(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  return fn();
}

// A connection from `from` that sends nothing.
class Silent {
 public:
  Silent(uint16_t port, const std::string& from) : socket_(io_) {
    socket_.open(tcp::v4());
    socket_.bind(tcp::endpoint(asio::ip::make_address(from), 0));
    socket_.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
  }
  // Whether the server closed it within `wait` (it reads end of stream or an error).
  bool ClosedWithin(std::chrono::milliseconds wait) {
    socket_.non_blocking(true);
    const auto until = std::chrono::steady_clock::now() + wait;
    char byte;
    do {
      boost::system::error_code ec;
      socket_.read_some(asio::buffer(&byte, 1), ec);
      if (ec && ec != asio::error::would_block) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    } while (std::chrono::steady_clock::now() < until);
    return false;
  }

 private:
  asio::io_context io_;
  tcp::socket socket_;
};

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

TEST_F(MonitorServerTest, ServesItsRoutesAndNothingElse) {
  StartServer("");
  const std::string ok = Get(server_->port(), "/metrics");
  EXPECT_EQ(ok.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << ok;
  EXPECT_NE(ok.find("Content-Type: text/plain; version=0.0.4\r\n"), std::string::npos) << ok;
  EXPECT_NE(ok.find("\r\n\r\ntributary_round 7\n"), std::string::npos) << ok;
  EXPECT_EQ(Get(server_->port(), "/metrics?x=1").rfind("HTTP/1.1 200", 0), 0u);
  EXPECT_EQ(Get(server_->port(), "/secrets").rfind("HTTP/1.1 404", 0), 0u);
  const std::string post =
      Exchange(server_->port(),
               "POST /metrics HTTP/1.1\r\nHost: 127.0.0.1:9464\r\nContent-Length: 0\r\n\r\n");
  EXPECT_EQ(post.rfind("HTTP/1.1 405", 0), 0u) << post;
  const std::string head =
      Exchange(server_->port(), "HEAD /metrics HTTP/1.1\r\nHost: LocalHost\r\n\r\n");
  EXPECT_EQ(head.rfind("HTTP/1.1 200", 0), 0u) << head;
  EXPECT_EQ(head.find("tributary_round 7"), std::string::npos) << "HEAD has no body";
  EXPECT_NE(head.find("Content-Length: 18\r\n"), std::string::npos) << "the GET's length: " << head;
  EXPECT_EQ(scrapes_.load(), 3);
  // A route that throws answers 500, and the server goes on.
  EXPECT_EQ(Get(server_->port(), "/broken").rfind("HTTP/1.1 500", 0), 0u);
  EXPECT_EQ(Get(server_->port(), "/metrics").rfind("HTTP/1.1 200", 0), 0u);
}

TEST_F(MonitorServerTest, WithoutATokenOnlyRequestsForThisMachineAreAnswered) {
  StartServer("");
  const auto with_host = [&](const std::string& host) {
    return Exchange(server_->port(), "GET /metrics HTTP/1.1\r\nHost: " + host + "\r\n\r\n");
  };
  for (const char* local :
       {"127.0.0.1", "127.0.0.1:9464", "localhost", "LOCALHOST:1", "[::1]:9464", "10.1.2.3:9464"})
    EXPECT_EQ(with_host(local).rfind("HTTP/1.1 200", 0), 0u) << local;
  // A page from elsewhere that rebinds its own name to 127.0.0.1 sends its own name as Host.
  for (const char* foreign :
       {"attacker.example", "attacker.example:9464", "localhost.evil.com", "[::1", ""}) {
    const std::string refused = with_host(foreign);
    EXPECT_EQ(refused.rfind("HTTP/1.1 403", 0), 0u) << foreign << ": " << refused;
  }
  EXPECT_EQ(Exchange(server_->port(), "GET /metrics HTTP/1.1\r\n\r\n").rfind("HTTP/1.1 403", 0), 0u)
      << "no Host at all";
  EXPECT_EQ(scrapes_.load(), 6);
  EXPECT_EQ(security_->Totals().at("monitor request for another host"), 6u);
}

TEST_F(MonitorServerTest, WithATokenEveryRequestMustCarryIt) {
  StartServer("s3cret");
  const std::string none = Get(server_->port(), "/metrics");
  EXPECT_EQ(none.rfind("HTTP/1.1 401", 0), 0u) << none;
  EXPECT_NE(none.find("WWW-Authenticate: Bearer"), std::string::npos) << none;
  EXPECT_EQ(Get(server_->port(), "/metrics", "Bearer wrong!").rfind("HTTP/1.1 401", 0), 0u);
  EXPECT_EQ(Get(server_->port(), "/metrics", "Bearer s3cre").rfind("HTTP/1.1 401", 0), 0u);
  EXPECT_EQ(Get(server_->port(), "/nothing").rfind("HTTP/1.1 401", 0), 0u)
      << "no route is revealed without the token";
  EXPECT_EQ(scrapes_.load(), 0);
  EXPECT_EQ(Get(server_->port(), "/metrics", "Bearer s3cret").rfind("HTTP/1.1 200", 0), 0u);
  EXPECT_EQ(scrapes_.load(), 1);
  // The refusals are security events (logged at warning level, counted per reason).
  EXPECT_EQ(security_->Totals().at("monitor request without a valid token"), 4u);
}

TEST_F(MonitorServerTest, OversizedSilentAndBodyCarryingRequestsGetNoAnswer) {
  StartServer("");
  // A header over 8 KiB: the connection is closed without an answer.
  const std::string big =
      "GET /metrics HTTP/1.1\r\nHost: [::1]:9464\r\nX-Pad: " + std::string(9000, 'a') + "\r\n\r\n";
  EXPECT_EQ(Exchange(server_->port(), big), "");
  // A body (none is accepted).
  EXPECT_EQ(Exchange(server_->port(),
                     "GET /metrics HTTP/1.1\r\nHost: localhost\r\nContent-Length: 5\r\n\r\nhello"),
            "");
  // A client that sends half a request is closed at the request timeout (300 ms here).
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(Exchange(server_->port(), "GET /metr"), "");
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  EXPECT_EQ(scrapes_.load(), 0);
  // And the server still answers the next one.
  EXPECT_EQ(Get(server_->port(), "/metrics").rfind("HTTP/1.1 200", 0), 0u);
}

TEST_F(MonitorServerTest, AStreamSendsItsHelloThenEveryPublishedMessageInOrder) {
  StartServer("s3cret");
  {
    testing::LogCapture log;
    Viewer refused(server_->port(), "/events?access_token=wrong-token-123");
    EXPECT_EQ(refused.ReadUntil("\r\n\r\n").rfind("HTTP/1.1 401", 0), 0u);
    security_->Flush(true);
    // The refusal is logged, with the path but never the query string (which holds the token).
    bool logged = false;
    for (const std::string& line : log.lines()) {
      EXPECT_EQ(line.find("wrong-token-123"), std::string::npos) << line;
      logged = logged || line.find("/events") != std::string::npos;
    }
    EXPECT_TRUE(logged);
  }
  EXPECT_EQ(hellos_.load(), 0);

  Viewer viewer(server_->port(), "/events?x=1&access_token=s3cret");
  const std::string& head = viewer.ReadUntil("data: hello 1\n\n");
  EXPECT_EQ(head.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << head;
  EXPECT_NE(head.find("Content-Type: text/event-stream"), std::string::npos) << head;
  ASSERT_TRUE(Eventually([&] { return server_->viewers() == 1; }));
  for (int i = 0; i < 100; ++i) server_->Publish("/events", "message " + std::to_string(i));
  server_->Publish("/elsewhere", "not for this viewer");
  server_->Publish("/events", "two\nlines");
  // CR, CRLF and LF each end a line for EventSource: each becomes a data line of its own, so no
  // message can inject a field (here an "event:").
  server_->Publish("/events", "a\revent: x\r\nc");
  const std::string& got = viewer.ReadUntil("data: a\ndata: event: x\ndata: c\n\n");
  EXPECT_NE(got.find("data: two\ndata: lines\n\n"), std::string::npos);
  EXPECT_EQ(got.find("\nevent:"), std::string::npos);
  size_t last = 0;
  for (int i = 0; i < 100; ++i) {
    const size_t at = got.find("data: message " + std::to_string(i) + "\n\n");
    ASSERT_NE(at, std::string::npos) << i;
    EXPECT_GT(at, last) << "in order";
    last = at;
  }
  EXPECT_EQ(got.find("not for this viewer"), std::string::npos);
  // Nothing published for a while: a keepalive comment (every 200 ms here).
  EXPECT_NE(viewer.ReadUntil(": keepalive\n\n").find(": keepalive\n\n"), std::string::npos);
  EXPECT_EQ(security_->Totals().at("monitor request without a valid token"), 1u);

  viewer.Close();
  server_->Publish("/events", "after the viewer left");
  EXPECT_TRUE(Eventually([&] { return server_->viewers() == 0; }));
}

TEST_F(MonitorServerTest, ViewersBeyondTheLimitGet503AndRoutesStillAnswer) {
  StartServer("");
  Viewer a(server_->port(), "/events"), b(server_->port(), "/events");
  a.ReadUntil("hello");
  b.ReadUntil("hello");
  ASSERT_TRUE(Eventually([&] { return server_->viewers() == 2; }));
  Viewer c(server_->port(), "/events");
  const std::string& refused = c.ReadUntil("too many viewers");
  EXPECT_EQ(refused.rfind("HTTP/1.1 503", 0), 0u) << refused;
  EXPECT_EQ(Get(server_->port(), "/metrics").rfind("HTTP/1.1 200", 0), 0u);
}

TEST_F(MonitorServerTest, AStoppingServerSendsWhatIsQueuedFirst) {
  StartServer("");
  // 200 KB queued against a 16 KiB send buffer and an 8 KiB receive buffer: most of it waits in
  // the server's queue, not in the kernels, when the server is told to stop.
  Viewer viewer(server_->port(), "/events", "127.0.0.1", 8192);
  viewer.ReadUntil("hello");
  ASSERT_TRUE(Eventually([&] { return server_->viewers() == 1; }));
  const std::string big(10'000, 'x');
  for (int i = 0; i < 20; ++i) server_->Publish("/events", big);
  server_->Publish("/events", "the last message");
  // The run is over, while the viewer reads on.
  std::thread reader([&] { viewer.ReadUntil("data: the last message\n\n"); });
  server_.reset();
  reader.join();
  EXPECT_NE(viewer.ReadUntil("data: the last message\n\n").find("data: the last message\n\n"),
            std::string::npos);
}

// The finding: 32 connections that never send a request locked /metrics out for 10 s.
// Now each gives its place back at the first-byte deadline.
TEST_F(MonitorServerTest, SilentConnectionsGiveTheirPlaceBackAtTheFirstByteDeadline) {
  StartServer("", [](MonitorServerOptions& o) {
    o.max_connections = 4;
    o.max_connections_per_address = 8;
    o.first_byte_timeout = std::chrono::milliseconds(200);
    o.request_timeout = std::chrono::milliseconds(10'000);
  });
  std::vector<std::unique_ptr<Silent>> silent;
  for (int i = 0; i < 4; ++i)
    silent.push_back(std::make_unique<Silent>(server_->port(), "127.0.0.2"));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const auto t0 = Clock::now();
  std::string answer;
  while (SecondsSince(t0) < 5 && answer.rfind("HTTP/1.1 200", 0) != 0)
    answer = Get(server_->port(), "/metrics");
  const double waited = SecondsSince(t0);
  std::printf("a scrape got through %.3f s after 4 silent connections took every place\n", waited);
  EXPECT_EQ(answer.rfind("HTTP/1.1 200", 0), 0u);
  // The deadline is 0.2 s; before it, 10 s. The bounds leave room for ThreadSanitizer on a busy
  // machine (this test failed there once in two full runs, with 1.5 s and 0.5 s).
  EXPECT_LT(waited, 3.0);
  for (auto& s : silent) EXPECT_TRUE(s->ClosedWithin(std::chrono::milliseconds(2000)));
  // Beast closes the socket before the read's handler (which notes the event) runs, so a client
  // can see its close a moment before the server counts it (CI saw 2 of 4 here once).
  const auto noted = [&] {
    const auto totals = security_->Totals();
    const auto it = totals.find("monitor connection sent no request in time");
    return it == totals.end() ? uint64_t{0} : it->second;
  };
  EXPECT_TRUE(Eventually([&] { return noted() == 4u; })) << noted();
}

TEST_F(MonitorServerTest, OneAddressCannotTakeEveryPlace) {
  testing::LogCapture log;
  StartServer("", [](MonitorServerOptions& o) {
    o.max_connections = 32;
    o.max_connections_per_address = 3;
    o.first_byte_timeout = std::chrono::milliseconds(10'000);
    o.request_timeout = std::chrono::milliseconds(10'000);
  });
  std::vector<std::unique_ptr<Silent>> silent;
  for (int i = 0; i < 10; ++i)
    silent.push_back(std::make_unique<Silent>(server_->port(), "127.0.0.2"));
  int closed = 0;
  for (auto& s : silent) closed += s->ClosedWithin(std::chrono::milliseconds(100));
  std::printf("10 silent connections from 127.0.0.2: %d closed at once\n", closed);
  EXPECT_EQ(closed, 7);
  // Another address is served at once, and the refusals are logged naming the address.
  const auto t0 = Clock::now();
  EXPECT_EQ(Get(server_->port(), "/metrics").rfind("HTTP/1.1 200", 0), 0u);
  EXPECT_LT(SecondsSince(t0), 1.0);
  EXPECT_EQ(security_->Totals().at("too many monitor connections from one address"), 7u);
  bool named = false;
  for (const std::string& line : log.lines())
    named = named || (line.find("too many monitor connections from one address from 127.0.0.2") !=
                          std::string::npos &&
                      line.find("monitor.max_connections_per_address") != std::string::npos);
  EXPECT_TRUE(named);
  // Streams count too: with the three silent ones gone, three viewers from one address, no more.
  silent.clear();
  ASSERT_TRUE(Eventually([&] { return Get(server_->port(), "/metrics").size() > 0; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  Viewer a(server_->port(), "/events", "127.0.0.3"), b(server_->port(), "/events", "127.0.0.3");
  a.ReadUntil("hello");
  b.ReadUntil("hello");
  Silent third(server_->port(), "127.0.0.3");
  Silent fourth(server_->port(), "127.0.0.3");
  EXPECT_FALSE(third.ClosedWithin(std::chrono::milliseconds(100)));
  EXPECT_TRUE(fourth.ClosedWithin(std::chrono::milliseconds(500)));
}

// The finding: a viewer that never read kept its stream for ever, the kernel buffering
// 1.56 MB for it. Now what it does not read waits in the server, and it is dropped when a write has
// waited stream_stall_timeout.
TEST_F(MonitorServerTest, AViewerThatNeverReadsIsDroppedAtTheStallTimeout) {
  StartServer("", [](MonitorServerOptions& o) {
    o.keepalive = std::chrono::milliseconds(10'000);
    o.stream_stall_timeout = std::chrono::milliseconds(500);
  });
  Viewer stuck(server_->port(), "/events", "127.0.0.2", /*receive_buffer=*/4096);
  stuck.ReadUntil("hello");
  ASSERT_TRUE(Eventually([&] { return server_->viewers() == 1; }));
  // 512 KiB, well under the backlog limit (8 MiB) and under what the kernel used to buffer.
  const auto t0 = Clock::now();
  const std::string chunk(16 << 10, 'x');
  for (int i = 0; i < 32; ++i) server_->Publish("/events", chunk);
  ASSERT_TRUE(Eventually([&] { return server_->viewers() == 0; }))
      << "the viewer still holds its stream after " << SecondsSince(t0) << " s";
  const double dropped = SecondsSince(t0);
  std::printf("a viewer that never reads was dropped %.3f s after 512 KiB were published to it\n",
              dropped);
  EXPECT_GT(dropped, 0.4);
  EXPECT_LT(dropped, 2.0);
  EXPECT_EQ(security_->Totals().at("monitor viewer stopped reading"), 1u);
  // A viewer that reads is not affected.
  Viewer reader(server_->port(), "/events");
  reader.ReadUntil("hello");
  for (int i = 0; i < 32; ++i) server_->Publish("/events", chunk);
  server_->Publish("/events", "the end");
  EXPECT_NE(reader.ReadUntil("data: the end\n\n").find("data: the end"), std::string::npos);
  EXPECT_EQ(security_->Totals().at("monitor viewer stopped reading"), 1u);
}

TEST(MonitorServerStartTest, AddressIsTheBoundOne) {
  MonitorServerOptions o;
  o.listen = "127.0.0.1:0";
  auto s = MonitorServer::Start(o);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_NE((*s)->port(), 0);
  EXPECT_EQ((*s)->address(), "127.0.0.1:" + std::to_string((*s)->port()));
  o.listen = "[::1]:0";
  auto v6 = MonitorServer::Start(o);
  if (!v6.ok()) GTEST_SKIP() << "no IPv6 loopback: " << v6.status();
  EXPECT_EQ((*v6)->address(), "[::1]:" + std::to_string((*v6)->port()));
}

TEST(MonitorServerStartTest, BadAddressesAreNamed) {
  MonitorServerOptions o;
  o.listen = "metrics.example:9464";
  auto s = MonitorServer::Start(o);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.status().message().find("metrics.example:9464"), std::string::npos) << s.status();
  o.listen = "127.0.0.1";
  EXPECT_FALSE(MonitorServer::Start(o).ok());
  o.listen = "127.0.0.1:9464abc";
  EXPECT_EQ(MonitorServer::Start(o).status().code(), StatusCode::kInvalidArgument);
  o.listen = "127.0.0.1:65536";
  EXPECT_EQ(MonitorServer::Start(o).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tributary
