#include <gtest/gtest.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include "crypto/cert_authority.h"
#include "crypto/pem.h"
#include "crypto/tls_context.h"
#include "crypto_test_util.h"
#include "loopback_handshake.h"

namespace tributary {
namespace {

using testing::RunLoopbackHandshake;
using testing::SslReason;
using testing::TempDir;

namespace ssl = boost::asio::ssl;

class TlsHandshakeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ca_ = Must(MakeCaCertificate("Handshake CA"));
    other_ca_ = Must(MakeCaCertificate("Other CA"));
    server_ = Must(MakeServerCertificate(ca_, {"localhost"}, {"127.0.0.1", "::1"}));
    client_ = Must(MakeClientCertificate(ca_, "edge-1"));
    server_ctx_ =
        MustCtx(MakeServerTlsContext(TlsPem{ca_.cert_pem, server_.cert_pem, server_.key_pem}));
  }

  static PemPair Must(Result<PemPair> r) {
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *r : PemPair{};
  }
  static SslContextPtr MustCtx(Result<SslContextPtr> r) {
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *r : nullptr;
  }
  SslContextPtr ClientCtx(const PemPair& identity, const PemPair& trust) {
    return MustCtx(
        MakeClientTlsContext(TlsPem{trust.cert_pem, identity.cert_pem, identity.key_pem}));
  }
  SslContextPtr ClientCtx(const PemPair& identity) { return ClientCtx(identity, ca_); }

  PemPair ca_, other_ca_, server_, client_;
  SslContextPtr server_ctx_;
};

TEST_F(TlsHandshakeTest, MutualTlsSucceedsAndYieldsTheClientId) {
  auto client_ctx = ClientCtx(client_);
  auto out = RunLoopbackHandshake(*server_ctx_, *client_ctx, "localhost");
  ASSERT_TRUE(out.Accepted()) << "server: " << out.server_ec.message()
                              << " client: " << out.client_ec.message();
  EXPECT_EQ(out.server_version, TLS1_3_VERSION);
  EXPECT_EQ(out.cipher, "TLS_AES_128_GCM_SHA256");  // the contexts' first choice
  EXPECT_EQ(out.client_resumable, 0);  // no session tickets: every connection is a full handshake
  EXPECT_EQ(out.server_verify, X509_V_OK);
  EXPECT_EQ(out.client_verify, X509_V_OK);
  ASSERT_TRUE(out.peer_id.ok()) << out.peer_id.status();
  EXPECT_EQ(*out.peer_id, "edge-1");
}

TEST_F(TlsHandshakeTest, ClientVerifiesServerIpAddressSans) {
  auto client_ctx = ClientCtx(client_);
  EXPECT_TRUE(RunLoopbackHandshake(*server_ctx_, *client_ctx, "127.0.0.1").Accepted());
  EXPECT_TRUE(RunLoopbackHandshake(*server_ctx_, *client_ctx, "[::1]").Accepted());
  auto wrong_ip = RunLoopbackHandshake(*server_ctx_, *client_ctx, "127.0.0.2");
  EXPECT_FALSE(wrong_ip.Accepted());
  EXPECT_TRUE(wrong_ip.client_ec);
  EXPECT_EQ(wrong_ip.client_verify, X509_V_ERR_IP_ADDRESS_MISMATCH);
}

TEST_F(TlsHandshakeTest, ClientRefusesServerWithWrongHostname) {
  auto client_ctx = ClientCtx(client_);
  auto out = RunLoopbackHandshake(*server_ctx_, *client_ctx, "coordinator.example.org");
  EXPECT_FALSE(out.Accepted());
  EXPECT_TRUE(out.client_ec);
  EXPECT_EQ(out.client_verify, X509_V_ERR_HOSTNAME_MISMATCH);
  EXPECT_EQ(SslReason(out.client_ec), SSL_R_CERTIFICATE_VERIFY_FAILED);
  EXPECT_TRUE(out.server_ec);  // the client aborted, so the server's handshake failed too
  EXPECT_FALSE(out.peer_id.ok());
}

