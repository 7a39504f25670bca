#include "crypto/cert_authority.h"

#include <gtest/gtest.h>
#include <openssl/x509v3.h>

#include <string>

#include "crypto/client_id.h"
#include "crypto_test_util.h"

namespace tributary {
namespace {

using crypto_internal::ParseCertificate;
using crypto_internal::ParsePrivateKey;
using testing::VerifyAgainstCa;

PemPair MustCa(const std::string& name = "Test CA") {
  auto ca = MakeCaCertificate(name);
  EXPECT_TRUE(ca.ok()) << ca.status();
  return *ca;
}

TEST(CertAuthorityTest, CaIsASelfSignedP256Sha256Ca) {
  PemPair ca = MustCa("Tributary Test CA");
  auto info = DescribeCertificate(ca.cert_pem);
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_TRUE(info->is_ca);
  EXPECT_EQ(info->subject_cn, "Tributary Test CA");
  EXPECT_EQ(VerifyAgainstCa(ca.cert_pem, ca.cert_pem, X509_PURPOSE_ANY), X509_V_OK);

  auto cert = ParseCertificate(ca.cert_pem, "ca");
  auto key = ParsePrivateKey(ca.key_pem, "key");
  ASSERT_TRUE(cert.ok() && key.ok());
  EXPECT_EQ(EVP_PKEY_get_base_id(key->get()), EVP_PKEY_EC);
  EXPECT_EQ(EVP_PKEY_get_bits(key->get()), 256);
  EXPECT_EQ(X509_get_signature_nid(cert->get()), NID_ecdsa_with_SHA256);
  EXPECT_EQ(X509_get_version(cert->get()), 2);  // v3
  EXPECT_TRUE(X509_get_key_usage(cert->get()) & KU_KEY_CERT_SIGN);
}

TEST(CertAuthorityTest, ServerCertVerifiesAndCarriesDnsAndIpSans) {
  PemPair ca = MustCa();
  auto server = MakeServerCertificate(ca, {"coord.example.org", "localhost"}, {"127.0.0.1", "::1"});
  ASSERT_TRUE(server.ok()) << server.status();
  EXPECT_EQ(VerifyAgainstCa(ca.cert_pem, server->cert_pem, X509_PURPOSE_SSL_SERVER), X509_V_OK);
  // EKU is serverAuth only: the same certificate is not good for a client.
  EXPECT_EQ(VerifyAgainstCa(ca.cert_pem, server->cert_pem, X509_PURPOSE_SSL_CLIENT),
            X509_V_ERR_INVALID_PURPOSE);

  auto info = DescribeCertificate(server->cert_pem);
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->dns_names, (std::vector<std::string>{"coord.example.org", "localhost"}));
  EXPECT_EQ(info->ip_addresses, (std::vector<std::string>{"127.0.0.1", "::1"}));
  EXPECT_TRUE(info->uris.empty());
  EXPECT_EQ(info->subject_cn, "coord.example.org");
  EXPECT_FALSE(info->is_ca);

  auto cert = ParseCertificate(server->cert_pem, "server");
  ASSERT_TRUE(cert.ok());
  X509* c = cert->get();
  EXPECT_EQ(X509_check_host(c, "coord.example.org", 0, 0, nullptr), 1);
  EXPECT_EQ(X509_check_host(c, "localhost", 0, 0, nullptr), 1);
  EXPECT_EQ(X509_check_host(c, "evil.example.org", 0, 0, nullptr), 0);
  EXPECT_EQ(X509_check_ip_asc(c, "127.0.0.1", 0), 1);
  EXPECT_EQ(X509_check_ip_asc(c, "::1", 0), 1);
  EXPECT_EQ(X509_check_ip_asc(c, "127.0.0.2", 0), 0);
  EXPECT_EQ(X509_get_extended_key_usage(c), static_cast<uint32_t>(XKU_SSL_SERVER));
  EXPECT_EQ(X509_check_ca(c), 0);
}

TEST(CertAuthorityTest, ClientCertCarriesIdInSanUriAndCn) {
  PemPair ca = MustCa();
  auto client = MakeClientCertificate(ca, "edge-07.eu_west");
  ASSERT_TRUE(client.ok()) << client.status();
  EXPECT_EQ(VerifyAgainstCa(ca.cert_pem, client->cert_pem, X509_PURPOSE_SSL_CLIENT), X509_V_OK);
  EXPECT_EQ(VerifyAgainstCa(ca.cert_pem, client->cert_pem, X509_PURPOSE_SSL_SERVER),
            X509_V_ERR_INVALID_PURPOSE);
  auto info = DescribeCertificate(client->cert_pem);
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->subject_cn, "edge-07.eu_west");
  EXPECT_EQ(info->uris, std::vector<std::string>{"tributary://client/edge-07.eu_west"});
  EXPECT_TRUE(info->dns_names.empty());
  auto cert = ParseCertificate(client->cert_pem, "client");
  ASSERT_TRUE(cert.ok());
  EXPECT_EQ(X509_get_extended_key_usage(cert->get()), static_cast<uint32_t>(XKU_SSL_CLIENT));
}

