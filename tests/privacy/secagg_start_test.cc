// The start message of secure aggregation, the one mapping between it and the session
// (privacy/secagg/secagg_start.h): every parameter the two sides derive k and t from survives the
// round trip through the wire's bytes, so a client sizes its neighbourhood as the coordinator did.
#include "privacy/secagg/secagg_start.h"

#include <gtest/gtest.h>

#include "privacy/secagg/neighbour_graph.h"
#include "protocol/message_codec.h"

namespace tributary {
namespace {

SecAggStart Start(double max_dropout) {
  SecAggStart s;
  s.domain.clip = 0.5f;
  s.domain.quant_bits = 12;
  s.domain.max_weight = 4096;
  s.domain.max_clients = 100;
  s.session.run_id = "run-7f";
  s.session.round = 9;
  s.session.vector_length = 4097;
  s.session.modulus_mask = IntDomain::Create(s.domain)->modulus_mask();
  s.session.degree = 0;  // sized for max_dropout
  s.session.threshold = 0;
  s.session.max_dropout = max_dropout;
  s.session.min_clients = 5;
  s.dp = DpOnClients{0.75, 0.125, 77};
  return s;
}

// What a client receives: the message encoded to bytes and decoded back.
Result<SecAggStart> ThroughTheWire(const SecAggStart& start) {
  TRIB_ASSIGN_OR_RETURN(SecAggStartMsg msg, ToWire(start));
  TRIB_ASSIGN_OR_RETURN(std::vector<uint8_t> body, EncodeMessageBody(Message{msg}));
  TRIB_ASSIGN_OR_RETURN(Message back, DecodeMessageBody(MessageType::kSecAggStart, body));
  return FromWire(std::get<SecAggStartMsg>(back));
}

TEST(SecAggStartTest, EverySessionParameterSurvivesTheWire) {
  for (double max_dropout : {0.0, 0.1, 0.2, 0.3, 0.49}) {
    SCOPED_TRACE(max_dropout);
    const SecAggStart sent = Start(max_dropout);
    Result<SecAggStart> got = ThroughTheWire(sent);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(got->session, sent.session);
    EXPECT_EQ(got->session.max_dropout, max_dropout);
    EXPECT_EQ(got->domain, sent.domain);
    EXPECT_EQ(got->dp, sent.dp);
  }
}

// Issue #27, item 9: with secagg.degree = 0 and max_dropout = 0.2 at n = 100 the coordinator
// derived k = 34 and the clients, rebuilding the session with the default 0.1, k = 16.
TEST(SecAggStartTest, TheClientsDeriveTheCoordinatorsDegreeAtAnyMaxDropout) {
  const SecAggStart sent = Start(0.2);
  Result<SecAggStart> got = ThroughTheWire(sent);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(sent.session.DegreeFor(100), 34u);
  EXPECT_EQ(got->session.DegreeFor(100), 34u);
  EXPECT_EQ(got->session.ThresholdFor(100), sent.session.ThresholdFor(100));
  EXPECT_EQ(NeighbourGraph::DefaultDegree(100, 0.1), 16u);  // what the clients used to derive
  for (size_t n : {3u, 10u, 50u, 100u, 1000u})
    for (double d : {0.0, 0.1, 0.2, 0.4}) {
      Result<SecAggStart> g = ThroughTheWire(Start(d));
      ASSERT_TRUE(g.ok()) << g.status();
      EXPECT_EQ(g->session.DegreeFor(n), Start(d).session.DegreeFor(n)) << n << " " << d;
    }
}

TEST(SecAggStartTest, AStartMessageOutOfRangeIsRefusedNamingTheField) {
  SecAggStartMsg msg = *ToWire(Start(0.2));
  SecAggStartMsg bad = msg;
  bad.max_dropout = 0.5;
  Result<SecAggStart> r = FromWire(bad);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("max_dropout 0.5"), std::string::npos) << r.status();
  bad = msg;
  bad.max_dropout = -0.1;
  EXPECT_FALSE(FromWire(bad).ok());
  bad = msg;
  bad.sum_bits += 1;
  r = FromWire(bad);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("bits"), std::string::npos) << r.status();
  bad = msg;
  bad.vector_length = 0;
  EXPECT_FALSE(FromWire(bad).ok());
  bad = msg;
  bad.dp_noise_stddev = -1.0;
  EXPECT_FALSE(FromWire(bad).ok());
  // The coordinator's side refuses a session whose modulus is not the domain's.
  SecAggStart wrong = Start(0.2);
  wrong.session.modulus_mask >>= 1;
  EXPECT_FALSE(ToWire(wrong).ok());
}

}  // namespace
}  // namespace tributary
