// TLS-only behaviour: what the handshake refuses (TLS 1.2, no certificate, another CA, an expired
// certificate, a server name mismatch), the handshake timeout against idle TCP connections, the
// cap on concurrent handshakes, and bulk transfer against another TLS implementation. The shared
// behaviour of both transports is in transport_test.cc.
#include <gtest/gtest.h>

#include <openssl/ssl.h>
#include <cstdio>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/write.hpp>

#include "crypto/cert_authority.h"
#include "crypto/tls_context.h"
#include "protocol/frame.h"
#include "protocol/message_reader.h"
#include "protocol/tls_listener.h"
#include "protocol/tls_transport.h"
#include "protocol/transport_util.h"
#include "tests/protocol/transport_test_util.h"

namespace tributary {
namespace {

using namespace tributary::testing;
namespace asio = boost::asio;
namespace ssl = boost::asio::ssl;
using asio::ip::tcp;

uint16_t PortOf(const std::string& address) {
  return static_cast<uint16_t>(std::stoi(address.substr(address.rfind(':') + 1)));
}

// A client context that presents `pair` (may be empty) and, to probe the server alone, does not
// verify the server. max_version caps the protocol (TLS1_2_VERSION for the downgrade test).
std::shared_ptr<ssl::context> ProbeContext(const PemPair& pair, int max_version = 0) {
  auto ctx = std::make_shared<ssl::context>(ssl::context::tls_client);
  ctx->set_verify_mode(ssl::verify_none);
  if (!pair.cert_pem.empty()) {
    ctx->use_certificate_chain(asio::buffer(pair.cert_pem));
    ctx->use_private_key(asio::buffer(pair.key_pem), ssl::context::pem);
  }
  if (max_version != 0) SSL_CTX_set_max_proto_version(ctx->native_handle(), max_version);
  return ctx;
}

struct ProbeResult {
  boost::system::error_code handshake;
  boost::system::error_code read;
  size_t read_bytes = 0;
};

// Handshakes with the server at 127.0.0.1:port, sends a Heartbeat frame and reads the answer. A
// server that refuses the client fails the handshake or (TLS 1.3: the client finishes first) the
// read, with the server's alert.
ProbeResult Probe(ssl::context& ctx, uint16_t port) {
  asio::io_context io;
  ssl::stream<tcp::socket> s(io, ctx);
  ProbeResult r;
  s.next_layer().connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
  SSL_set_tlsext_host_name(s.native_handle(), "localhost");
  const std::vector<uint8_t> frame = EncodeOutbound(Heartbeat{1, 2}, {}, 1)->Flatten();
  std::vector<uint8_t> buf(4096);
  s.async_handshake(ssl::stream_base::client, [&](const boost::system::error_code& ec) {
    r.handshake = ec;
    if (ec) return;
    asio::async_write(s, asio::buffer(frame), [&](const boost::system::error_code& wec, size_t) {
      if (wec) {
        r.read = wec;
        return;
      }
      s.async_read_some(asio::buffer(buf), [&](const boost::system::error_code& rec, size_t n) {
        r.read = rec;
        r.read_bytes = n;
      });
    });
  });
  io.run_for(5s);
  return r;
}

TEST(SplitHostPortTest, AcceptsHostPortAndBracketedIpv6AndNamesWhatIsWrong) {
  using P = std::pair<std::string, std::string>;
  EXPECT_EQ(*SplitHostPort("127.0.0.1:8443"), P("127.0.0.1", "8443"));
  EXPECT_EQ(*SplitHostPort("coord.example.org:0"), P("coord.example.org", "0"));
  EXPECT_EQ(*SplitHostPort("[::1]:65535"), P("::1", "65535"));
  for (const char* bad :
       {"localhost", "::1:80", "[::1]80", ":80", "host:", "host:8a", "h:65536", "h:1234567"}) {
    Result<P> r = SplitHostPort(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find(bad), std::string::npos) << r.status();
  }
}

class TlsTransportTest : public ::testing::Test {
 protected:
  ~TlsTransportTest() override {
    if (listener_) listener_->Stop();
    io_.Stop();
  }

