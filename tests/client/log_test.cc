// Logging control in the C++ API: ClientOptions::log_level / log_callback (client.h), installed
// process-wide (tributary/log.h), and silence when the app asks for nothing.
#include <gtest/gtest.h>

#include <boost/asio/ip/tcp.hpp>
#include <future>
#include <mutex>
#include <string>
#include <vector>

#include "crypto/cert_authority.h"
#include "tests/client/fake_trainer.h"
#include "tests/client/tls_fixture.h"
#include "tests/core/stdio_capture.h"
#include "tributary/client.h"
#include "tributary/log.h"

namespace tributary {
namespace {

using namespace tributary::testing;
using namespace std::chrono_literals;

struct Line {
  LogLevel level;
  std::string text;
  bool operator==(const Line&) const = default;
};

std::ostream& operator<<(std::ostream& os, const Line& l) {
  return os << LogLevelName(l.level) << " '" << l.text << "'";
}

// Records what a handler receives. The library serializes the calls, but the test reads the lines
// from its own thread, hence the mutex.
class Recorder {
 public:
  LogCallback callback() {
    return [this](LogLevel level, std::string_view text) {
      std::lock_guard<std::mutex> lock(mu_);
      lines_.push_back({level, std::string(text)});
    };
  }
  std::vector<Line> lines() {
    std::lock_guard<std::mutex> lock(mu_);
    return lines_;
  }
  void Clear() {
    std::lock_guard<std::mutex> lock(mu_);
    lines_.clear();
  }
  // The lines at `level` and above.
  std::vector<Line> AtLeast(LogLevel level) {
    std::vector<Line> out;
    for (const Line& l : lines())
      if (l.level >= level) out.push_back(l);
    return out;
  }

 private:
  std::mutex mu_;
  std::vector<Line> lines_;  // GUARDED_BY(mu_)
};

class ClientLogTest : public ::testing::Test {
 protected:
  // The handler is the process's: leave none behind for the next test.
  ~ClientLogTest() override { SetLogHandler(LogLevel::kOff, nullptr); }

  ClientOptions OptionsFor(const std::string& id) {
    const TlsCoordinatorFixture::Files f = fx_.ClientFiles(id);
    ClientOptions o;
    o.coordinator = fx_.address();
    o.ca_cert_file = f.ca;
    o.cert_file = f.cert;
    o.key_file = f.key;
    o.backoff.initial_delay = 5ms;
    o.backoff.max_delay = 20ms;
    return o;
  }

  // Runs a client against the fixture's coordinator, which says Goodbye{"done"} as soon as the
  // client has said Hello, then destroys the client, so nothing of it logs after this returns.
  // On the way the client logs "connecting to" (debug), "joined" and "the coordinator ended the
  // run" (info). No gtest assertion in here: callers may be capturing stdout and stderr.
  Status JoinAndLeave(ClientOptions options) {
    auto client = Client::Create(std::move(options), std::make_shared<FakeTrainer>());
    if (!client.ok()) return client.status();
    auto run = std::async(std::launch::async, [&] { return (*client)->run(); });
    auto session = fx_.coordinator().WaitSession(sessions_++);
    if (!session || !session->WaitHello()) {
      (*client)->stop();
      (void)run.get();
      return Status::Internal("the client never said Hello");
    }
    session->Send(Goodbye{"done"});
    Status s = run.get();
    client->reset();
    return s;
  }

  std::string Joined(const std::string& id) {
    return "joined " + fx_.address() + " as '" + id +
           "' (coordinator fake-coordinator, heartbeat every 0 ms)";
  }