TEST(CertAuthorityTest, CertFromAnotherCaFailsVerification) {
  PemPair ca = MustCa("CA one");
  PemPair other = MustCa("CA two");
  auto client = MakeClientCertificate(other, "edge-1");
  auto server = MakeServerCertificate(other, {"localhost"}, {});
  ASSERT_TRUE(client.ok() && server.ok());
  EXPECT_EQ(VerifyAgainstCa(ca.cert_pem, client->cert_pem, X509_PURPOSE_SSL_CLIENT),
            X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY);
  EXPECT_EQ(VerifyAgainstCa(ca.cert_pem, server->cert_pem, X509_PURPOSE_SSL_SERVER),
            X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY);
  // A different CA with the same name is still a different CA.
  PemPair twin = MustCa("CA one");
  auto twin_client = MakeClientCertificate(twin, "edge-1");
  ASSERT_TRUE(twin_client.ok());
  EXPECT_NE(VerifyAgainstCa(ca.cert_pem, twin_client->cert_pem, X509_PURPOSE_SSL_CLIENT),
            X509_V_OK);
}

TEST(CertAuthorityTest, ValidityWindowFollowsOptions) {
  PemPair ca = MustCa();
  CertOptions expired;
  expired.valid_days = 1;
  expired.not_before_offset_s = -3 * 86400;
  auto old = MakeClientCertificate(ca, "edge-1", expired);
  ASSERT_TRUE(old.ok()) << old.status();
  EXPECT_EQ(VerifyAgainstCa(ca.cert_pem, old->cert_pem, X509_PURPOSE_SSL_CLIENT),
            X509_V_ERR_CERT_HAS_EXPIRED);

  CertOptions future;
  future.not_before_offset_s = 86400;
  auto early = MakeServerCertificate(ca, {"localhost"}, {}, future);
  ASSERT_TRUE(early.ok());
  EXPECT_EQ(VerifyAgainstCa(ca.cert_pem, early->cert_pem, X509_PURPOSE_SSL_SERVER),
            X509_V_ERR_CERT_NOT_YET_VALID);

  CertOptions ten;
  ten.valid_days = 10;
  auto c = MakeClientCertificate(ca, "edge-2", ten);
  ASSERT_TRUE(c.ok());
  auto cert = ParseCertificate(c->cert_pem, "c");
  ASSERT_TRUE(cert.ok());
  int days = -1, secs = -1;
  ASSERT_EQ(ASN1_TIME_diff(&days, &secs, X509_get0_notBefore(cert->get()),
                           X509_get0_notAfter(cert->get())),
            1);
  EXPECT_EQ(days, 10);
  EXPECT_EQ(secs, 0);
  // The default backdates notBefore by 300 s for clock skew.
  int skew_days = -1, skew_secs = 0;
  ASSERT_EQ(ASN1_TIME_diff(&skew_days, &skew_secs, X509_get0_notBefore(cert->get()), nullptr), 1);
  EXPECT_EQ(skew_days, 0);
  EXPECT_GE(skew_secs, 300);
  EXPECT_LE(skew_secs, 360);
}