  void StartServer(TransportOptions options, std::shared_ptr<ssl::context> ctx = nullptr) {
    if (!ctx) ctx = TestPki::Get().ServerContext();
    server_ = std::move(*TlsTransport::Create(io_.io(), {options, ctx, nullptr}));
    Result<std::shared_ptr<Listener>> l =
        server_->Listen("127.0.0.1:0", [this](std::shared_ptr<Connection> c) {
          auto inbox = std::make_shared<Inbox>();
          std::weak_ptr<Connection> weak = c;
          Connection::MessageHandler record = inbox->OnMessage();
          c->Start(
              [weak, record](Message m) {
                if (auto self = weak.lock()) self->Send(m);
                record(std::move(m));
              },
              inbox->OnClose());
          std::lock_guard<std::mutex> lock(mu_);
          accepted_.push_back(c);
          inboxes_.push_back(inbox);
        });
    ASSERT_TRUE(l.ok()) << l.status();
    listener_ = std::dynamic_pointer_cast<TlsListener>(*l);
    ASSERT_NE(listener_, nullptr);
    port_ = PortOf(listener_->address());
  }

  // Connects a client with a certificate for `id` to `host`:port and exchanges one Hello.
  Result<std::shared_ptr<Connection>> ConnectAndExchange(const std::string& id,
                                                         const std::string& host,
                                                         TransportOptions options = {},
                                                         const std::string& server_name = "") {
    clients_.push_back(std::move(*TlsTransport::Create(
        io_.io(), {options, nullptr, TestPki::Get().ClientContext(id), server_name})));
    Waiter<Result<std::shared_ptr<Connection>>> waiter;
    clients_.back()->Connect(host + ":" + std::to_string(port_), waiter.Callback());
    std::optional<Result<std::shared_ptr<Connection>>> c = waiter.Wait(20s);
    if (!c) return Status::DeadlineExceeded("connect did not finish");
    if (!c->ok()) return c->status();
    auto inbox = std::make_shared<Inbox>();
    client_inboxes_.push_back(inbox);
    (**c)->Start(inbox->OnMessage(), inbox->OnClose());
    Hello hello;
    hello.software_version = id;
    (**c)->Send(hello);
    if (!inbox->WaitForMessages(1)) return Status::DeadlineExceeded("no echo");
    if (inbox->messages()[0] != Message(hello)) return Status::Internal("wrong echo");
    return *c;
  }

  // Probes with `ctx` and expects the server to refuse: no admitted connection, one more failed
  // handshake, and an error on the client side.
  void ExpectRefused(ssl::context& ctx, const char* what, const std::string& alert) {
    const TlsListener::Stats before = listener_->stats();
    const ProbeResult r = Probe(ctx, port_);
    EXPECT_TRUE(r.handshake || r.read) << what << ": the server answered";
    const std::string error = r.handshake ? r.handshake.message() : r.read.message();
    EXPECT_NE(error.find(alert), std::string::npos) << what << ": " << error;
    EXPECT_EQ(r.read_bytes, 0u) << what;
    // The server counts the failure when its side of the handshake ends.
    for (int i = 0; i < 500 && listener_->stats().handshakes_failed == before.handshakes_failed;
         ++i) {
      std::this_thread::sleep_for(10ms);
    }
    const TlsListener::Stats after = listener_->stats();
    EXPECT_EQ(after.handshakes_failed, before.handshakes_failed + 1) << what;
    EXPECT_EQ(after.admitted, before.admitted) << what;
  }

  // The server counts a handshake's end on its own strand, a moment after the client saw the
  // close; poll (bounded) until the counter catches up.
  TlsListener::Stats WaitForSilent(uint64_t n) {
    for (int i = 0; i < 500 && listener_->stats().silent < n; ++i) {
      std::this_thread::sleep_for(10ms);
    }
    return listener_->stats();
  }