  TlsCoordinatorFixture fx_;
  size_t sessions_ = 0;
};

TEST_F(ClientLogTest, ByDefaultTheLibraryWritesNothingToStdoutOrStderr) {
  const ClientOptions o = OptionsFor("edge-quiet");
  StdioCapture capture;
  const Status s = JoinAndLeave(o);
  const std::string written = capture.Finish();
  EXPECT_TRUE(s.ok()) << s;
  EXPECT_EQ(written, "");
}

TEST_F(ClientLogTest, ACallbackAtDebugGetsEveryLineWithItsLevelAndNothingIsPrinted) {
  Recorder r;
  ClientOptions o = OptionsFor("edge-7");
  o.log_level = LogLevel::kDebug;
  o.log_callback = r.callback();
  StdioCapture capture;
  const Status s = JoinAndLeave(o);
  const std::string written = capture.Finish();
  EXPECT_TRUE(s.ok()) << s;
  EXPECT_EQ(written, "");

  const std::vector<Line> lines = r.lines();
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(lines[0], (Line{LogLevel::kDebug, "connecting to " + fx_.address()}));
  const std::vector<Line> info = {{LogLevel::kInfo, Joined("edge-7")},
                                  {LogLevel::kInfo, "the coordinator ended the run: done"}};
  EXPECT_EQ(r.AtLeast(LogLevel::kInfo), info);
  // The rest are the connections' "closed" lines, from both ends (the fake coordinator shares
  // the protocol code, and the process).
  for (const Line& l : lines) {
    if (l.level >= LogLevel::kInfo || l == lines[0]) continue;
    EXPECT_EQ(l.level, LogLevel::kDebug) << l;
    EXPECT_EQ(l.text.rfind("connection ", 0), 0u) << l;
  }
}

TEST_F(ClientLogTest, ACallbackAtWarnGetsWarningsAndErrorsOnly) {
  Recorder r;
  ClientOptions o = OptionsFor("edge-8");
  o.log_level = LogLevel::kWarn;
  o.log_callback = r.callback();
  ASSERT_TRUE(JoinAndLeave(o).ok());
  EXPECT_EQ(r.lines(), std::vector<Line>{});  // a session without trouble has no warnings

  // A certificate the coordinator does not trust: one attempt, no warning, and one error that
  // says why the client stops (waiting cannot fix it).
  Result<PemPair> rogue_ca = MakeCaCertificate("Rogue CA");
  ASSERT_TRUE(rogue_ca.ok());
  const TlsCoordinatorFixture::Files f = fx_.ClientFiles("edge-9", &*rogue_ca);
  ClientOptions rogue = o;
  rogue.cert_file = f.cert;
  rogue.key_file = f.key;
  rogue.log_callback = nullptr;  // the handler installed above stays
  rogue.backoff.max_attempts = 2;
  auto client = Client::Create(rogue, std::make_shared<FakeTrainer>());
  ASSERT_TRUE(client.ok()) << client.status();
  EXPECT_EQ((*client)->run().code(), StatusCode::kPermissionDenied);
  client->reset();
  // The coordinator in this process logs through the same library logger: its security warning
  // (the handshake it refused) is left out, as an app without a coordinator would never see it.
  auto client_lines = [&] {
    std::vector<Line> lines;
    for (const Line& l : r.lines())
      if (l.text.rfind("security: ", 0) != 0) lines.push_back(l);
    return lines;
  };
  std::vector<Line> lines = client_lines();
  ASSERT_EQ(lines.size(), 1u) << ::testing::PrintToString(r.lines());
  EXPECT_EQ(lines[0].level, LogLevel::kError);
  EXPECT_NE(lines[0].text.find("tlsv1 alert unknown ca"), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].text.find("; not retrying: waiting cannot fix this"), std::string::npos)
      << lines[0];

  // Nothing listening heals by waiting: two failed attempts, one warning between them and one
  // error at the end.
  r.Clear();
  ClientOptions nobody = o;
  nobody.log_callback = nullptr;
  nobody.backoff.max_attempts = 2;
  {
    boost::asio::io_context io;
    boost::asio::ip::tcp::acceptor probe(
        io, boost::asio::ip::tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), 0));
    nobody.coordinator = "127.0.0.1:" + std::to_string(probe.local_endpoint().port());
  }
  client = Client::Create(nobody, std::make_shared<FakeTrainer>());
  ASSERT_TRUE(client.ok()) << client.status();
  EXPECT_EQ((*client)->run().code(), StatusCode::kUnavailable);
  client->reset();
  lines = client_lines();
  ASSERT_EQ(lines.size(), 2u) << ::testing::PrintToString(r.lines());
  EXPECT_EQ(lines[0].level, LogLevel::kWarn);
  EXPECT_NE(lines[0].text.find("; reconnecting in "), std::string::npos) << lines[0];
  EXPECT_EQ(lines[1].level, LogLevel::kError);
  EXPECT_EQ(lines[1].text.rfind("giving up after 2 failed attempts: ", 0), 0u) << lines[1];
}

TEST_F(ClientLogTest, TheHandlerIsProcessWideAndTheLastInstalledWins) {
  Recorder first, second, refused;
  ClientOptions o = OptionsFor("edge-1");
  o.log_callback = first.callback();
  auto a = Client::Create(o, std::make_shared<FakeTrainer>());
  ASSERT_TRUE(a.ok()) << a.status();
  o.log_callback = second.callback();
  auto b = Client::Create(o, std::make_shared<FakeTrainer>());
  ASSERT_TRUE(b.ok()) << b.status();
  b->reset();  // destroying the Client that installed it leaves the handler installed
  // A Create that fails installs nothing.
  ClientOptions bad = o;
  bad.key_file = fx_.dir().file("missing.key");
  bad.log_callback = refused.callback();
  EXPECT_FALSE(Client::Create(bad, std::make_shared<FakeTrainer>()).ok());

  // A client with no callback of its own logs to the process's handler: `second`.
  ASSERT_TRUE(JoinAndLeave(OptionsFor("edge-2")).ok());
  const std::vector<Line> info = {{LogLevel::kInfo, Joined("edge-2")},
                                  {LogLevel::kInfo, "the coordinator ended the run: done"}};
  EXPECT_EQ(second.lines(), info);
  EXPECT_EQ(first.lines(), std::vector<Line>{});
  EXPECT_EQ(refused.lines(), std::vector<Line>{});

  // Removing it makes the library silent again.
  SetLogHandler(LogLevel::kOff, nullptr);
  ASSERT_TRUE(JoinAndLeave(OptionsFor("edge-3")).ok());
  EXPECT_EQ(second.lines().size(), 2u);
}

TEST(ClientOptionsLogTest, ALogLevelOutsideTheEnumIsRefused) {
  ClientOptions o;
  o.coordinator = "127.0.0.1:7070";
  o.ca_cert_file = "ca.crt";
  o.cert_file = "c.crt";
  o.key_file = "c.key";
  EXPECT_TRUE(o.Validate().ok());
  o.log_level = static_cast<LogLevel>(7);
  const Status s = o.Validate();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("log_level: 7 is not a LogLevel"), std::string::npos) << s;
}

}  // namespace
}  // namespace tributary