TEST(CertAuthorityTest, SerialNumbersAreDistinct) {
  PemPair ca = MustCa();
  auto a = MakeClientCertificate(ca, "a");
  auto b = MakeClientCertificate(ca, "a");
  ASSERT_TRUE(a.ok() && b.ok());
  auto ca_cert = ParseCertificate(a->cert_pem, "a");
  auto cb_cert = ParseCertificate(b->cert_pem, "b");
  ASSERT_TRUE(ca_cert.ok() && cb_cert.ok());
  EXPECT_NE(ASN1_INTEGER_cmp(X509_get0_serialNumber(ca_cert->get()),
                             X509_get0_serialNumber(cb_cert->get())),
            0);
  EXPECT_NE(a->key_pem, b->key_pem);
}

TEST(CertAuthorityTest, InvalidClientIdsAreRejected) {
  PemPair ca = MustCa();
  const std::string bad[] = {
      "",    std::string(65, 'a'),   "a/b",   "a b", "caf\xc3\xa9", "..", ".", "a\n",
      "x:y", std::string("a\0b", 3), "a,CN=b"};
  for (const std::string& id : bad) {
    auto c = MakeClientCertificate(ca, id);
    ASSERT_FALSE(c.ok()) << "accepted '" << id << "'";
    EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument) << id;
    EXPECT_FALSE(ValidateClientId(id).ok()) << id;
  }
  auto slash = MakeClientCertificate(ca, "a/b");
  EXPECT_NE(slash.status().message().find("'/' at position 1"), std::string::npos)
      << slash.status();
  for (const std::string& id : {std::string("a"), std::string(64, 'Z'), std::string("E_0.x-9")}) {
    EXPECT_TRUE(MakeClientCertificate(ca, id).ok()) << id;
  }
}

TEST(CertAuthorityTest, InvalidServerNamesAndOptionsAreRejected) {
  PemPair ca = MustCa();
  EXPECT_EQ(MakeServerCertificate(ca, {}, {}).status().code(), StatusCode::kInvalidArgument);
  for (const char* name :
       {"a b", "-bad.org", "bad-.org", "a..b", "x.", "*", "a.*.org", "\xc3\xa9"}) {
    auto s = MakeServerCertificate(ca, {name}, {});
    EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument) << name;
  }
  for (const char* ip : {"999.1.1.1", "1.2.3", "localhost", "::g"}) {
    auto s = MakeServerCertificate(ca, {}, {ip});
    ASSERT_EQ(s.status().code(), StatusCode::kInvalidArgument) << ip;
    EXPECT_NE(s.status().message().find(ip), std::string::npos);
  }
  EXPECT_TRUE(MakeServerCertificate(ca, {"*.example.org"}, {}).ok());
  EXPECT_TRUE(MakeServerCertificate(ca, {}, {"10.0.0.5"}).ok());

  for (int64_t days : {int64_t{0}, int64_t{-1}, int64_t{36501}}) {
    CertOptions o;
    o.valid_days = days;
    EXPECT_EQ(MakeCaCertificate("x", o).status().code(), StatusCode::kInvalidArgument) << days;
  }
  EXPECT_EQ(MakeCaCertificate("").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(MakeCaCertificate(std::string(65, 'c')).status().code(), StatusCode::kInvalidArgument);
}

TEST(CertAuthorityTest, IssuingNeedsAMatchingCaPair) {
  PemPair ca = MustCa();
  PemPair other = MustCa();
  auto client = MakeClientCertificate(ca, "edge-1");
  ASSERT_TRUE(client.ok());

  auto not_ca = MakeClientCertificate(*client, "edge-2");
  ASSERT_FALSE(not_ca.ok());
  EXPECT_NE(not_ca.status().message().find("not a CA"), std::string::npos) << not_ca.status();

  PemPair mismatched{ca.cert_pem, other.key_pem};
  auto bad = MakeServerCertificate(mismatched, {"localhost"}, {});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("does not match"), std::string::npos) << bad.status();

  PemPair garbage{"not pem", ca.key_pem};
  EXPECT_EQ(MakeClientCertificate(garbage, "edge-1").status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tributary