TEST_F(TlsHandshakeTest, ClientWithoutCertificateIsRejected) {
  // A client context with the right CA but no certificate of its own.
  ssl::context bare(ssl::context::tls_client);
  SSL_CTX_set_min_proto_version(bare.native_handle(), TLS1_3_VERSION);
  bare.set_verify_mode(ssl::verify_peer);
  bare.add_certificate_authority(boost::asio::buffer(ca_.cert_pem));
  auto out = RunLoopbackHandshake(*server_ctx_, bare, "localhost");
  EXPECT_FALSE(out.Accepted());
  EXPECT_FALSE(out.client_ec) << "TLS 1.3 clients finish before the server decides";
  EXPECT_FALSE(out.client_got_byte);
  EXPECT_TRUE(out.client_read_ec);
  EXPECT_EQ(SslReason(out.server_ec), SSL_R_PEER_DID_NOT_RETURN_A_CERTIFICATE)
      << out.server_ec.message();

  // With client certificates optional the handshake completes, but there is no identity.
  auto optional_ctx =
      MustCtx(MakeServerTlsContext(TlsPem{ca_.cert_pem, server_.cert_pem, server_.key_pem}, false));
  auto anon = RunLoopbackHandshake(*optional_ctx, bare, "localhost");
  EXPECT_TRUE(anon.Accepted());
  EXPECT_EQ(anon.peer_id.status().code(), StatusCode::kPermissionDenied);
}

TEST_F(TlsHandshakeTest, ClientFromAnotherCaIsRejected) {
  PemPair stranger = Must(MakeClientCertificate(other_ca_, "edge-1"));
  auto client_ctx = ClientCtx(stranger);
  auto out = RunLoopbackHandshake(*server_ctx_, *client_ctx, "localhost");
  EXPECT_FALSE(out.Accepted());
  EXPECT_FALSE(out.client_got_byte);
  EXPECT_EQ(SslReason(out.server_ec), SSL_R_CERTIFICATE_VERIFY_FAILED);
  EXPECT_EQ(out.server_verify, X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY);
}

TEST_F(TlsHandshakeTest, ExpiredClientCertificateIsRejected) {
  CertOptions expired;
  expired.valid_days = 1;
  expired.not_before_offset_s = -2 * 86400;
  auto client_ctx = ClientCtx(Must(MakeClientCertificate(ca_, "edge-1", expired)));
  auto out = RunLoopbackHandshake(*server_ctx_, *client_ctx, "localhost");
  EXPECT_FALSE(out.Accepted());
  EXPECT_EQ(SslReason(out.server_ec), SSL_R_CERTIFICATE_VERIFY_FAILED);
  EXPECT_EQ(out.server_verify, X509_V_ERR_CERT_HAS_EXPIRED);
}

TEST_F(TlsHandshakeTest, ServerCertificateIsNotAClientCertificate) {
  auto client_ctx = ClientCtx(server_);  // EKU serverAuth only
  auto out = RunLoopbackHandshake(*server_ctx_, *client_ctx, "localhost");
  EXPECT_FALSE(out.Accepted());
  EXPECT_EQ(out.server_verify, X509_V_ERR_INVALID_PURPOSE);
}

TEST_F(TlsHandshakeTest, Tls12OnlyClientIsRejected) {
  auto client_ctx = ClientCtx(client_);
  SSL_CTX* native = client_ctx->native_handle();
  ASSERT_EQ(SSL_CTX_set_min_proto_version(native, TLS1_2_VERSION), 1);
  ASSERT_EQ(SSL_CTX_set_max_proto_version(native, TLS1_2_VERSION), 1);
  auto out = RunLoopbackHandshake(*server_ctx_, *client_ctx, "localhost");
  EXPECT_FALSE(out.Accepted());
  EXPECT_TRUE(out.client_ec);
  EXPECT_EQ(SslReason(out.server_ec), SSL_R_UNSUPPORTED_PROTOCOL) << out.server_ec.message();
}

TEST_F(TlsHandshakeTest, ClientRefusesServerFromAnotherCaOrExpiredOrWithClientCert) {
  auto client_ctx = ClientCtx(client_);
  struct Case {
    const char* name;
    PemPair server;
    long want_verify;
  };
  CertOptions expired;
  expired.valid_days = 1;
  expired.not_before_offset_s = -2 * 86400;
  const Case cases[] = {
      {"other CA", Must(MakeServerCertificate(other_ca_, {"localhost"}, {})),
       X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY},
      {"expired", Must(MakeServerCertificate(ca_, {"localhost"}, {}, expired)),
       X509_V_ERR_CERT_HAS_EXPIRED},
      {"client EKU", client_, X509_V_ERR_INVALID_PURPOSE},
  };
  for (const Case& c : cases) {
    // The client checks the server before it sends its own certificate, so the server's trust
    // store (ca_) never comes into play here.
    auto server_ctx =
        MustCtx(MakeServerTlsContext(TlsPem{ca_.cert_pem, c.server.cert_pem, c.server.key_pem}));
    auto out = RunLoopbackHandshake(*server_ctx, *client_ctx, std::nullopt);
    EXPECT_FALSE(out.Accepted()) << c.name;
    EXPECT_TRUE(out.client_ec) << c.name;
    EXPECT_EQ(out.client_verify, c.want_verify) << c.name;
  }
}