  TransportOptions Options() {
    TransportOptions o;
    o.handshake_timeout = 5s;
    o.shutdown_timeout = 500ms;
    return o;
  }

  IoThreads io_{2};
  std::unique_ptr<Transport> server_;
  std::shared_ptr<TlsListener> listener_;
  uint16_t port_ = 0;
  std::vector<std::unique_ptr<Transport>> clients_;
  std::vector<std::shared_ptr<Inbox>> client_inboxes_;
  std::mutex mu_;
  std::vector<std::shared_ptr<Connection>> accepted_;
  std::vector<std::shared_ptr<Inbox>> inboxes_;
};

TEST_F(TlsTransportTest, HonestClientConnectsByNameAndByAddress) {
  StartServer(Options());
  Result<std::shared_ptr<Connection>> by_name = ConnectAndExchange("edge-1", "localhost");
  ASSERT_TRUE(by_name.ok()) << by_name.status();
  Result<std::shared_ptr<Connection>> by_ip = ConnectAndExchange("edge-2", "127.0.0.1");
  ASSERT_TRUE(by_ip.ok()) << by_ip.status();
  EXPECT_EQ(listener_->stats().admitted, 2u);
  std::lock_guard<std::mutex> lock(mu_);
  ASSERT_EQ(accepted_.size(), 2u);
  EXPECT_EQ(accepted_[0]->peer().id, "edge-1");
  EXPECT_EQ(accepted_[1]->peer().id, "edge-2");
}

// TlsStream against another TLS implementation (asio's ssl::stream, record by record): a 3 MiB
// update in 1 MiB chunks goes up, the server echoes it, and it comes back intact. Both directions
// cross many TLS records, gathered frame headers and large socket reads.
TEST_F(TlsTransportTest, BulkTransferInteroperatesWithAsioSslStream) {
  StartServer(Options());
  asio::io_context io;
  ssl::stream<tcp::socket> s(io, *TestPki::Get().ClientContext("bulk-client"));
  s.next_layer().connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port_));
  ASSERT_TRUE(ConfigureClientSsl(s.native_handle(), "localhost").ok());
  s.handshake(ssl::stream_base::client);

  UpdateSubmission big;
  big.round = 5;
  big.num_examples = 100;
  std::vector<uint8_t> data(3 << 20);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i * 131 + (i >> 16));
  big.update.bytes = std::move(data);
  const ProtocolLimits limits;
  const std::vector<uint8_t> wire = EncodeOutbound(big, limits, 1)->Flatten();
  ASSERT_GT(wire.size(), size_t{3} << 20);
  asio::write(s, asio::buffer(wire));

  MessageReader reader(limits);
  std::vector<Message> got;
  std::vector<uint8_t> buf(64 * 1024);
  size_t received = 0;
  while (got.empty()) {
    const size_t n = s.read_some(asio::buffer(buf));
    received += n;
    ASSERT_TRUE(reader.Feed(std::span(buf.data(), n), &got).ok());
  }
  EXPECT_EQ(received, wire.size());
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(std::get<UpdateSubmission>(got[0]), big);
  EXPECT_EQ(listener_->stats().admitted, 1u);
}

TEST_F(TlsTransportTest, Tls12ClientIsRejected) {
  StartServer(Options());
  const TestPki& pki = TestPki::Get();
  PemPair client = *MakeClientCertificate(pki.ca, "edge-old-tls");
  ExpectRefused(*ProbeContext(client, TLS1_2_VERSION), "TLS 1.2 client", "protocol version");
  ASSERT_TRUE(ConnectAndExchange("edge-1", "localhost").ok());  // others unaffected
}

TEST_F(TlsTransportTest, ClientWithoutCertificateIsRejected) {
  StartServer(Options());
  ExpectRefused(*ProbeContext(PemPair{}), "no client certificate", "certificate required");
  ASSERT_TRUE(ConnectAndExchange("edge-1", "localhost").ok());
}

