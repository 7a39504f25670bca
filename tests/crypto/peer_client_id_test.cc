// PeerClientId on certificates that tributary-certs never issues but a CA operator might: no SAN
// URI (the CN is the id), conflicting ids, ids that are not valid.
#include <gtest/gtest.h>
#include <openssl/x509v3.h>

#include "crypto/cert_authority.h"
#include "crypto/tls_context.h"
#include "crypto_test_util.h"
#include "loopback_handshake.h"

namespace tributary {
namespace {

using namespace crypto_internal;

// A client certificate (EKU clientAuth) signed by `ca`, with subject CN=`cn` (none when empty) and
// the given SAN URIs (no SAN extension when empty).
PemPair HandMadeClientCert(const PemPair& ca, const std::string& cn,
                           const std::vector<std::string>& uris) {
  auto ca_cert = ParseCertificate(ca.cert_pem, "ca");
  auto ca_key = ParsePrivateKey(ca.key_pem, "ca key");
  EXPECT_TRUE(ca_cert.ok() && ca_key.ok());
  EvpPkeyPtr key(EVP_EC_gen("P-256"));
  X509Ptr cert(X509_new());
  EXPECT_TRUE(key && cert);
  X509_set_version(cert.get(), 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert.get()), 4242);
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -300);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), 86400);
  if (!cn.empty()) {
    X509_NAME_add_entry_by_txt(X509_get_subject_name(cert.get()), "CN", MBSTRING_UTF8,
                               reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1, 0);
  }
  X509_set_issuer_name(cert.get(), X509_get_subject_name(ca_cert->get()));
  X509_set_pubkey(cert.get(), key.get());
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, ca_cert->get(), cert.get(), nullptr, nullptr, 0);
  std::string san;
  for (const std::string& uri : uris) san += (san.empty() ? "URI:" : ",URI:") + uri;
  std::vector<std::pair<int, std::string>> exts = {{NID_ext_key_usage, "clientAuth"}};
  if (!san.empty()) exts.emplace_back(NID_subject_alt_name, san);
  for (const auto& [nid, value] : exts) {
    X509ExtPtr ext(X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str()));
    EXPECT_TRUE(ext) << value;
    if (ext) X509_add_ext(cert.get(), ext.get(), -1);
  }
  EXPECT_GT(X509_sign(cert.get(), ca_key->get(), EVP_sha256()), 0);
  auto cert_pem = CertificateToPem(cert.get());
  auto key_pem = PrivateKeyToPem(key.get());
  EXPECT_TRUE(cert_pem.ok() && key_pem.ok());
  return {*cert_pem, *key_pem};
}

class PeerClientIdTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto ca = MakeCaCertificate("CA");
    ASSERT_TRUE(ca.ok());
    ca_ = *ca;
    auto server = MakeServerCertificate(ca_, {"localhost"}, {});
    ASSERT_TRUE(server.ok());
    auto ctx = MakeServerTlsContext(TlsPem{ca_.cert_pem, server->cert_pem, server->key_pem});
    ASSERT_TRUE(ctx.ok()) << ctx.status();
    server_ctx_ = *ctx;
  }

  // The server's view of a peer presenting `identity`: the handshake's outcome.
  testing::HandshakeOutcome Handshake(const PemPair& identity) {
    auto client_ctx =
        MakeClientTlsContext(TlsPem{ca_.cert_pem, identity.cert_pem, identity.key_pem});
    EXPECT_TRUE(client_ctx.ok()) << client_ctx.status();
    if (!client_ctx.ok()) return {};
    auto out = testing::RunLoopbackHandshake(*server_ctx_, **client_ctx, "localhost");
    EXPECT_TRUE(out.Accepted()) << out.server_ec.message();
    return out;
  }
  // ... as a client's id.
  Result<std::string> IdOf(const PemPair& identity) { return Handshake(identity).peer_id; }
  // ... as a peer that may be an aggregator.
  Result<PeerIdentity> IdentityOf(const PemPair& identity) {
    return Handshake(identity).peer_identity;
  }

  PemPair ca_;
  SslContextPtr server_ctx_;
};