TEST_F(TlsHandshakeTest, ContextsAreTls13OnlyAndServerRequiresClientCerts) {
  SSL_CTX* server = server_ctx_->native_handle();
  EXPECT_EQ(SSL_CTX_get_min_proto_version(server), TLS1_3_VERSION);
  EXPECT_EQ(SSL_CTX_get_max_proto_version(server), TLS1_3_VERSION);
  EXPECT_EQ(SSL_CTX_get_verify_mode(server), SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT);
  auto client_ctx = ClientCtx(client_);
  SSL_CTX* client = client_ctx->native_handle();
  EXPECT_EQ(SSL_CTX_get_min_proto_version(client), TLS1_3_VERSION);
  EXPECT_EQ(SSL_CTX_get_max_proto_version(client), TLS1_3_VERSION);
  EXPECT_EQ(SSL_CTX_get_verify_mode(client), SSL_VERIFY_PEER);
}

TEST_F(TlsHandshakeTest, ContextsFromFilesWorkAndErrorsNameTheFile) {
  TempDir dir;
  ASSERT_TRUE(WritePemPair(ca_, dir / "ca.crt", dir / "ca.key", false).ok());
  ASSERT_TRUE(WritePemPair(server_, dir / "server.crt", dir / "server.key", false).ok());
  ASSERT_TRUE(WritePemPair(client_, dir / "edge-1.crt", dir / "edge-1.key", false).ok());
  auto server_ctx = MustCtx(
      MakeServerTlsContext(TlsConfig{dir / "ca.crt", dir / "server.crt", dir / "server.key"}));
  auto client_ctx = MustCtx(
      MakeClientTlsContext(TlsConfig{dir / "ca.crt", dir / "edge-1.crt", dir / "edge-1.key"}));
  ASSERT_TRUE(server_ctx && client_ctx);
  auto out = RunLoopbackHandshake(*server_ctx, *client_ctx, "localhost");
  EXPECT_TRUE(out.Accepted());
  EXPECT_EQ(out.peer_id.ok() ? *out.peer_id : "", "edge-1");

  auto missing =
      MakeServerTlsContext(TlsConfig{dir / "nope.crt", dir / "server.crt", dir / "server.key"});
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find(dir / "nope.crt"), std::string::npos);

  testing::WriteText(dir / "junk.crt",
                     "-----BEGIN CERTIFICATE-----\n!!!\n-----END CERTIFICATE-----\n");
  auto junk = MakeClientTlsContext(TlsConfig{dir / "ca.crt", dir / "junk.crt", dir / "edge-1.key"});
  EXPECT_EQ(junk.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(junk.status().message().find(dir / "junk.crt"), std::string::npos) << junk.status();

  auto mismatch =
      MakeServerTlsContext(TlsConfig{dir / "ca.crt", dir / "server.crt", dir / "edge-1.key"});
  EXPECT_EQ(mismatch.status().message(), "private key " + (dir / "edge-1.key") +
                                             " does not match certificate " + (dir / "server.crt"));

  auto unset = MakeClientTlsContext(TlsConfig{dir / "ca.crt", "", dir / "edge-1.key"});
  EXPECT_EQ(unset.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(unset.status().message().find("cert_file"), std::string::npos);

  auto pem_mismatch = MakeClientTlsContext(TlsPem{ca_.cert_pem, client_.cert_pem, server_.key_pem});
  EXPECT_NE(pem_mismatch.status().message().find("key_pem"), std::string::npos);
}

TEST(TlsContextTest, ConfigureClientSslAndPeerClientIdRejectBadArguments) {
  ssl::context ctx(ssl::context::tls_client);
  SSL* s = SSL_new(ctx.native_handle());
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(ConfigureClientSsl(s, "").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ConfigureClientSsl(s, "[]").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ConfigureClientSsl(nullptr, "localhost").code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(ConfigureClientSsl(s, "localhost").ok());
  EXPECT_STREQ(SSL_get_servername(s, TLSEXT_NAMETYPE_host_name), "localhost");
  // Before any handshake there is no peer certificate.
  EXPECT_EQ(PeerClientId(s).status().code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(PeerClientId(nullptr).status().code(), StatusCode::kInvalidArgument);
  SSL_free(s);

  // No SNI for an IP literal (RFC 6066).
  SSL* ip = SSL_new(ctx.native_handle());
  EXPECT_TRUE(ConfigureClientSsl(ip, "10.1.2.3").ok());
  EXPECT_EQ(SSL_get_servername(ip, TLSEXT_NAMETYPE_host_name), nullptr);
  SSL_free(ip);
}

}  // namespace
}  // namespace tributary
