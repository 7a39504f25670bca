// The primitives of secure aggregation against their published test vectors (RFC 7748 X25519,
// RFC 5869 HKDF, RFC 8439 ChaCha20), and the properties that matter for AES-256-GCM sealing and
// certificate-bound signatures: a changed byte or a changed context is detected.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "crypto/aead.h"
#include "crypto/cert_authority.h"
#include "crypto/chacha20_stream.h"
#include "crypto/hkdf.h"
#include "crypto/secure_random.h"
#include "crypto/signing.h"
#include "crypto/x25519.h"

namespace tributary {
namespace {

std::vector<uint8_t> Hex(std::string_view hex) {
  std::vector<uint8_t> out(hex.size() / 2);
  for (size_t i = 0; i < out.size(); ++i)
    out[i] = static_cast<uint8_t>(std::stoi(std::string(hex.substr(2 * i, 2)), nullptr, 16));
  return out;
}

Key32 Hex32(std::string_view hex) {
  Key32 k;
  std::vector<uint8_t> v = Hex(hex);
  std::copy(v.begin(), v.end(), k.begin());
  return k;
}

std::vector<uint8_t> Bytes(std::string_view s) { return {s.begin(), s.end()}; }

TEST(X25519Test, Rfc7748Section6_1) {
  const X25519KeyPair alice = *X25519KeyPair::FromPrivate(
      Hex32("77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a"));
  const X25519KeyPair bob = *X25519KeyPair::FromPrivate(
      Hex32("5dab087e624a8a4b79e17f8b83800ee66f3bb1292618b6fd1c2f8b27ff88e0eb"));
  EXPECT_EQ(alice.public_key,
            Hex32("8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a"));
  EXPECT_EQ(bob.public_key,
            Hex32("de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f"));
  const Key32 shared = Hex32("4a5d9d5ba4ce2de1728e3bf480350f25e07e21c947d19e3376f09b3c1e161742");
  EXPECT_EQ(*alice.Agree(bob.public_key), shared);
  EXPECT_EQ(*bob.Agree(alice.public_key), shared);
}

TEST(X25519Test, GeneratedPairsAgreeAndBadPeerKeysAreRefused) {
  const X25519KeyPair a = *X25519KeyPair::Generate(), b = *X25519KeyPair::Generate();
  EXPECT_NE(a.private_key, b.private_key);
  EXPECT_EQ(*a.Agree(b.public_key), *b.Agree(a.public_key));
  EXPECT_EQ(a.Agree(std::vector<uint8_t>(31, 1)).status().code(), StatusCode::kInvalidArgument);
  // The all-zero point has small order: the shared secret would be zero.
  Result<Key32> zero = a.Agree(std::vector<uint8_t>(32, 0));
  ASSERT_FALSE(zero.ok());
  EXPECT_NE(zero.status().message().find("small-order"), std::string::npos) << zero.status();
}

TEST(HkdfTest, Rfc5869TestCase1) {
  const std::vector<uint8_t> ikm(22, 0x0b);
  const std::vector<uint8_t> salt = Hex("000102030405060708090a0b0c");
  const std::vector<uint8_t> info_bytes = Hex("f0f1f2f3f4f5f6f7f8f9");
  const std::string info(info_bytes.begin(), info_bytes.end());
  std::vector<uint8_t> okm(42);
  ASSERT_TRUE(HkdfSha256(ikm, salt, info, okm).ok());
  EXPECT_EQ(okm, Hex("3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b8"
                     "87185865"));
  std::vector<uint8_t> too_long(8161);
  EXPECT_FALSE(HkdfSha256(ikm, salt, info, too_long).ok());
}

TEST(ChaCha20StreamTest, Rfc8439AppendixA1FirstVectorAndContinuation) {
  ChaCha20Stream prg(Key32{});
  std::vector<uint8_t> out(64);
  prg.Fill(out);
  EXPECT_EQ(out, Hex("76b8e0ada0f13d90405d6ae55386bd28bdd219b8a08ded1aa836efcc8b770dc7da41597c5157"
                     "488d7724e03fb8d84a376a43b8f41518a11cc387b669b2ee6586"));
  // Successive fills continue the stream: 64 + 36 + 28 bytes equal one fill of 128.
  ChaCha20Stream whole(Key32{}), parts(Key32{});
  std::vector<uint8_t> a(128), b(128);
  whole.Fill(a);
  parts.Fill(std::span(b).subspan(0, 64));
  parts.Fill(std::span(b).subspan(64, 36));
  parts.Fill(std::span(b).subspan(100));
  EXPECT_EQ(a, b);
  // Another nonce, another stream.
  ChaCha20Stream other(Key32{}, 1);
  std::vector<uint8_t> c(64);
  other.Fill(c);
  EXPECT_NE(c, out);
}

TEST(AeadTest, SealedMessagesOpenOnlyUnchangedAndInTheirContext) {
  Key32 key;
  ASSERT_TRUE(SecureRandomBytes(key).ok());
  const std::vector<uint8_t> msg = Bytes("share of edge-3 for edge-7");
  std::vector<uint8_t> sealed = *AeadSeal(key, "round 4: edge-3 -> edge-7", msg);
  EXPECT_EQ(sealed.size(), msg.size() + kAeadOverheadBytes);
  EXPECT_EQ(*AeadOpen(key, "round 4: edge-3 -> edge-7", sealed), msg);
  // Two seals of one message differ (random nonces).
  EXPECT_NE(*AeadSeal(key, "ctx", msg), *AeadSeal(key, "ctx", msg));
  EXPECT_EQ(AeadOpen(key, "round 5: edge-3 -> edge-7", sealed).status().code(),
            StatusCode::kPermissionDenied);
  for (size_t i = 0; i < sealed.size(); ++i) {
    std::vector<uint8_t> changed = sealed;
    changed[i] ^= 0x10;
    ASSERT_EQ(AeadOpen(key, "round 4: edge-3 -> edge-7", changed).status().code(),
              StatusCode::kPermissionDenied)
        << "byte " << i;
  }
  Key32 other = key;
  other[0] ^= 1;
  EXPECT_FALSE(AeadOpen(other, "round 4: edge-3 -> edge-7", sealed).ok());
  EXPECT_EQ(AeadOpen(key, "", std::vector<uint8_t>(27)).status().code(),
            StatusCode::kInvalidArgument);
}

TEST(SigningTest, ASignatureVerifiesAgainstTheCaAndNamesItsSigner) {
  const PemPair ca = *MakeCaCertificate("Test CA");
  const PemPair edge = *MakeClientCertificate(ca, "edge-1");
  const SigningKey key = *SigningKey::FromPem(edge.key_pem);
  const CertificateVerifier verifier = *CertificateVerifier::FromPem(ca.cert_pem);
  const std::vector<uint8_t> msg = Bytes("keys of edge-1 for round 3");
  const std::vector<uint8_t> sig = *key.Sign(msg);
  Result<std::string> id = verifier.VerifySignature(edge.cert_pem, msg, sig);
  ASSERT_TRUE(id.ok()) << id.status();
  EXPECT_EQ(*id, "edge-1");

  // A changed message, or another client's certificate, does not verify.
  std::vector<uint8_t> changed = msg;
  changed.back() ^= 1;
  Result<std::string> bad = verifier.VerifySignature(edge.cert_pem, changed, sig);
  ASSERT_EQ(bad.status().code(), StatusCode::kPermissionDenied);
  EXPECT_NE(bad.status().message().find("'edge-1' does not verify"), std::string::npos)
      << bad.status();
  const PemPair other = *MakeClientCertificate(ca, "edge-2");
  EXPECT_EQ(verifier.VerifySignature(other.cert_pem, msg, sig).status().code(),
            StatusCode::kPermissionDenied);

  // A certificate of another CA (a coordinator minting its own) does not verify.
  const PemPair rogue_ca = *MakeCaCertificate("Rogue CA");
  const PemPair rogue = *MakeClientCertificate(rogue_ca, "edge-1");
  const std::vector<uint8_t> rogue_sig = *SigningKey::FromPem(rogue.key_pem)->Sign(msg);
  Result<std::string> r = verifier.VerifySignature(rogue.cert_pem, msg, rogue_sig);
  ASSERT_EQ(r.status().code(), StatusCode::kPermissionDenied);
  EXPECT_NE(r.status().message().find("does not verify against the CA"), std::string::npos)
      << r.status();
}

}  // namespace
}  // namespace tributary