TEST_F(PeerClientIdTest, CnIsTheIdWhenThereIsNoTributaryUri) {
  auto id = IdOf(HandMadeClientCert(ca_, "edge-cn", {}));
  ASSERT_TRUE(id.ok()) << id.status();
  EXPECT_EQ(*id, "edge-cn");
  // A SAN URI of another scheme does not count as an id either.
  auto other = IdOf(HandMadeClientCert(ca_, "edge-cn2", {"https://example.org/edge"}));
  ASSERT_TRUE(other.ok()) << other.status();
  EXPECT_EQ(*other, "edge-cn2");
}

TEST_F(PeerClientIdTest, SanUriWinsOverCn) {
  auto id = IdOf(HandMadeClientCert(ca_, "the-cn", {"tributary://client/the-uri"}));
  ASSERT_TRUE(id.ok()) << id.status();
  EXPECT_EQ(*id, "the-uri");
}

TEST_F(PeerClientIdTest, ConflictingMissingOrMalformedIdsAreDenied) {
  auto two = IdOf(HandMadeClientCert(ca_, "x", {"tributary://client/a", "tributary://client/b"}));
  EXPECT_EQ(two.status().code(), StatusCode::kPermissionDenied);
  EXPECT_NE(two.status().message().find("two client ids"), std::string::npos) << two.status();

  auto none = IdOf(HandMadeClientCert(ca_, "", {}));
  EXPECT_EQ(none.status().code(), StatusCode::kPermissionDenied);
  EXPECT_NE(none.status().message().find("no client id"), std::string::npos) << none.status();

  auto bad_uri = IdOf(HandMadeClientCert(ca_, "ok", {"tributary://client/a/../b"}));
  EXPECT_EQ(bad_uri.status().code(), StatusCode::kPermissionDenied);
  auto bad_cn = IdOf(HandMadeClientCert(ca_, "has space", {}));
  EXPECT_EQ(bad_cn.status().code(), StatusCode::kPermissionDenied);
  EXPECT_NE(bad_cn.status().message().find("invalid"), std::string::npos) << bad_cn.status();
}

TEST_F(PeerClientIdTest, AnAggregatorCertificateHasItsRoleAndIsNoClient) {
  auto agg = MakeAggregatorCertificate(ca_, "agg-eu-1", {"agg1.example.org"}, {"127.0.0.1"});
  ASSERT_TRUE(agg.ok()) << agg.status();
  auto who = IdentityOf(*agg);
  ASSERT_TRUE(who.ok()) << who.status();
  EXPECT_EQ(who->id, "agg-eu-1");
  EXPECT_EQ(who->role, PeerRole::kAggregator);
  // Where only a client may connect (PeerClientId: the client library's identity, secure
  // aggregation's signatures), an aggregator's certificate is refused, naming it.
  auto as_client = IdOf(*agg);
  EXPECT_EQ(as_client.status().code(), StatusCode::kPermissionDenied);
  EXPECT_NE(as_client.status().message().find("aggregator 'agg-eu-1'"), std::string::npos)
      << as_client.status();
  // And a client's certificate is a client's.
  auto client = MakeClientCertificate(ca_, "edge-1");
  ASSERT_TRUE(client.ok());
  auto c = IdentityOf(*client);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->role, PeerRole::kClient);
  EXPECT_EQ(c->id, "edge-1");
}

TEST_F(PeerClientIdTest, ACertificateOfBothRolesIsDenied) {
  auto both = IdentityOf(
      HandMadeClientCert(ca_, "x", {"tributary://client/a", "tributary://aggregator/a"}));
  EXPECT_EQ(both.status().code(), StatusCode::kPermissionDenied);
  EXPECT_NE(both.status().message().find("both a client and an aggregator"), std::string::npos)
      << both.status();
  auto two = IdentityOf(
      HandMadeClientCert(ca_, "x", {"tributary://aggregator/a", "tributary://aggregator/b"}));
  EXPECT_EQ(two.status().code(), StatusCode::kPermissionDenied);
  EXPECT_NE(two.status().message().find("two aggregator ids"), std::string::npos) << two.status();
}

}  // namespace
}  // namespace tributary
