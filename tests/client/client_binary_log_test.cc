// The tributary-client binary asks for logging (InitLogging in its main), so the library's lines
// still reach its stderr at its log_level, although an app that embeds the library gets none.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "crypto/cert_authority.h"
#include "tests/client/temp_dir.h"
#include "tests/core/run_command.h"

namespace tributary {
namespace {

using testing::RunCommand;
using testing::TempDir;

// A loopback port that refuses connections: bound, never listening, held until destroyed.
class RefusingPort {
 public:
  RefusingPort() : fd_(::socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(a);
    TRIB_CHECK(fd_ >= 0 && ::bind(fd_, reinterpret_cast<sockaddr*>(&a), len) == 0 &&
                   ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) == 0,
               "bind a loopback port");
    port_ = ntohs(a.sin_port);
  }
  ~RefusingPort() { ::close(fd_); }
  int port() const { return port_; }

 private:
  int fd_;
  int port_ = 0;
};

class ClientBinaryLogTest : public ::testing::Test {
 protected:
  ClientBinaryLogTest() {
    Result<PemPair> ca = MakeCaCertificate("Test CA");
    TRIB_CHECK(ca.ok(), "CA");
    Result<PemPair> me = MakeClientCertificate(*ca, "edge-bin");
    TRIB_CHECK(me.ok(), "client certificate");
    Write("ca.crt", ca->cert_pem);
    Write("me.crt", me->cert_pem);
    Write("me.key", me->key_pem);
    std::ofstream(dir_.file("client.toml"))
        << "[net]\ncoordinator = \"127.0.0.1:" << port_.port() << "\"\n"
        << "[tls]\nca = \"" << dir_.file("ca.crt") << "\"\ncert = \"" << dir_.file("me.crt")
        << "\"\nkey = \"" << dir_.file("me.key") << "\"\n"
        << "[data]\ndataset = \"synthetic\"\ntrain_examples = 60\ntest_examples = 20\n"
        << "[backoff]\nmax_attempts = 1\n";
  }
  void Write(const std::string& name, const std::string& text) {
    std::ofstream(dir_.file(name)) << text;
  }
  testing::CommandResult Run(const std::string& log_level) {
    return RunCommand(TRIBUTARY_CLIENT_BIN,
                      {"--config", dir_.file("client.toml"), "--log-level", log_level},
                      /*merge_stderr=*/false, dir_.path());
  }

  TempDir dir_;
  RefusingPort port_;
};

TEST_F(ClientBinaryLogTest, LogsTheLibrarysLinesToStderrAtItsLogLevel) {
  const testing::CommandResult info = Run("info");
  EXPECT_EQ(info.exit_code, 1) << info.out << info.err;
  // "[14:02:11.123] [error] giving up after 1 failed attempts: ...", then main's own message.
  EXPECT_NE(info.err.find("] [error] giving up after 1 failed attempts: "), std::string::npos)
      << info.err;
  EXPECT_NE(info.err.find("tributary-client: Unavailable: gave up after 1 consecutive"),
            std::string::npos)
      << info.err;
  EXPECT_EQ(info.out.find("giving up"), std::string::npos) << info.out;

  const testing::CommandResult off = Run("off");
  EXPECT_EQ(off.exit_code, 1) << off.out << off.err;
  EXPECT_EQ(off.err.find("giving up"), std::string::npos) << off.err;
  EXPECT_NE(off.err.find("tributary-client: Unavailable: gave up after 1 consecutive"),
            std::string::npos)
      << off.err;
}

}  // namespace
}  // namespace tributary
