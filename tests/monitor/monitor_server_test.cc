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
  void StartServer(const std::string& token) {
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
  Viewer(uint16_t port, const std::string& target) : socket_(io_) {
    socket_.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
    asio::write(socket_,
                asio::buffer("GET " + target + " HTTP/1.1\r\nHost: localhost:9464\r\n\r\n"));
  }
  // Reads until `text` has arrived (or the server closes); everything received so far.
  const std::string& ReadUntil(const std::string& text) {
    boost::system::error_code ec;
    char buf[4096];
    while (received_.find(text) == std::string::npos) {
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
  Viewer viewer(server_->port(), "/events");
  viewer.ReadUntil("hello");
  ASSERT_TRUE(Eventually([&] { return server_->viewers() == 1; }));
  const std::string big(100'000, 'x');
  for (int i = 0; i < 20; ++i) server_->Publish("/events", big);
  server_->Publish("/events", "the last message");
  server_.reset();  // the run is over
  EXPECT_NE(viewer.ReadUntil("data: the last message\n\n").find("data: the last message\n\n"),
            std::string::npos);
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
