// Runs the real tributary-certs binary (path from the build: TRIBUTARY_CERTS_BIN) in a scratch
// directory and checks the files it writes, their modes, and that they work for mutual TLS.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdio>
#include <string>
#include <vector>

#include "crypto/cert_authority.h"
#include "crypto/tls_context.h"
#include "crypto_test_util.h"
#include "loopback_handshake.h"
#include "tests/core/run_command.h"

#ifndef TRIBUTARY_CERTS_BIN
#error "TRIBUTARY_CERTS_BIN must name the tributary-certs binary"
#endif

namespace tributary {
namespace {

using testing::FileMode;
using testing::ReadText;
using testing::TempDir;
using testing::VerifyAgainstCa;

// Runs tributary-certs with `args`; stdout and stderr together in `out`.
testing::CommandResult RunCerts(const std::vector<std::string>& args) {
  return testing::RunCommand(TRIBUTARY_CERTS_BIN, args, /*merge_stderr=*/true);
}

class CertsCliTest : public ::testing::Test {
 protected:
  // umask 0 for the child too: the modes below then come from the binary's open() calls alone.
  void SetUp() override { old_umask_ = ::umask(0); }
  void TearDown() override { ::umask(old_umask_); }

  std::string Dir() const { return dir_.path().string(); }
  std::string Path(const std::string& name) const { return dir_ / name; }