TEST_F(TlsTransportTest, CertificateFromAnotherCaIsRejected) {
  StartServer(Options());
  PemPair other_ca = *MakeCaCertificate("Some Other CA");
  PemPair client = *MakeClientCertificate(other_ca, "edge-1");  // the same id, the wrong CA
  ExpectRefused(*ProbeContext(client), "certificate from another CA", "unknown ca");
  ASSERT_TRUE(ConnectAndExchange("edge-1", "localhost").ok());
}

TEST_F(TlsTransportTest, ExpiredCertificateIsRejected) {
  StartServer(Options());
  CertOptions expired;
  expired.not_before_offset_s = -10 * 86400;
  expired.valid_days = 1;
  PemPair client = *MakeClientCertificate(TestPki::Get().ca, "edge-expired", expired);
  ExpectRefused(*ProbeContext(client), "expired certificate", "certificate expired");
  // The same id with a fresh certificate is fine.
  ASSERT_TRUE(ConnectAndExchange("edge-expired", "localhost").ok());
}

TEST_F(TlsTransportTest, ClientRefusesServerWhoseNameDoesNotMatch) {
  const TestPki& pki = TestPki::Get();
  PemPair wrong = *MakeServerCertificate(pki.ca, {"coordinator.example"}, {});
  StartServer(Options(),
              *MakeServerTlsContext(TlsPem{pki.ca.cert_pem, wrong.cert_pem, wrong.key_pem}));
  for (const std::string host : {"localhost", "127.0.0.1"}) {
    Result<std::shared_ptr<Connection>> c = ConnectAndExchange("edge-1", host);
    ASSERT_FALSE(c.ok()) << host;
    EXPECT_EQ(c.status().code(), StatusCode::kPermissionDenied) << c.status();
    EXPECT_NE(c.status().message().find("mismatch"), std::string::npos) << c.status();
  }
  EXPECT_EQ(listener_->stats().admitted, 0u);
}

// server_name: dial an address the certificate does not name, verify the name it does. The
// certificate names only coordinator.example, so each dial below passes or fails by server_name.
TEST_F(TlsTransportTest, ServerNameIsVerifiedInsteadOfTheHostDialled) {
  const TestPki& pki = TestPki::Get();
  PemPair named = *MakeServerCertificate(pki.ca, {"coordinator.example"}, {});
  StartServer(Options(),
              *MakeServerTlsContext(TlsPem{pki.ca.cert_pem, named.cert_pem, named.key_pem}));
  for (const std::string host : {"localhost", "127.0.0.1"}) {
    Result<std::shared_ptr<Connection>> c =
        ConnectAndExchange("edge-1", host, Options(), "coordinator.example");
    EXPECT_TRUE(c.ok()) << host << ": " << c.status();
    Result<std::shared_ptr<Connection>> other =
        ConnectAndExchange("edge-1", host, Options(), "other.example");
    ASSERT_FALSE(other.ok()) << host;
    EXPECT_EQ(other.status().code(), StatusCode::kPermissionDenied) << other.status();
    EXPECT_NE(other.status().message().find("mismatch"), std::string::npos) << other.status();
    EXPECT_NE(other.status().message().find("(as 'other.example')"), std::string::npos)
        << other.status();
  }
  EXPECT_EQ(listener_->stats().admitted, 2u);
}

TEST_F(TlsTransportTest, ClientIdentityCanBeMadeOptionalForTests) {
  TransportOptions o = Options();
  o.require_client_identity = false;
  StartServer(o, TestPki::Get().ServerContext(/*require_client_cert=*/false));
  const ProbeResult r = Probe(*ProbeContext(PemPair{}), port_);
  EXPECT_FALSE(r.handshake) << r.handshake.message();
  EXPECT_FALSE(r.read) << r.read.message();
  EXPECT_EQ(r.read_bytes, kFrameHeaderBytes + 16);  // the echoed Heartbeat
  std::lock_guard<std::mutex> lock(mu_);
  ASSERT_EQ(accepted_.size(), 1u);
  EXPECT_EQ(accepted_[0]->peer().id, "");
}

