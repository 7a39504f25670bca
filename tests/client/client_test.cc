// tributary::Client, the public C++ API, against a fake coordinator over real mutual TLS.
#include "tributary/client.h"

#include <gtest/gtest.h>

#include <future>

#include "client/client_state.h"
#include "compression/codec.h"
#include "tests/client/fake_trainer.h"
#include "tests/client/tls_fixture.h"

namespace tributary {
namespace {

using namespace tributary::testing;
using namespace std::chrono_literals;

ClientOptions OptionsFor(const TlsCoordinatorFixture::Files& f, const std::string& address) {
  ClientOptions o;
  o.coordinator = address;
  o.ca_cert_file = f.ca;
  o.cert_file = f.cert;
  o.key_file = f.key;
  o.backoff.initial_delay = 5ms;
  o.backoff.max_delay = 20ms;
  o.connect_timeout = 5s;
  return o;
}

TaskAssignment Task(uint64_t round) {
  ModelWeights g = FakeTrainer::Layout();
  for (size_t i = 0; i < g.size(); ++i) g.data()[i] = 1.0f + static_cast<float>(i);
  TaskAssignment t;
  t.round = round;
  t.model_version = round - 1;
  t.fit.epochs = 3;
  t.fit.lr = 0.5f;
  t.codec.spec = "dense";
  t.model.layout_fingerprint = g.fingerprint();
  t.model.values.mutable_values().assign(g.data().begin(), g.data().end());
  return t;
}

TEST(ClientTest, ServesATlsCoordinatorUntilGoodbye) {
  TlsCoordinatorFixture fx;
  const auto files = fx.ClientFiles("edge-42");
  ClientOptions o = OptionsFor(files, fx.address());
  o.state_dir = fx.dir().file("state");
  o.num_examples = 300;
  auto client = Client::Create(o, std::make_shared<FakeTrainer>());
  ASSERT_TRUE(client.ok()) << client.status();
  auto run = std::async(std::launch::async, [&] { return (*client)->run(); });

  auto session = fx.coordinator().WaitSession(0);
  ASSERT_TRUE(session);
  EXPECT_EQ(session->peer_id(), "edge-42");  // from the certificate
  ASSERT_TRUE(session->hello());
  EXPECT_EQ(session->hello()->capabilities.num_examples, 300u);

  const TaskAssignment task = Task(2);
  session->Send(task);
  std::optional<UpdateSubmission> up = session->Next<UpdateSubmission>();
  ASSERT_TRUE(up);
  EXPECT_EQ(up->round, 2u);
  EXPECT_EQ(up->num_examples, 300u);
  auto codec = MakeCodec("dense");
  std::vector<float> delta(up->update.num_floats);
  ASSERT_TRUE((*codec)->Validate(up->update.bytes, delta.size()).ok());
  BufferSink sink(delta);
  (*codec)->DecodeInto(up->update.bytes, sink, 1.0f);
  for (size_t i = 0; i < delta.size(); ++i) {
    const float g = task.model.values[i];
    EXPECT_EQ(delta[i], (g + 0.5f * static_cast<float>(i + 1)) - g);
  }
  EXPECT_EQ((*client)->client_id(), "edge-42");

  session->Send(Goodbye{"finished"});
  ASSERT_EQ(run.wait_for(20s), std::future_status::ready);
  EXPECT_TRUE(run.get().ok());
  client->reset();

  auto state = ClientState::Open(o.state_dir);
  ASSERT_TRUE(state.ok()) << state.status();
  EXPECT_EQ((*state)->data().client_id, "edge-42");
  EXPECT_EQ((*state)->data().last_round, 2u);
}

TEST(ClientTest, StopFromAnotherThreadEndsRun) {
  TlsCoordinatorFixture fx;
  auto client = Client::Create(OptionsFor(fx.ClientFiles("edge-1"), fx.address()),
                               std::make_shared<FakeTrainer>());
  ASSERT_TRUE(client.ok()) << client.status();
  ASSERT_TRUE((*client)->start().ok());
  EXPECT_EQ((*client)->start().code(), StatusCode::kFailedPrecondition);
  auto session = fx.coordinator().WaitSession(0);
  ASSERT_TRUE(session);
  session->Send(Task(1));  // once answered, the client has its Welcome and says Goodbye on stop
  ASSERT_TRUE(session->Next<UpdateSubmission>());
  std::thread stopper([&] { (*client)->stop(); });
  EXPECT_EQ((*client)->wait().code(), StatusCode::kAborted);
  stopper.join();
  EXPECT_TRUE(session->Next<Goodbye>());
}

TEST(ClientTest, ACertificateFromAnotherCaIsRefusedAndTheClientGivesUp) {
  TlsCoordinatorFixture fx;
  Result<PemPair> rogue_ca = MakeCaCertificate("Rogue CA");
  ASSERT_TRUE(rogue_ca.ok());
  ClientOptions o = OptionsFor(fx.ClientFiles("edge-9", &*rogue_ca), fx.address());
  o.backoff.max_attempts = 2;
  auto client = Client::Create(o, std::make_shared<FakeTrainer>());
  ASSERT_TRUE(client.ok()) << client.status();
  const Status s = (*client)->run();
  EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s;
  EXPECT_NE(s.message().find("2 consecutive failed attempts"), std::string::npos) << s;
  EXPECT_TRUE((*client)->client_id().empty());
}

TEST(ClientTest, CreateNamesWhatIsWrong) {
  TlsCoordinatorFixture fx;
  const auto files = fx.ClientFiles("edge-3");
  auto trainer = std::make_shared<FakeTrainer>();
  auto error_of = [&](ClientOptions o, std::shared_ptr<Trainer> t) {
    auto c = Client::Create(std::move(o), std::move(t));
    EXPECT_FALSE(c.ok());
    return c.ok() ? std::string() : c.status().ToString();
  };
  ClientOptions o = OptionsFor(files, fx.address());
  EXPECT_NE(error_of(o, nullptr).find("trainer is null"), std::string::npos);
  o.coordinator.clear();
  EXPECT_NE(error_of(o, trainer).find("coordinator"), std::string::npos);
  o = OptionsFor(files, fx.address());
  o.key_file = fx.dir().file("nope.key");
  EXPECT_NE(error_of(o, trainer).find(o.key_file), std::string::npos);
  o = OptionsFor(files, fx.address());
  o.cert_file.clear();
  EXPECT_NE(error_of(o, trainer).find("cert_file"), std::string::npos);
  o = OptionsFor(files, fx.address());
  o.server_name = "coord.example.org";
  EXPECT_NE(error_of(o, trainer).find("server_name 'coord.example.org'"), std::string::npos);
  o = OptionsFor(files, fx.address());
  o.backoff.multiplier = 0.5;
  EXPECT_NE(error_of(o, trainer).find("backoff.multiplier"), std::string::npos);
  // Two clients cannot share a state dir.
  o = OptionsFor(files, fx.address());
  o.state_dir = fx.dir().file("shared-state");
  auto first = Client::Create(o, trainer);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_NE(error_of(o, trainer).find("in use by another client"), std::string::npos);
  // A client that never started can be stopped, waited on and destroyed.
  EXPECT_EQ((*first)->wait().code(), StatusCode::kFailedPrecondition);
  (*first)->stop();
  EXPECT_EQ((*first)->wait().code(), StatusCode::kAborted);
}

}  // namespace
}  // namespace tributary
