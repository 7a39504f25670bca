// Secure aggregation through its wire messages: bit packing, the checks FromWire adds, and a whole
// round whose every message is encoded to bytes and decoded back on the way.
#include "privacy/secagg/secagg_wire.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <random>

#include "crypto/cert_authority.h"
#include "crypto/signing.h"
#include "privacy/secagg/secagg_client.h"
#include "privacy/secagg/secagg_server.h"
#include "protocol/message_codec.h"

namespace tributary {
namespace {

TEST(SecAggWireTest, PackedValuesRoundTripAtEveryWidth) {
  std::mt19937_64 rng(4);
  for (int bits = 1; bits <= 64; ++bits) {
    const uint64_t mask = bits == 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
    for (size_t n : {0u, 1u, 7u, 8u, 9u, 1000u}) {
      std::vector<uint64_t> v(n);
      for (uint64_t& x : v) x = rng() & mask;
      const std::vector<uint8_t> packed = PackBits(v, bits);
      ASSERT_EQ(packed.size(), (n * bits + 7) / 8);
      Result<std::vector<uint64_t>> back = UnpackBits(packed, n, bits);
      ASSERT_TRUE(back.ok()) << back.status();
      ASSERT_EQ(*back, v) << bits << " bits, " << n << " values";
    }
  }
}

TEST(SecAggWireTest, PackedInputsOfTheWrongSizeOrPaddingAreRefused) {
  const std::vector<uint8_t> packed = PackBits(std::vector<uint64_t>{5, 6, 7}, 31);
  ASSERT_EQ(packed.size(), 12u);  // 93 bits
  Result<std::vector<uint64_t>> short_input = UnpackBits(std::span(packed).first(11), 3, 31);
  ASSERT_FALSE(short_input.ok());
  EXPECT_NE(short_input.status().message().find("3 values of 31 bits has 11 bytes, not 12"),
            std::string::npos)
      << short_input.status();
  std::vector<uint8_t> dirty = packed;
  dirty.back() |= 0x80;  // a padding bit
  Result<std::vector<uint64_t>> r = UnpackBits(dirty, 3, 31);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("padding"), std::string::npos) << r.status();
  EXPECT_FALSE(UnpackBits(packed, 3, 0).ok());
  EXPECT_FALSE(UnpackBits(packed, 3, 65).ok());
}

template <class M>
M ThroughBytes(const M& m) {
  const Message msg = m;
  Result<std::vector<uint8_t>> body = EncodeMessageBody(msg);
  EXPECT_TRUE(body.ok()) << body.status();
  Result<Message> back = DecodeMessageBody(TypeOf(msg), *body);
  EXPECT_TRUE(back.ok()) << back.status();
  return std::get<M>(*back);
}

TEST(SecAggWireTest, ARoundThroughEncodedMessagesSumsExactly) {
  const size_t n = 12;
  const int bits = 25;
  const PemPair ca = *MakeCaCertificate("Wire CA");
  const CertificateVerifier verifier = *CertificateVerifier::FromPem(ca.cert_pem);
  std::vector<std::string> ids;
  std::vector<PemPair> certs;
  std::vector<SigningKey> keys;
  for (size_t i = 0; i < n; ++i) {
    ids.push_back("edge-" + std::to_string(10 + i));
    certs.push_back(*MakeClientCertificate(ca, ids.back()));
    keys.push_back(*SigningKey::FromPem(certs.back().key_pem));
  }
  SecAggSession s;
  s.run_id = "wire";
  s.round = 5;
  s.vector_length = 40;
  s.modulus_mask = (uint64_t{1} << bits) - 1;
  s.degree = 6;  // sparse: most roster entries go without certificates
  std::vector<std::unique_ptr<SecAggClient>> c;
  SecAggServer server(s);
  for (size_t i = 0; i < n; ++i) {
    c.push_back(std::make_unique<SecAggClient>(s, ids[i], &keys[i], certs[i].cert_pem, &verifier));
    const SecAggKeysMsg m = ThroughBytes(ToWire(*c[i]->AdvertiseKeys(), s.round));
    ASSERT_TRUE(server.AddKeys(*FromWire(m)).ok());
  }
  const SecAggRoster roster = *server.CloseAdvertise();
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < roster.clients.size(); ++i) index[roster.clients[i].client_id] = i;
  for (size_t i = 0; i < n; ++i) {
    const size_t at = index[ids[i]];
    const SecAggRosterMsg m = ThroughBytes(RosterFor(roster, server.graph(), at, s.round));
    size_t with_certs = 0;
    for (const SecAggKeysMsg& k : m.clients) with_certs += !k.cert_pem.empty();
    EXPECT_EQ(with_certs, 7u);  // its 6 neighbours and itself
    Result<SecAggShares> shares = c[i]->ShareKeys(*FromWire(m));
    ASSERT_TRUE(shares.ok()) << shares.status();
    const SecAggSharesMsg wire = ThroughBytes(ToWire(*shares, s.round));
    ASSERT_TRUE(server.AddShares(*FromWire(wire, ids[i])).ok());
    // A share that claims another sender is refused at the boundary.
    EXPECT_FALSE(FromWire(wire, "edge-99").ok());
  }
  auto inboxes = *server.CloseShares();
  std::mt19937_64 rng(8);
  std::vector<uint64_t> expected(s.vector_length, 0);
  for (size_t i = 0; i < n; ++i) {
    if (i == 2) continue;  // drops before its masked input
    std::vector<uint64_t> x(s.vector_length);
    for (uint64_t& v : x) v = rng() & s.modulus_mask;
    for (size_t j = 0; j < x.size(); ++j) expected[j] = (expected[j] + x[j]) & s.modulus_mask;
    const SecAggInboxMsg inbox = ThroughBytes(ToWire(inboxes[ids[i]], s.round));
    Result<SecAggMaskedInput> y = c[i]->MaskInput(FromWire(inbox), x);
    ASSERT_TRUE(y.ok()) << y.status();
    const SecAggMaskedInputMsg wire = ThroughBytes(ToWire(*y, s.round, bits));
    EXPECT_EQ(wire.packed.size(), (s.vector_length * bits + 7) / 8);
    EXPECT_FALSE(FromWire(wire, ids[i], bits + 1).ok());
    ASSERT_TRUE(server.AddMaskedInput(*FromWire(wire, ids[i], bits)).ok());
  }
  const SecAggUnmaskRequestMsg request = ThroughBytes(ToWire(*server.CloseMaskedInput(), s.round));
  for (size_t i = 0; i < n; ++i) {
    if (i == 2) continue;
    Result<SecAggUnmaskResponse> r = c[i]->Unmask(FromWire(request));
    ASSERT_TRUE(r.ok()) << r.status();
    const SecAggUnmaskResponseMsg wire = ThroughBytes(ToWire(*r, s.round));
    ASSERT_TRUE(server.AddUnmaskResponse(*FromWire(wire, ids[i])).ok());
  }
  Result<std::vector<uint64_t>> sum = server.Finish();
  ASSERT_TRUE(sum.ok()) << sum.status();
  EXPECT_EQ(*sum, expected);
}

TEST(SecAggWireTest, KeysOfTheWrongLengthAndUnknownShareKindsAreRefused) {
  SecAggKeysMsg k{1, "edge-1", std::vector<uint8_t>(31, 1), std::vector<uint8_t>(32, 2), "", {}};
  Result<SecAggKeys> bad = FromWire(k);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("enc_public of 'edge-1' has 31 bytes"), std::string::npos)
      << bad.status();
  SecAggUnmaskResponseMsg r{1, {{"edge-2", 3, 1, {1, 2, 3, 4, 5}}}};
  EXPECT_FALSE(FromWire(r, "edge-1").ok());
}

}  // namespace
}  // namespace tributary