// Opens `n` TCP connections that never send a byte and records when the server closes each.
class IdleSockets {
 public:
  IdleSockets(uint16_t port, int n, const char* from = "127.0.0.1") : closed_at_(n) {
    const tcp::endpoint ep(asio::ip::make_address("127.0.0.1"), port);
    start_ = std::chrono::steady_clock::now();
    for (int i = 0; i < n; ++i) {
      sockets_.emplace_back(io_);
      sockets_.back().open(tcp::v4());
      sockets_.back().bind(tcp::endpoint(asio::ip::make_address(from), 0));
      sockets_.back().connect(ep);
    }
    for (int i = 0; i < n; ++i) {
      sockets_[i].async_read_some(
          asio::buffer(buf_), [this, i](const boost::system::error_code& ec, size_t) {
            closed_at_[i] = ec ? std::chrono::steady_clock::now() - start_ : -1s;
          });
    }
    thread_ = std::thread([this] { io_.run_for(30s); });
  }
  ~IdleSockets() {
    io_.stop();
    thread_.join();
  }
  // Waits for every socket to be closed by the server; returns the earliest and latest closes.
  std::pair<std::chrono::nanoseconds, std::chrono::nanoseconds> WaitAllClosed() {
    thread_.join();
    thread_ = std::thread([] {});
    auto lo = std::chrono::nanoseconds::max();
    auto hi = std::chrono::nanoseconds::min();
    for (auto t : closed_at_) {
      lo = std::min(lo, t);
      hi = std::max(hi, t);
    }
    return {lo, hi};
  }

 private:
  asio::io_context io_;
  std::vector<tcp::socket> sockets_;
  std::vector<std::chrono::nanoseconds> closed_at_;  // 0: still open
  std::array<char, 16> buf_{};
  std::chrono::steady_clock::time_point start_;
  std::thread thread_;
};

// `n` silent TCP connections from address `from`, each reopened as soon as the server closes it,
// until the object goes away: the handshake flood of the hostile test's finding 3.
class SilentFlood {
 public:
  SilentFlood(uint16_t port, int n, const char* from)
      : ep_(asio::ip::make_address("127.0.0.1"), port), from_(asio::ip::make_address(from)) {
    for (int i = 0; i < n; ++i) sockets_.emplace_back(std::make_unique<tcp::socket>(io_));
    for (int i = 0; i < n; ++i) Open(i);
    thread_ = std::thread([this] { io_.run(); });
  }
  ~SilentFlood() {
    stop_ = true;
    io_.stop();
    thread_.join();
  }
  int64_t opened() const { return opened_; }

 private:
  void Open(int i) {
    if (stop_) return;
    auto& s = sockets_[static_cast<size_t>(i)];
    s = std::make_unique<tcp::socket>(io_);
    boost::system::error_code ec;
    s->open(tcp::v4(), ec);
    if (!ec) s->bind(tcp::endpoint(from_, 0), ec);
    s->async_connect(ep_, [this, i](const boost::system::error_code& e) {
      if (e) return Retry(i);
      ++opened_;
      sockets_[static_cast<size_t>(i)]->async_read_some(
          asio::buffer(buf_), [this, i](const boost::system::error_code&, size_t) { Retry(i); });
    });
  }
  void Retry(int i) {
    if (!stop_) asio::post(io_, [this, i] { Open(i); });
  }

  asio::io_context io_;
  tcp::endpoint ep_;
  asio::ip::address from_;
  std::vector<std::unique_ptr<tcp::socket>> sockets_;
  std::array<char, 16> buf_{};
  std::atomic<bool> stop_{false};
  std::atomic<int64_t> opened_{0};
  std::thread thread_;
};

