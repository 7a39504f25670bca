#include "crypto/pem.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include "crypto/cert_authority.h"
#include "crypto_test_util.h"

namespace tributary {
namespace {

using testing::FileMode;
using testing::ReadText;
using testing::TempDir;
using testing::WriteText;

// Runs a block with umask 0, so that file modes come only from what the code asked for.
class ScopedUmask {
 public:
  explicit ScopedUmask(mode_t mask) : old_(::umask(mask)) {}
  ~ScopedUmask() { ::umask(old_); }

 private:
  mode_t old_;
};

TEST(PemTest, WritePemPairCreatesKeyWithMode0600AndRoundTrips) {
  TempDir dir;
  auto ca = MakeCaCertificate("CA");
  ASSERT_TRUE(ca.ok());
  {
    ScopedUmask umask0(0);
    ASSERT_TRUE(WritePemPair(*ca, dir / "ca.crt", dir / "ca.key", false).ok());
  }
  EXPECT_EQ(FileMode(dir / "ca.key"), 0600u);
  EXPECT_EQ(FileMode(dir / "ca.crt"), 0644u);
  auto loaded = LoadPemPair(dir / "ca.crt", dir / "ca.key");
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->cert_pem, ca->cert_pem);
  EXPECT_EQ(loaded->key_pem, ca->key_pem);
  // No temporary files are left behind.
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir.path()),
                          std::filesystem::directory_iterator()),
            2);
}

TEST(PemTest, WritePemPairRefusesToOverwriteUnlessAsked) {
  TempDir dir;
  auto first = MakeCaCertificate("first");
  auto second = MakeCaCertificate("second");
  ASSERT_TRUE(first.ok() && second.ok());
  ASSERT_TRUE(WritePemPair(*first, dir / "ca.crt", dir / "ca.key", false).ok());
  Status s = WritePemPair(*second, dir / "ca.crt", dir / "ca.key", false);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find(dir / "ca.crt"), std::string::npos) << s;
  EXPECT_EQ(ReadText(dir / "ca.crt"), first->cert_pem);
  EXPECT_EQ(ReadText(dir / "ca.key"), first->key_pem);

  // Only the key exists: still refused, and the certificate is not written either.
  std::filesystem::remove(dir / "ca.crt");
  EXPECT_EQ(WritePemPair(*second, dir / "ca.crt", dir / "ca.key", false).code(),
            StatusCode::kFailedPrecondition);
  EXPECT_FALSE(std::filesystem::exists(dir / "ca.crt"));

  ASSERT_TRUE(WritePemPair(*second, dir / "ca.crt", dir / "ca.key", true).ok());
  EXPECT_EQ(ReadText(dir / "ca.crt"), second->cert_pem);
  EXPECT_EQ(ReadText(dir / "ca.key"), second->key_pem);
  EXPECT_EQ(FileMode(dir / "ca.key") & 077, 0u);
}

TEST(PemTest, LoadPemPairErrorsNameTheFile) {
  TempDir dir;
  auto ca = MakeCaCertificate("CA");
  auto other = MakeCaCertificate("other");
  ASSERT_TRUE(ca.ok() && other.ok());
  WriteText(dir / "ca.crt", ca->cert_pem);
  WriteText(dir / "ca.key", ca->key_pem);
  WriteText(dir / "other.key", other->key_pem);
  WriteText(dir / "junk.pem", "hello, not PEM\n");

  auto missing = LoadPemPair(dir / "nope.crt", dir / "ca.key");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find(dir / "nope.crt"), std::string::npos);

  auto bad_cert = LoadPemPair(dir / "junk.pem", dir / "ca.key");
  EXPECT_EQ(bad_cert.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad_cert.status().message().find(dir / "junk.pem"), std::string::npos);

  // A certificate where a key belongs.
  auto bad_key = LoadPemPair(dir / "ca.crt", dir / "ca.crt");
  EXPECT_EQ(bad_key.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad_key.status().message().find("private key"), std::string::npos);

  auto mismatch = LoadPemPair(dir / "ca.crt", dir / "other.key");
  ASSERT_EQ(mismatch.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(mismatch.status().message(), "private key " + (dir / "other.key") +
                                             " does not match certificate " + (dir / "ca.crt"));

  WriteText(dir / "enc.key",
            "-----BEGIN ENCRYPTED PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED PRIVATE KEY-----\n");
  auto encrypted = LoadPemPair(dir / "ca.crt", dir / "enc.key");
  EXPECT_EQ(encrypted.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(encrypted.status().message().find("encrypted"), std::string::npos);
}

}  // namespace
}  // namespace tributary