  TempDir dir_;
  mode_t old_umask_ = 0;
};

TEST_F(CertsCliTest, ProvisionsADeploymentThatCompletesMutualTls) {
  testing::CommandResult init = RunCerts({"init", "--dir", Dir(), "--name", "Acme FL CA"});
  ASSERT_EQ(init.exit_code, 0) << init.out;
  testing::CommandResult server =
      RunCerts({"server", "--host", "localhost", "--ip", "127.0.0.1", "--dir", Dir()});
  ASSERT_EQ(server.exit_code, 0) << server.out;
  testing::CommandResult client = RunCerts({"client", "--id", "edge-7", "--dir", Dir()});
  ASSERT_EQ(client.exit_code, 0) << client.out;

  // It says what it wrote.
  for (const char* f : {"ca.crt", "ca.key"})
    EXPECT_NE(init.out.find("wrote " + Path(f)), std::string::npos) << init.out;
  for (const char* f : {"server.crt", "server.key"})
    EXPECT_NE(server.out.find("wrote " + Path(f)), std::string::npos) << server.out;
  for (const char* f : {"clients/edge-7.crt", "clients/edge-7.key"})
    EXPECT_NE(client.out.find("wrote " + Path(f)), std::string::npos) << client.out;

  for (const char* key : {"ca.key", "server.key", "clients/edge-7.key"})
    EXPECT_EQ(FileMode(Path(key)), 0600u) << key;
  for (const char* cert : {"ca.crt", "server.crt", "clients/edge-7.crt"})
    EXPECT_EQ(FileMode(Path(cert)), 0644u) << cert;

  const std::string ca = ReadText(Path("ca.crt"));
  auto ca_info = DescribeCertificate(ca);
  ASSERT_TRUE(ca_info.ok());
  EXPECT_EQ(ca_info->subject_cn, "Acme FL CA");
  EXPECT_EQ(VerifyAgainstCa(ca, ReadText(Path("server.crt")), X509_PURPOSE_SSL_SERVER), X509_V_OK);
  EXPECT_EQ(VerifyAgainstCa(ca, ReadText(Path("clients/edge-7.crt")), X509_PURPOSE_SSL_CLIENT),
            X509_V_OK);

  auto server_ctx =
      MakeServerTlsContext(TlsConfig{Path("ca.crt"), Path("server.crt"), Path("server.key")});
  auto client_ctx = MakeClientTlsContext(
      TlsConfig{Path("ca.crt"), Path("clients/edge-7.crt"), Path("clients/edge-7.key")});
  ASSERT_TRUE(server_ctx.ok()) << server_ctx.status();
  ASSERT_TRUE(client_ctx.ok()) << client_ctx.status();
  auto out = testing::RunLoopbackHandshake(**server_ctx, **client_ctx, "127.0.0.1");
  ASSERT_TRUE(out.Accepted());
  ASSERT_TRUE(out.peer_id.ok()) << out.peer_id.status();
  EXPECT_EQ(*out.peer_id, "edge-7");
}

TEST_F(CertsCliTest, RefusesToReplaceACaUnlessForced) {
  ASSERT_EQ(RunCerts({"init", "--dir", Dir()}).exit_code, 0);
  ASSERT_EQ(RunCerts({"server", "--host", "localhost", "--dir", Dir()}).exit_code, 0);
  const std::string ca_before = ReadText(Path("ca.crt"));
  const std::string key_before = ReadText(Path("ca.key"));

  testing::CommandResult again = RunCerts({"init", "--dir", Dir()});
  EXPECT_NE(again.exit_code, 0);
  EXPECT_NE(again.out.find("already exists"), std::string::npos) << again.out;
  EXPECT_NE(again.out.find("--force"), std::string::npos) << again.out;
  EXPECT_EQ(ReadText(Path("ca.crt")), ca_before);
  EXPECT_EQ(ReadText(Path("ca.key")), key_before);

  // Re-issuing a server certificate is refused the same way.
  EXPECT_NE(RunCerts({"server", "--host", "localhost", "--dir", Dir()}).exit_code, 0);

  testing::CommandResult forced = RunCerts({"init", "--dir", Dir(), "--force"});
  ASSERT_EQ(forced.exit_code, 0) << forced.out;
  const std::string ca_after = ReadText(Path("ca.crt"));
  EXPECT_NE(ca_after, ca_before);
  EXPECT_EQ(FileMode(Path("ca.key")), 0600u);
  // Certificates from the old CA no longer verify.
  EXPECT_EQ(VerifyAgainstCa(ca_after, ReadText(Path("server.crt")), X509_PURPOSE_SSL_SERVER),
            X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY);
}

TEST_F(CertsCliTest, BadInputGivesAClearErrorAndNonZeroExit) {
  testing::CommandResult no_ca = RunCerts({"client", "--id", "edge-1", "--dir", Dir()});
  EXPECT_EQ(no_ca.exit_code, 1);
  EXPECT_NE(no_ca.out.find(Path("ca.crt")), std::string::npos) << no_ca.out;
  EXPECT_NE(no_ca.out.find("tributary-certs init"), std::string::npos) << no_ca.out;

  ASSERT_EQ(RunCerts({"init", "--dir", Dir()}).exit_code, 0);
  testing::CommandResult bad_id = RunCerts({"client", "--id", "../evil", "--dir", Dir()});
  EXPECT_EQ(bad_id.exit_code, 1);
  EXPECT_NE(bad_id.out.find("client id has character '/'"), std::string::npos) << bad_id.out;
  EXPECT_FALSE(std::filesystem::exists(Path("clients")));

  testing::CommandResult no_host = RunCerts({"server", "--dir", Dir()});
  EXPECT_EQ(no_host.exit_code, 1);
  EXPECT_NE(no_host.out.find("--host"), std::string::npos) << no_host.out;

  testing::CommandResult bad_ip = RunCerts({"server", "--ip", "300.1.1.1", "--dir", Dir()});
  EXPECT_EQ(bad_ip.exit_code, 1);
  EXPECT_NE(bad_ip.out.find("300.1.1.1"), std::string::npos) << bad_ip.out;

  EXPECT_NE(RunCerts({}).exit_code, 0);
  EXPECT_NE(RunCerts({"frobnicate"}).exit_code, 0);
  // A usage error reads like the others, with exit status 2.
  testing::CommandResult no_id = RunCerts({"client", "--dir", Dir()});
  EXPECT_EQ(no_id.exit_code, 2);
  EXPECT_NE(no_id.out.find("tributary-certs: error: --id is required"), std::string::npos)
      << no_id.out;
  EXPECT_NE(RunCerts({"init", "--dir", Path("x"), "--days", "0"}).exit_code, 0);
  EXPECT_FALSE(std::filesystem::exists(Path("server.crt")));
}

TEST_F(CertsCliTest, DaysSetsTheValidityPeriod) {
  ASSERT_EQ(RunCerts({"init", "--dir", Dir(), "--days", "100"}).exit_code, 0);
  ASSERT_EQ(RunCerts({"client", "--id", "e", "--days", "30", "--dir", Dir()}).exit_code, 0);
  for (const auto& [file, want] :
       {std::pair<std::string, int>{"ca.crt", 100}, {"clients/e.crt", 30}}) {
    auto cert = crypto_internal::ParseCertificate(ReadText(Path(file)), file);
    ASSERT_TRUE(cert.ok());
    int days = -1, secs = -1;
    ASSERT_EQ(ASN1_TIME_diff(&days, &secs, X509_get0_notBefore(cert->get()),
                             X509_get0_notAfter(cert->get())),
              1);
    EXPECT_EQ(days, want) << file;
  }
}

}  // namespace
}  // namespace tributary