TEST_F(TlsTransportTest,
       SilentConnectionsAreClosedAtTheFirstBytesDeadlineWhileAnHonestClientWorks) {
  TransportOptions o = Options();
  o.first_bytes_timeout = 700ms;
  o.max_concurrent_handshakes = 256;
  o.max_handshakes_per_address = 256;
  StartServer(o);
  IdleSockets idle(port_, 200);
  Result<std::shared_ptr<Connection>> honest = ConnectAndExchange("edge-honest", "localhost");
  ASSERT_TRUE(honest.ok()) << honest.status();
  const auto [first, last] = idle.WaitAllClosed();
  EXPECT_GE(first, 650ms) << "a silent connection was closed before the first-bytes deadline";
  EXPECT_LT(last, 20s);
  const TlsListener::Stats s = WaitForSilent(200);
  EXPECT_EQ(s.silent, 200u);
  EXPECT_EQ(s.handshake_timeouts, 0u);
  EXPECT_EQ(s.admitted, 1u);
  EXPECT_EQ(s.accepted_tcp, 201u);
  // The honest session outlived all of them.
  Hello again;
  again.software_version = "still here";
  (*honest)->Send(again);
  ASSERT_TRUE(client_inboxes_.back()->WaitForMessages(2));
  EXPECT_EQ(client_inboxes_.back()->messages()[1], Message(again));
}

TEST_F(TlsTransportTest, HandshakeCapMakesExtraConnectionsWaitInsteadOfFailing) {
  TransportOptions o = Options();
  o.first_bytes_timeout = 300ms;
  o.max_concurrent_handshakes = 4;
  o.max_handshakes_per_address = 100;
  StartServer(o);
  IdleSockets idle(port_, 12);
  TransportOptions patient = Options();
  patient.handshake_timeout = 15s;  // waits in the backlog behind the idle connections
  Result<std::shared_ptr<Connection>> honest =
      ConnectAndExchange("edge-honest", "localhost", patient);
  ASSERT_TRUE(honest.ok()) << honest.status();
  idle.WaitAllClosed();
  const TlsListener::Stats s = WaitForSilent(12);
  EXPECT_EQ(s.peak_handshakes, 4u);
  EXPECT_EQ(s.silent, 12u);
  EXPECT_EQ(s.admitted, 1u);
}

// Finding 3 of the hostile test: 200 silent connections from one address, reopened as they close,
// filled every handshake slot (64, for 10 s each) and kept new clients out. Now one address gets
// at most max_handshakes_per_address slots, and silent ones go after first_bytes_timeout: a client
// from another address joins within 2 s, with the default options.
TEST_F(TlsTransportTest, AFloodOfSilentConnectionsFromOneAddressDoesNotKeepAnotherAddressOut) {
  StartServer(Options());
  SilentFlood flood(port_, 200, "127.0.0.2");
  for (int i = 0; i < 200 && flood.opened() < 200; ++i) std::this_thread::sleep_for(10ms);
  std::this_thread::sleep_for(300ms);
  const auto t0 = std::chrono::steady_clock::now();
  Result<std::shared_ptr<Connection>> honest = ConnectAndExchange("edge-honest", "localhost");
  const auto took = std::chrono::steady_clock::now() - t0;
  ASSERT_TRUE(honest.ok()) << honest.status();
  EXPECT_LT(took, 2s) << "the honest client waited "
                      << std::chrono::duration_cast<std::chrono::milliseconds>(took).count()
                      << " ms";
  const TlsListener::Stats s = listener_->stats();
  std::printf(
      "flood: honest client joined in %lld ms; %llu flood connections closed at accept, "
      "peak %llu handshakes in progress\n",
      static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(took).count()),
      static_cast<unsigned long long>(s.over_address_cap),
      static_cast<unsigned long long>(s.peak_handshakes));
  EXPECT_GT(s.over_address_cap, 100u);  // the flood's excess was closed at accept
  EXPECT_LE(s.peak_handshakes, 9u);     // 8 from the flood's address, plus the honest one
  EXPECT_EQ(s.admitted, 1u);
}

}  // namespace
}  // namespace tributary
