// ClientRuntime over InMemoryTransport against a fake coordinator: the handshake, fit and
// evaluate answers (checked value by value), the errors a client sends back and carries on after,
// heartbeats, reconnecting, and each way a run ends.
#include "client/client_runtime.h"

#include <gtest/gtest.h>

#include <stdexcept>

#include <algorithm>
#include <atomic>
#include <future>
#include <mutex>
#include <stop_token>
#include <thread>

#include "client/backoff.h"
#include "client/secagg_task.h"
#include "compression/codec.h"
#include "core/manual_clock.h"
#include "crypto/cert_authority.h"
#include "privacy/secagg/secagg_client.h"
#include "privacy/secagg/secagg_server.h"
#include "privacy/secagg/secagg_start.h"
#include "privacy/secagg/secagg_wire.h"
#include "protocol/in_memory_transport.h"
#include "tests/client/fake_coordinator.h"
#include "tests/client/fake_trainer.h"
#include "tests/client/temp_dir.h"
#include "tests/client/test_secagg_identity.h"
#include "tests/protocol/transport_test_util.h"

namespace tributary {
namespace {

using namespace tributary::testing;
using namespace std::chrono_literals;

ModelWeights GlobalModel() {
  ModelWeights g = FakeTrainer::Layout();
  for (size_t i = 0; i < g.size(); ++i) g.data()[i] = 0.1f * static_cast<float>(i) - 0.3f;
  return g;
}

TaskAssignment MakeTask(uint64_t round, const std::string& codec = "dense") {
  const ModelWeights g = GlobalModel();
  TaskAssignment t;
  t.round = round;
  t.model_version = round - 1;
  t.fit.epochs = 2;
  t.fit.lr = 0.25f;
  t.fit.seed = 1000 + round;
  t.codec.spec = codec;
  t.deadline_ms = 60'000;
  t.model.layout_fingerprint = g.fingerprint();
  t.model.values.mutable_values().assign(g.data().begin(), g.data().end());
  return t;
}

std::vector<float> DecodeDense(const EncodedUpdate& u) {
  auto codec = MakeCodec(u.codec);
  EXPECT_TRUE(codec.ok());
  std::vector<float> out(u.num_floats, 0.0f);
  EXPECT_TRUE((*codec)->Validate(u.bytes, u.num_floats).ok());
  BufferSink sink(out);
  (*codec)->DecodeInto(u.bytes, sink, 1.0f);
  return out;
}

class ClientRuntimeTest : public ::testing::Test {
 protected:
  ClientRuntimeTest() {
    server_ = std::move(*InMemoryTransport::Create(io_.io(), network_, {{}, "", 1 << 20}));
    client_transport_ =
        std::move(*InMemoryTransport::Create(io_.io(), network_, {{}, "edge-7", 1 << 20}));
  }
  ~ClientRuntimeTest() override {
    runtime_.reset();
    coordinator_.reset();
    io_.Stop();
  }

  void StartCoordinator(FakeCoordinatorOptions o = {}) {
    coordinator_ = FakeCoordinator::Start(*server_, "coord", o);
  }

  ClientRuntimeOptions Options() {
    ClientRuntimeOptions o;
    o.address = "coord";
    o.device = "cpu-test";
    o.num_examples = 321;
    o.backoff.initial_delay = 1ms;
    o.backoff.max_delay = 4ms;
    o.backoff.seed = 5;
    return o;
  }

  void StartRuntime(ClientRuntimeOptions o, std::unique_ptr<ClientState> state = nullptr) {
    auto rt = ClientRuntime::Create(io_.io(), *client_transport_, trainer_, std::move(o),
                                    std::move(state));
    ASSERT_TRUE(rt.ok()) << rt.status();
    runtime_ = std::move(*rt);
    ASSERT_TRUE(runtime_->Start().ok());
  }

  // The first n reconnect delays of a runtime with `backoff` that nobody answers, on a clock of its
  // own.
  std::vector<std::chrono::milliseconds> ReconnectDelays(const BackoffOptions& backoff, int n) {
    ManualClock clock;
    ClientRuntimeOptions o = Options();
    o.address = "nobody-listens";
    o.clock = &clock;
    o.backoff = backoff;
    auto rt = ClientRuntime::Create(io_.io(), *client_transport_, trainer_, o);
    EXPECT_TRUE(rt.ok()) << rt.status();
    if (!rt.ok() || !(*rt)->Start().ok()) return {};
    std::vector<std::chrono::milliseconds> delays;
    for (int i = 0; i < n && clock.WaitForTimers(1); ++i) {
      delays.push_back(std::chrono::duration_cast<std::chrono::milliseconds>(
          clock.ArmedTimers()[0] - clock.Now()));
      clock.AdvanceToNextTimer();
    }
    (*rt)->Stop();
    (void)(*rt)->Wait();
    return delays;
  }

  // Until a timer is armed to fire `d` after the clock's present time. The runtime's one timer
  // first bounds the wait for the Welcome (due welcome_timeout later) and is re-armed for the
  // heartbeats only after sessions() counts the Welcome, and again after each heartbeat is sent;
  // advancing the clock before that re-arm would leave the next heartbeat due a step later.
  bool WaitForTimerDueIn(Duration d) {
    for (int i = 0; i < 20'000; ++i) {
      const auto armed = clock_.ArmedTimers();
      if (std::find(armed.begin(), armed.end(), clock_.Now() + d) != armed.end()) return true;
      std::this_thread::sleep_for(1ms);
    }
    return false;
  }

  // Until the runtime has taken its Welcome (before it, its one timer bounds the wait for it).
  void WaitWelcomed(int64_t sessions = 1) {
    for (int i = 0; i < 2000 && runtime_->sessions() < sessions; ++i)
      std::this_thread::sleep_for(1ms);
    ASSERT_EQ(runtime_->sessions(), sessions);
  }

  IoThreads io_{2};
  ManualClock clock_;  // after io_: releases its armed callbacks while io_ still exists
  std::shared_ptr<InMemoryNetwork> network_ = std::make_shared<InMemoryNetwork>();
  std::unique_ptr<InMemoryTransport> server_, client_transport_;
  std::shared_ptr<FakeTrainer> trainer_ = std::make_shared<FakeTrainer>();
  std::unique_ptr<FakeCoordinator> coordinator_;
  std::unique_ptr<ClientRuntime> runtime_;
};

TEST_F(ClientRuntimeTest, HelloCarriesCapabilitiesAndWelcomeSetsTheId) {
  StartCoordinator();
  StartRuntime(Options());
  auto session = coordinator_->WaitSession(0);
  ASSERT_TRUE(session);
  std::optional<Hello> hello = session->hello();
  ASSERT_TRUE(hello);
  EXPECT_EQ(hello->protocol_version, kProtocolVersion);
  EXPECT_EQ(hello->capabilities.device, "cpu-test");
  EXPECT_EQ(hello->capabilities.num_examples, 321u);
  EXPECT_EQ(hello->capabilities.codecs, SupportedCodecs());
  // The trainer's layout, declared up front: the tensor list and its fingerprint.
  const ModelWeights layout = FakeTrainer::Layout();
  EXPECT_EQ(hello->capabilities.layout, LayoutOf(layout));
  ASSERT_EQ(hello->capabilities.layout.size(), layout.num_tensors());
  EXPECT_EQ(hello->capabilities.layout[0].dtype, "F32");
  EXPECT_EQ(hello->capabilities.layout_fingerprint, layout.fingerprint());
  EXPECT_NE(hello->software_version.find("tributary-client/"), std::string::npos);
  EXPECT_EQ(session->peer_id(), "edge-7");

  // The Welcome has arrived once a task is answered.
  session->Send(MakeTask(1));
  ASSERT_TRUE(session->Next<UpdateSubmission>());
  EXPECT_EQ(runtime_->client_id(), "edge-7");
  EXPECT_EQ(runtime_->sessions(), 1);
}

TEST_F(ClientRuntimeTest, TaskIsAnsweredWithTheEncodedDeltaAndExampleCount) {
  StartCoordinator();
  StartRuntime(Options());
  auto session = coordinator_->WaitSession(0);
  ASSERT_TRUE(session);
  const TaskAssignment task = MakeTask(3);
  session->Send(task);
  std::optional<UpdateSubmission> up = session->Next<UpdateSubmission>();
  ASSERT_TRUE(up);
  EXPECT_EQ(up->round, 3u);
  EXPECT_EQ(up->model_version, 2u);
  EXPECT_EQ(up->num_examples, 200u);  // 100 * epochs
  EXPECT_EQ(up->update.codec, "dense");
  EXPECT_EQ(up->update.layout_fingerprint, FakeTrainer::Layout().fingerprint());
  ASSERT_EQ(up->update.num_floats, 9u);
  EXPECT_EQ(up->update.bytes.size(), 9u * sizeof(float));
  const std::vector<float> delta = DecodeDense(up->update);
  for (size_t i = 0; i < 9; ++i) {
    const float g = task.model.values[i];
    const float expected = (g + 0.25f * static_cast<float>(i + 1)) - g;
    EXPECT_EQ(delta[i], expected) << "index " << i;
  }
  EXPECT_DOUBLE_EQ(up->metrics.at("train_loss"), 0.5);
  EXPECT_DOUBLE_EQ(up->metrics.at("train_accuracy"), 0.5);
  EXPECT_GE(up->metrics.at("fit_seconds"), 0.0);
  EXPECT_EQ(trainer_->last_seed.load(), 1003u);
}

TEST_F(ClientRuntimeTest, EvaluateTaskIsAnswered) {
  StartCoordinator();
  StartRuntime(Options());
  auto session = coordinator_->WaitSession(0);
  ASSERT_TRUE(session);
  const ModelWeights g = GlobalModel();
  EvaluateTask task;
  task.round = 4;
  task.model_version = 4;
  task.model.layout_fingerprint = g.fingerprint();
  task.model.values.mutable_values().assign(g.data().begin(), g.data().end());
  session->Send(task);
  std::optional<EvaluateResult> r = session->Next<EvaluateResult>();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->round, 4u);
  EXPECT_EQ(r->model_version, 4u);
  EXPECT_EQ(r->num_examples, 40u);
  double sum = 0.0;
  for (float v : g.data()) sum += v;
  EXPECT_DOUBLE_EQ(r->loss, sum);
  EXPECT_DOUBLE_EQ(r->accuracy, 0.75);
}

// A task the client cannot do is answered with TaskFailed (protocol version 12), naming the task
// (its round and task id) and why, so that the coordinator stops waiting for it.
TEST_F(ClientRuntimeTest, MismatchedFingerprintFailsTheTaskAndTheClientCarriesOn) {
  StartCoordinator();
  StartRuntime(Options());
  auto session = coordinator_->WaitSession(0);
  ASSERT_TRUE(session);
  TaskAssignment bad = MakeTask(1);
  bad.task_id = 7;
  bad.model.layout_fingerprint ^= 1;
  session->Send(bad);
  std::optional<TaskFailed> e = session->Next<TaskFailed>();
  ASSERT_TRUE(e);
  EXPECT_EQ(e->round, 1u);
  EXPECT_EQ(e->task_id, 7u);
  EXPECT_TRUE(e->fit());
  EXPECT_EQ(e->code, static_cast<uint32_t>(ErrorCode::kProtocolViolation));
  EXPECT_NE(e->reason.find("layout fingerprint"), std::string::npos) << e->reason;

  TaskAssignment short_model = MakeTask(2);
  short_model.model.values.mutable_values().pop_back();
  session->Send(short_model);
  e = session->Next<TaskFailed>();
  ASSERT_TRUE(e);
  EXPECT_EQ(e->round, 2u);
  EXPECT_NE(e->reason.find("8 floats"), std::string::npos) << e->reason;
  EXPECT_EQ(trainer_->fit_calls.load(), 0);

  session->Send(MakeTask(3));
  std::optional<UpdateSubmission> up = session->Next<UpdateSubmission>();
  ASSERT_TRUE(up);
  EXPECT_EQ(up->round, 3u);
}

// docs/embedding.md: fit() that fails or throws gets the coordinator a TaskFailed and the client
// carries on. A C++ trainer's exception used to vanish into the worker's packaged_task: no Error,
// no log line, and every round the coordinator waited for the deadline. The app's on_task callback
// throwing must not cost the update either (it ran before the answer was sent).
TEST_F(ClientRuntimeTest, AThrowingTrainerOrCallbackIsAnsweredAndTheClientCarriesOn) {
  StartCoordinator();
  std::atomic<int> reports{0};
  ClientRuntimeOptions o = Options();
  o.on_task = [&](const TaskReport&) {
    ++reports;
    throw std::runtime_error("the app's progress printer has a bug");
  };
  trainer_->during_fit = [] { throw std::runtime_error("out of GPU memory"); };
  StartRuntime(o);
  auto session = coordinator_->WaitSession(0);
  ASSERT_TRUE(session);
  session->Send(MakeTask(1));
  std::optional<TaskFailed> e = session->Next<TaskFailed>();
  ASSERT_TRUE(e);
  EXPECT_EQ(e->round, 1u);
  EXPECT_EQ(e->code, static_cast<uint32_t>(ErrorCode::kInternal));
  EXPECT_NE(e->reason.find("trainer.fit failed"), std::string::npos) << e->reason;
  EXPECT_NE(e->reason.find("it threw: out of GPU memory"), std::string::npos) << e->reason;

  trainer_->during_fit = nullptr;
  session->Send(MakeTask(2));
  std::optional<UpdateSubmission> up = session->Next<UpdateSubmission>();
  ASSERT_TRUE(up);
  EXPECT_EQ(up->round, 2u);
  EXPECT_EQ(trainer_->fit_calls.load(), 2);
  for (int i = 0; i < 200 && reports.load() < 2; ++i) std::this_thread::sleep_for(5ms);
  EXPECT_EQ(reports.load(), 2);  // both tasks were reported, though the callback threw each time
}

// wait() from inside a Trainer call would block until the end of a run that waits for that call:
// it is refused, naming why, and the fit goes on to send its update.
TEST_F(ClientRuntimeTest, WaitFromInsideFitIsRefusedInsteadOfBlocking) {
  StartCoordinator();
  std::optional<Status> waited;
  trainer_->during_fit = [&] { waited = runtime_->Wait(); };
  StartRuntime(Options());
  auto session = coordinator_->WaitSession(0);
  ASSERT_TRUE(session);
  session->Send(MakeTask(1));
  std::optional<UpdateSubmission> up = session->Next<UpdateSubmission>();
  ASSERT_TRUE(up);
  ASSERT_TRUE(waited.has_value());
  EXPECT_EQ(waited->code(), StatusCode::kFailedPrecondition) << *waited;
  EXPECT_NE(waited->message().find("from inside a Trainer call"), std::string::npos) << *waited;
}

TEST_F(ClientRuntimeTest, UnknownCodecFailsTheTaskNamingIt) {
  StartCoordinator();
  StartRuntime(Options());
  auto session = coordinator_->WaitSession(0);
  ASSERT_TRUE(session);
  session->Send(MakeTask(1, "nosuchcodec(3)"));
  std::optional<TaskFailed> e = session->Next<TaskFailed>();
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code, static_cast<uint32_t>(ErrorCode::kProtocolViolation));
  EXPECT_NE(e->reason.find("'nosuchcodec(3)'"), std::string::npos) << e->reason;
  EXPECT_EQ(trainer_->fit_calls.load(), 0);
}

// Secure aggregation's masking can wait for the inbox of shares after the fit is done. Plays such
// a round against the runtime (edge-7, keeping its state in `state_dir`): the server is a real
// SecAggServer and the two neighbours real SecAggClients; edge-7's task goes first, and once
// on_task has reported the fit, its inbox (with `withhold`, without edge-8's share) follows.
// Returns the session, or null after a failed assertion.
class ClientRuntimeMaskingTest : public ClientRuntimeTest {
 protected:
  static constexpr uint64_t kRound = 3;
  std::shared_ptr<FakeSession> PlayMaskingAfterTheFit(bool withhold, const std::string& state_dir);
};

std::shared_ptr<FakeSession> ClientRuntimeMaskingTest::PlayMaskingAfterTheFit(
    bool withhold, const std::string& state_dir) {
  const PemPair ca = *MakeCaCertificate("Runtime SecAgg CA");
  std::shared_ptr<const SecAggIdentity> identity = MakeSecAggIdentity(ca, "edge-7");
  const CertificateVerifier* verifier = identity->ca.get();
  auto state = ClientState::Open(state_dir);
  EXPECT_TRUE(state.ok()) << state.status();
  if (!state.ok()) return nullptr;
  StartCoordinator();
  auto fitted = std::make_shared<std::promise<void>>();
  ClientRuntimeOptions o = Options();
  o.secagg_identity = identity;
  o.on_task = [fitted](const TaskReport&) { fitted->set_value(); };
  StartRuntime(o, std::move(*state));
  auto session = coordinator_->WaitSession(0);
  EXPECT_TRUE(session);
  if (!session) return nullptr;

  // The round: edge-7 (the runtime) and two neighbours played here, 9 values and the weight.
  IntDomainConfig domain{4.0f, 16, 4096, 3};
  SecAggSession s;
  s.run_id = "run-r";
  s.round = kRound;
  s.vector_length = FakeTrainer::Layout().size() + 1;
  s.modulus_mask = IntDomain::Create(domain)->modulus_mask();
  Result<SecAggStartMsg> start = ToWire(SecAggStart{s, domain, {}});
  EXPECT_TRUE(start.ok()) << start.status();
  if (!start.ok()) return nullptr;
  session->Send(*start);
  SecAggServer server(s);
  std::optional<SecAggKeysMsg> keys = session->Next<SecAggKeysMsg>();
  EXPECT_TRUE(keys);
  if (!keys || !server.AddKeys(*FromWire(*keys)).ok()) return nullptr;
  std::map<std::string, std::unique_ptr<SigningKey>> peer_keys;
  std::map<std::string, std::unique_ptr<SecAggClient>> peers;
  for (const std::string id : {"edge-8", "edge-9"}) {
    const PemPair cert = *MakeClientCertificate(ca, id);
    peer_keys[id] = std::make_unique<SigningKey>(*SigningKey::FromPem(cert.key_pem));
    peers[id] = std::make_unique<SecAggClient>(s, id, peer_keys[id].get(), cert.cert_pem, verifier);
    EXPECT_TRUE(server.AddKeys(*peers[id]->AdvertiseKeys()).ok());
  }
  Result<SecAggRoster> roster = server.CloseAdvertise();
  EXPECT_TRUE(roster.ok()) << roster.status();
  if (!roster.ok()) return nullptr;
  for (size_t i = 0; i < roster->clients.size(); ++i) {
    const std::string& id = roster->clients[i].client_id;
    SecAggRosterMsg mine = RosterFor(*roster, server.graph(), i, kRound);
    if (id == "edge-7") {
      session->Send(mine);
      continue;
    }
    Result<SecAggShares> shares = peers[id]->ShareKeys(*FromWire(mine));
    EXPECT_TRUE(shares.ok()) << shares.status();
    if (!shares.ok() || !server.AddShares(std::move(*shares)).ok()) return nullptr;
  }
  std::optional<SecAggSharesMsg> shares = session->Next<SecAggSharesMsg>();
  EXPECT_TRUE(shares);
  if (!shares || !server.AddShares(*FromWire(*shares, "edge-7")).ok()) return nullptr;
  Result<std::map<std::string, SecAggInbox>> inboxes = server.CloseShares();
  EXPECT_TRUE(inboxes.ok()) << inboxes.status();
  if (!inboxes.ok()) return nullptr;
  SecAggInbox inbox = inboxes->at("edge-7");
  EXPECT_EQ(inbox.shares.size(), 2u);
  if (withhold)
    std::erase_if(inbox.shares, [](const SecAggSealedShare& sh) { return sh.from == "edge-8"; });

  // The task first: its fit ends (on_task reports it) with nothing to mask with yet.
  TaskAssignment task = MakeTask(kRound);
  task.task_id = 41;
  session->Send(task);
  EXPECT_EQ(fitted->get_future().wait_for(20s), std::future_status::ready);
  session->Send(ToWire(inbox, kRound));
  return session;
}

// The state dir's record after the runtime has gone (it holds the lock on the dir).
ClientStateData StateAfter(std::unique_ptr<ClientRuntime>& runtime, const std::string& dir) {
  runtime.reset();
  auto reopened = ClientState::Open(dir);
  EXPECT_TRUE(reopened.ok()) << reopened.status();
  return reopened.ok() ? (*reopened)->data() : ClientStateData{};
}

// When the masking then fails (here a neighbour's share was withheld), the answer is still the
// task's TaskFailed, naming the task, so that the round counts the client as a dropout at once. It
// used to be a bare Error: the coordinator logged it and waited for the masked-input deadline,
// then cooled the client down as a silent one. The task is not counted complete in the state dir
// (it was, at the fit's end).
TEST_F(ClientRuntimeMaskingTest, AMaskingThatFailsAfterTheFitFailsTheTaskByItsId) {
  TempDir tmp;
  const std::string dir = tmp.file("state");
  auto session = PlayMaskingAfterTheFit(/*withhold=*/true, dir);
  ASSERT_TRUE(session);
  std::optional<TaskFailed> failed = session->Next<TaskFailed>();
  ASSERT_TRUE(failed);
  EXPECT_EQ(failed->round, kRound);
  EXPECT_EQ(failed->task_id, 41u);
  EXPECT_TRUE(failed->fit());
  EXPECT_NE(failed->reason.find("'edge-8' shared keys but its share for edge-7 was withheld"),
            std::string::npos)
      << failed->reason;
  EXPECT_FALSE(session->Next<Error>(200ms)) << "the failure went out as an Error too";
  EXPECT_FALSE(session->Next<SecAggMaskedInputMsg>(10ms));
  EXPECT_EQ(trainer_->fit_calls.load(), 1);
  const ClientStateData state = StateAfter(runtime_, dir);
  EXPECT_EQ(state.tasks_completed, 0u);
  EXPECT_EQ(state.last_round, 0u);
}

// The same round with every share in the inbox: the masked input goes after the inbox, and only
// then is the task counted complete, with its round and model version.
TEST_F(ClientRuntimeMaskingTest, AMaskingThatWaitsForTheInboxCountsTheTaskWhenItsInputGoes) {
  TempDir tmp;
  const std::string dir = tmp.file("state");
  auto session = PlayMaskingAfterTheFit(/*withhold=*/false, dir);
  ASSERT_TRUE(session);
  std::optional<SecAggMaskedInputMsg> masked = session->Next<SecAggMaskedInputMsg>();
  ASSERT_TRUE(masked);
  EXPECT_EQ(masked->round, kRound);
  EXPECT_FALSE(session->Next<TaskFailed>(200ms));
  const ClientStateData state = StateAfter(runtime_, dir);
  EXPECT_EQ(state.tasks_completed, 1u);
  EXPECT_EQ(state.last_round, kRound);
  EXPECT_EQ(state.last_model_version, MakeTask(kRound).model_version);  // 2
}

TEST_F(ClientRuntimeTest, AnErrorFromTheCoordinatorIsNotFatal) {
  StartCoordinator();
  StartRuntime(Options());
  auto session = coordinator_->WaitSession(0);
  ASSERT_TRUE(session);
  session->Send(Error{static_cast<uint32_t>(ErrorCode::kProtocolViolation), "update was late"});
  session->Send(MakeTask(2));
  ASSERT_TRUE(session->Next<UpdateSubmission>());
  EXPECT_EQ(runtime_->sessions(), 1);
}

TEST_F(ClientRuntimeTest, HeartbeatsFollowTheWelcomeInterval) {
  FakeCoordinatorOptions fo;
  fo.heartbeat_interval_ms = 5;
  StartCoordinator(fo);
  // The silence deadline is not what this test is about: by default it is 3 intervals (15 ms),
  // which a loaded machine can miss, and the client then reconnects before session 0 counts 3
  // beats.
  ClientRuntimeOptions o = Options();
  o.heartbeat_timeout = 30s;
  StartRuntime(o);
  auto session = coordinator_->WaitSession(0);
  ASSERT_TRUE(session);
  EXPECT_TRUE(session->WaitForHeartbeats(3));
}

TEST_F(ClientRuntimeTest, NoHeartbeatsWhenTheCoordinatorAsksForNone) {
  StartCoordinator();
  StartRuntime(Options());
  auto session = coordinator_->WaitSession(0);
  ASSERT_TRUE(session);
  // A task round trip after the Welcome; a heartbeat due at once would have come before it.
  session->Send(MakeTask(1));
  ASSERT_TRUE(session->Next<UpdateSubmission>());
  EXPECT_EQ(session->heartbeats(), 0u);
}

TEST_F(ClientRuntimeTest, ReconnectsAfterTheCoordinatorDropsTheConnection) {
  StartCoordinator();
  StartRuntime(Options());
  auto first = coordinator_->WaitSession(0);
  ASSERT_TRUE(first);
  first->Close();
  auto second = coordinator_->WaitSession(1);
  ASSERT_TRUE(second);
  ASSERT_TRUE(second->hello());
  second->Send(MakeTask(5));
  std::optional<UpdateSubmission> up = second->Next<UpdateSubmission>();
  ASSERT_TRUE(up);
  EXPECT_EQ(up->round, 5u);
  EXPECT_EQ(runtime_->sessions(), 2);
}

// Failover (docs/tier.md): with several endpoints, a client whose aggregator dies joins the next
// one, and from there the one after (round robin), answering the tasks each gives it.
TEST_F(ClientRuntimeTest, AClientWhoseAggregatorDiesJoinsTheNextEndpoint) {
  auto a = FakeCoordinator::Start(*server_, "agg-a");
  auto b = FakeCoordinator::Start(*server_, "agg-b");
  ClientRuntimeOptions o = Options();
  o.address = "agg-a, agg-b";  // spaces around an entry are dropped
  StartRuntime(o);
  auto on_a = a->WaitSession(0);
  ASSERT_TRUE(on_a && on_a->hello());
  EXPECT_EQ(b->session_count(), 0u);  // the first endpoint is tried first
  // agg-a dies: it stops listening and its connection closes.
  a->StopListening();
  on_a->Close();
  auto on_b = b->WaitSession(0);
  ASSERT_TRUE(on_b && on_b->hello());
  on_b->Send(MakeTask(3));
  std::optional<UpdateSubmission> up = on_b->Next<UpdateSubmission>();
  ASSERT_TRUE(up);
  EXPECT_EQ(up->round, 3u);
  EXPECT_EQ(runtime_->sessions(), 2);
  EXPECT_EQ(a->session_count(), 1u);
  // agg-b dies too, and a restarted agg-a is the next endpoint: the client goes back to it.
  b->StopListening();
  on_b->Close();
  a.reset();
  auto again = FakeCoordinator::Start(*server_, "agg-a");
  auto back = again->WaitSession(0);
  ASSERT_TRUE(back && back->hello());
  back->Send(MakeTask(4));
  ASSERT_TRUE(back->Next<UpdateSubmission>());  // answered: its Welcome, too, was taken
  EXPECT_EQ(runtime_->sessions(), 3);
}

// Pace steering: a Goodbye with a come-back window ends the session, not the run. The client
// reconnects to the same endpoint at a time it draws in [after, after + window], and trains there.
TEST_F(ClientRuntimeTest, AGoodbyeWithAComeBackWindowReconnectsWithinIt) {
  StartCoordinator();
  StartRuntime(Options());
  auto first = coordinator_->WaitSession(0);
  ASSERT_TRUE(first && first->hello());
  const auto sent = std::chrono::steady_clock::now();
  first->Send(Goodbye{"pace steering: come back later", 0, 400, 200});
  auto second = coordinator_->WaitSession(1);
  const double waited =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - sent).count();
  ASSERT_TRUE(second && second->hello());
  EXPECT_GE(waited, 0.4);
  EXPECT_LT(waited, 0.6 + 2.0);  // the window's end, and room for a loaded machine
  EXPECT_EQ(coordinator_->session_count(), 2u);
  second->Send(MakeTask(2));
  std::optional<UpdateSubmission> up = second->Next<UpdateSubmission>();
  ASSERT_TRUE(up);
  EXPECT_EQ(up->round, 2u);
  EXPECT_EQ(runtime_->sessions(), 2);
  // A plain Goodbye still ends the run.
  second->Send(Goodbye{"done", 0});
  EXPECT_TRUE(runtime_->Wait().ok());
  EXPECT_EQ(coordinator_->session_count(), 2u);
}

// With more than two endpoints the next one is drawn among the others (the backoff's seeded
// generator): never the one that just failed, and every other one in turn, so the clients of a dead
// aggregator spread over all the rest.
TEST_F(ClientRuntimeTest, FailoverSpreadsOverTheOtherEndpoints) {
  std::vector<std::unique_ptr<FakeCoordinator>> aggs;
  for (const char* name : {"agg-a", "agg-b", "agg-c"})
    aggs.push_back(FakeCoordinator::Start(*server_, name));
  ClientRuntimeOptions o = Options();
  o.address = "agg-a,agg-b,agg-c";
  StartRuntime(o);
  std::vector<size_t> seen(3, 0), order;
  for (int session = 0; session < 30; ++session) {
    std::shared_ptr<FakeSession> s;
    for (int spin = 0; spin < 20'000 && !s; ++spin) {
      for (size_t a = 0; a < 3 && !s; ++a) {
        if (aggs[a]->session_count() > seen[a]) {
          s = aggs[a]->WaitSession(seen[a]++);
          order.push_back(a);
        }
      }
      if (!s) std::this_thread::sleep_for(1ms);
    }
    ASSERT_TRUE(s && s->hello()) << "session " << session;
    s->Close();
  }
  EXPECT_EQ(order[0], 0u);  // the first endpoint first
  for (size_t i = 1; i < order.size(); ++i) EXPECT_NE(order[i], order[i - 1]) << i;
  for (size_t a = 0; a < 3; ++a) EXPECT_GE(seen[a], 5u) << a;  // 30 sessions: each about 10
}

TEST_F(ClientRuntimeTest, AnEndpointListWithAnEmptyEntryIsRefusedNamingIt) {
  ClientRuntimeOptions o = Options();
  o.address = "agg-a,,agg-b";
  auto rt = ClientRuntime::Create(io_.io(), *client_transport_, trainer_, o);
  ASSERT_FALSE(rt.ok());
  EXPECT_NE(rt.status().message().find("empty entry 2"), std::string::npos) << rt.status();
}

TEST_F(ClientRuntimeTest, KeepsRetryingUntilACoordinatorAppears) {
  ClientRuntimeOptions o = Options();
  o.backoff.max_attempts = 0;  // forever
  StartRuntime(o);             // nobody listens on "coord" yet
  StartCoordinator();
  auto session = coordinator_->WaitSession(0);
  ASSERT_TRUE(session);
  EXPECT_TRUE(session->hello());
}

TEST_F(ClientRuntimeTest, ClientsWithTheDefaultSeedDrawDifferentDelaysAndAnExplicitSeedRepeats) {
  BackoffOptions b;
  b.initial_delay = 1000ms;
  b.max_delay = 8000ms;
  b.jitter = 0.5;
  ASSERT_EQ(b.seed, 0u);  // the default: drawn per client
  const auto first = ReconnectDelays(b, 6);
  const auto second = ReconnectDelays(b, 6);
  ASSERT_EQ(first.size(), 6u);
  ASSERT_EQ(second.size(), 6u);
  // Six draws of up to 500..4000 ms of jitter each: equal sequences would be lockstep.
  EXPECT_NE(first, second);
  for (size_t i = 0; i < first.size(); ++i) {
    const auto full = std::min(8000ms, 1000ms * (1 << i));
    EXPECT_GE(first[i], full / 2) << i;
    EXPECT_LE(first[i], full) << i;
  }
  b.seed = 77;
  const auto seeded = ReconnectDelays(b, 6);
  EXPECT_EQ(seeded, ReconnectDelays(b, 6));
  Backoff expected(b);
  for (size_t i = 0; i < seeded.size(); ++i) EXPECT_EQ(seeded[i], expected.NextDelay()) << i;
}

TEST_F(ClientRuntimeTest, GivesUpAfterMaxAttempts) {
  ClientRuntimeOptions o = Options();
  o.backoff.max_attempts = 3;
  StartRuntime(o);
  const Status s = runtime_->Wait();
  EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s;
  EXPECT_NE(s.message().find("3 consecutive failed attempts"), std::string::npos) << s;
  EXPECT_NE(s.message().find("no in-memory listener named 'coord'"), std::string::npos) << s;
}

TEST_F(ClientRuntimeTest, GoodbyeEndsTheRunWithOk) {
  StartCoordinator();
  StartRuntime(Options());
  auto session = coordinator_->WaitSession(0);
  ASSERT_TRUE(session);
  session->Send(Goodbye{"run complete"});
  EXPECT_TRUE(runtime_->Wait().ok());
  EXPECT_TRUE(session->WaitClosed());
}

TEST_F(ClientRuntimeTest, StopSaysGoodbyeAndEndsTheRunWithAborted) {
  StartCoordinator();
  StartRuntime(Options());
  auto session = coordinator_->WaitSession(0);
  ASSERT_TRUE(session);
  session->Send(MakeTask(1));
  ASSERT_TRUE(session->Next<UpdateSubmission>());
  runtime_->Stop();
  EXPECT_EQ(runtime_->Wait().code(), StatusCode::kAborted);
  std::optional<Goodbye> bye = session->Next<Goodbye>();
  ASSERT_TRUE(bye);
  EXPECT_EQ(bye->reason, "client stopping");
  EXPECT_EQ(runtime_->Start().code(), StatusCode::kFailedPrecondition);
}

TEST_F(ClientRuntimeTest, StopWhileRetryingEndsTheRun) {
  ClientRuntimeOptions o = Options();
  o.clock = &clock_;
  StartRuntime(o);
  // The first connect fails (nobody listens): the runtime is waiting out its backoff delay.
  ASSERT_TRUE(clock_.WaitForTimers(1));
  runtime_->Stop();
  EXPECT_EQ(runtime_->Wait().code(), StatusCode::kAborted);
  EXPECT_TRUE(clock_.ArmedTimers().empty()) << "the reconnect timer must be cancelled";
}

TEST_F(ClientRuntimeTest, ReconnectDelaysFollowTheBackoffScheduleAndThenItGivesUp) {
  ClientRuntimeOptions o = Options();
  o.clock = &clock_;
  o.backoff.initial_delay = 500ms;
  o.backoff.max_delay = 4s;
  o.backoff.multiplier = 2.0;
  o.backoff.jitter = 0.5;
  o.backoff.max_attempts = 6;
  Backoff expected(o.backoff);  // the schedule the runtime must follow, draw for draw
  StartRuntime(o);
  for (int failure = 1; failure < 6; ++failure) {
    ASSERT_TRUE(clock_.WaitForTimers(1)) << "no reconnect timer after failure " << failure;
    const std::vector<TimePoint> armed = clock_.ArmedTimers();
    ASSERT_EQ(armed.size(), 1u);
    const std::chrono::milliseconds want = expected.NextDelay();
    EXPECT_EQ(armed[0] - clock_.Now(), want) << "delay after failure " << failure;
    EXPECT_GE(want, std::min(4000ms, 500ms * (1 << (failure - 1))) / 2);
    clock_.AdvanceToNextTimer();
  }
  // The sixth consecutive failure exhausts max_attempts.
  const Status s = runtime_->Wait();
  EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s;
  EXPECT_NE(s.message().find("6 consecutive failed attempts"), std::string::npos) << s;
  EXPECT_TRUE(clock_.ArmedTimers().empty());
}

TEST_F(ClientRuntimeTest, ASilentCoordinatorIsDetectedByItsMissingEchoesAndTheClientReconnects) {
  FakeCoordinatorOptions fo;
  fo.heartbeat_interval_ms = 1000;
  fo.echo_heartbeats = false;  // a coordinator that vanished without closing the connection
  StartCoordinator(fo);
  ClientRuntimeOptions o = Options();
  o.clock = &clock_;
  StartRuntime(o);
  auto first = coordinator_->WaitSession(0);
  ASSERT_TRUE(first);
  WaitWelcomed();
  // Heartbeats at 1, 2 and 3 s; at 4 s the connection has been silent for 4 s > 3 intervals.
  for (size_t beat = 1; beat <= 4; ++beat) {
    ASSERT_TRUE(WaitForTimerDueIn(1s)) << "no heartbeat timer before beat " << beat;
    clock_.Advance(1s);
    if (beat < 4) {
      ASSERT_TRUE(first->WaitForHeartbeats(beat));
    }
  }
  ASSERT_TRUE(first->WaitClosed().has_value());
  EXPECT_EQ(first->heartbeats(), 3u);
  // It reconnects after its backoff delay.
  ASSERT_TRUE(clock_.WaitForTimers(1));
  clock_.AdvanceToNextTimer();
  auto second = coordinator_->WaitSession(1);
  ASSERT_TRUE(second);
  second->Send(MakeTask(2));  // a round trip, so the runtime has taken the Welcome too
  ASSERT_TRUE(second->Next<UpdateSubmission>());
  EXPECT_EQ(runtime_->sessions(), 2);
}

// Heartbeats begin with the Welcome, so a Hello that is never answered (the flow dropped right
// after the handshake, a wedged coordinator) held the client for good: no reconnect, no failover.
// The Welcome must come within welcome_timeout.
TEST_F(ClientRuntimeTest, AHelloNeverAnsweredIsGivenUpAtTheWelcomeTimeout) {
  FakeCoordinatorOptions fo;
  fo.answer_hello = false;
  StartCoordinator(fo);
  ClientRuntimeOptions o = Options();
  o.clock = &clock_;
  o.welcome_timeout = 5s;
  StartRuntime(o);
  auto first = coordinator_->WaitSession(0);
  ASSERT_TRUE(first);
  ASSERT_TRUE(clock_.WaitForTimers(1));
  EXPECT_EQ(clock_.ArmedTimers()[0] - clock_.Now(), 5s);
  clock_.Advance(4999ms);
  EXPECT_FALSE(first->WaitClosed(50ms).has_value());
  clock_.Advance(1ms);
  ASSERT_TRUE(first->WaitClosed().has_value());
  // It reconnects after its backoff delay, and says Hello again.
  ASSERT_TRUE(clock_.WaitForTimers(1));
  clock_.AdvanceToNextTimer();
  ASSERT_TRUE(coordinator_->WaitSession(1));
  EXPECT_EQ(runtime_->sessions(), 0);  // never welcomed
}

TEST_F(ClientRuntimeTest, EchoedHeartbeatsKeepTheConnection) {
  FakeCoordinatorOptions fo;
  fo.heartbeat_interval_ms = 1000;
  StartCoordinator(fo);
  ClientRuntimeOptions o = Options();
  o.clock = &clock_;
  StartRuntime(o);
  auto session = coordinator_->WaitSession(0);
  ASSERT_TRUE(session);
  WaitWelcomed();
  for (size_t beat = 1; beat <= 10; ++beat) {
    ASSERT_TRUE(WaitForTimerDueIn(1s)) << "no heartbeat timer before beat " << beat;
    clock_.Advance(1s);
    ASSERT_TRUE(session->WaitForHeartbeats(beat));
  }
  // A task round trip: the connection is the first and still up.
  session->Send(MakeTask(1));
  ASSERT_TRUE(session->Next<UpdateSubmission>());
  EXPECT_EQ(coordinator_->session_count(), 1u);
  EXPECT_EQ(runtime_->sessions(), 1);
}

TEST_F(ClientRuntimeTest, RevokedClientEndsWithPermissionDenied) {
  FakeCoordinatorOptions fo;
  fo.refuse_with = ErrorCode::kRevoked;
  StartCoordinator(fo);
  StartRuntime(Options());
  const Status s = runtime_->Wait();
  EXPECT_EQ(s.code(), StatusCode::kPermissionDenied) << s;
  EXPECT_NE(s.message().find("REVOKED"), std::string::npos) << s;
}

TEST_F(ClientRuntimeTest, ARefusedLayoutEndsTheRunWithFailedPrecondition) {
  FakeCoordinatorOptions fo;
  fo.refuse_with = ErrorCode::kLayoutMismatch;
  StartCoordinator(fo);
  ClientRuntimeOptions o = Options();
  o.backoff.max_attempts = 0;  // would retry forever, were the refusal not final
  StartRuntime(o);
  const Status s = runtime_->Wait();
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s;
  EXPECT_NE(s.message().find("refused this client's model: LAYOUT_MISMATCH"), std::string::npos)
      << s;
  EXPECT_EQ(coordinator_->session_count(), 1u);  // no second attempt
  EXPECT_EQ(runtime_->sessions(), 0);
}

TEST_F(ClientRuntimeTest, AHelloRefusedAsAProtocolViolationEndsTheRunAfterOneAttempt) {
  // What the coordinator answers a client that lacks the run's codec.
  FakeCoordinatorOptions fo;
  fo.refuse_with = ErrorCode::kProtocolViolation;
  StartCoordinator(fo);
  ClientRuntimeOptions o = Options();
  o.backoff.max_attempts = 3;  // would give up Unavailable after 3, were the refusal not final
  StartRuntime(o);
  const Status s = runtime_->Wait();
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s;
  EXPECT_NE(s.message().find("refused this client at Hello: PROTOCOL_VIOLATION"), std::string::npos)
      << s;
  EXPECT_EQ(coordinator_->session_count(), 1u);
}

TEST_F(ClientRuntimeTest, AShuttingDownCoordinatorIsRetriedAndTheNextOneIsJoined) {
  // The first coordinator refuses with SHUTTING_DOWN (it is going away): that heals by waiting.
  FakeCoordinatorOptions fo;
  fo.refuse_with = ErrorCode::kShuttingDown;
  StartCoordinator(fo);
  StartRuntime(Options());
  auto refused = coordinator_->WaitSession(0);
  ASSERT_TRUE(refused);
  ASSERT_TRUE(refused->WaitClosed());
  coordinator_.reset();  // the next coordinator comes up under the same name
  StartCoordinator();
  auto session = coordinator_->WaitSession(0);
  ASSERT_TRUE(session);
  session->Send(MakeTask(1));
  ASSERT_TRUE(session->Next<UpdateSubmission>());
  EXPECT_EQ(runtime_->sessions(), 1);
}

TEST_F(ClientRuntimeTest, ATaskOfALostConnectionIsNeverTrainedAfterTheClientHasReconnected) {
  // The fit of round 1 is in progress when its connection is lost; rounds 2 and 3 wait behind it
  // on the worker. Only round 1's fit (asked to stop) and round 4's, on the new connection, run.
  std::promise<void> fit_started;
  std::atomic<bool> stop_seen{false};
  std::atomic<int> calls{0};
  trainer_->during_fit = [&] {
    if (++calls != 1) return;
    std::promise<void> stopped;
    std::stop_callback on_stop(trainer_->fit_stop, [&] { stopped.set_value(); });
    fit_started.set_value();
    // Bounded, so the test fails rather than hangs when the stop never comes.
    stop_seen = stopped.get_future().wait_for(10s) == std::future_status::ready;
  };
  std::vector<uint64_t> reported;
  std::mutex mu;
  ClientRuntimeOptions o = Options();
  o.on_task = [&](const TaskReport& r) {
    std::lock_guard<std::mutex> lock(mu);
    reported.push_back(r.round);
  };
  StartCoordinator();
  StartRuntime(o);
  auto first = coordinator_->WaitSession(0);
  ASSERT_TRUE(first);
  first->Send(MakeTask(1));
  ASSERT_EQ(fit_started.get_future().wait_for(20s), std::future_status::ready);
  first->Send(MakeTask(2));
  const ModelWeights g = GlobalModel();
  EvaluateTask eval;
  eval.round = 3;
  eval.model_version = 2;
  eval.model.layout_fingerprint = g.fingerprint();
  eval.model.values.mutable_values().assign(g.data().begin(), g.data().end());
  first->Send(eval);
  // Close sends what is queued first: the client has both tasks before it sees the close.
  first->Close();

  auto second = coordinator_->WaitSession(1);
  ASSERT_TRUE(second);
  second->Send(MakeTask(4));
  std::optional<UpdateSubmission> up = second->Next<UpdateSubmission>();
  ASSERT_TRUE(up);
  EXPECT_EQ(up->round, 4u);
  EXPECT_TRUE(stop_seen) << "the fit in progress was not asked to stop";
  EXPECT_EQ(trainer_->fit_calls, 2) << "a task of the lost connection was trained";
  EXPECT_EQ(trainer_->eval_calls, 0);
  runtime_.reset();  // the worker has finished with `reported`
  EXPECT_EQ(reported, std::vector<uint64_t>{4});
}

TEST_F(ClientRuntimeTest, AGoodbyeSayingTheRunFailedEndsWithAbortedAndTheReason) {
  StartCoordinator();
  StartRuntime(Options());
  auto session = coordinator_->WaitSession(0);
  ASSERT_TRUE(session);
  session->Send(Goodbye{"the run failed: round 2 failed 3 attempts",
                        static_cast<uint32_t>(ErrorCode::kRunFailed)});
  const Status s = runtime_->Wait();
  EXPECT_EQ(s.code(), StatusCode::kAborted) << s;
  EXPECT_NE(s.message().find("round 2 failed 3 attempts"), std::string::npos) << s;
}

// A coordinator stopped by a signal says SHUTTING_DOWN: the run is not over, and the client
// reconnects until a restarted coordinator (--resume) takes it back, then trains there. (With a
// plain Goodbye, as before, clients exited 0 and the restarted coordinator found none.)
TEST_F(ClientRuntimeTest, AGoodbyeSayingShuttingDownReconnectsInsteadOfEndingTheRun) {
  StartCoordinator();
  StartRuntime(Options());
  auto first = coordinator_->WaitSession(0);
  ASSERT_TRUE(first && first->hello());
  first->Send(
      Goodbye{"the coordinator is shutting down", static_cast<uint32_t>(ErrorCode::kShuttingDown)});
  first->Close();
  auto second = coordinator_->WaitSession(1);
  ASSERT_TRUE(second && second->hello()) << "the client did not come back";
  second->Send(MakeTask(4));
  std::optional<UpdateSubmission> up = second->Next<UpdateSubmission>();
  ASSERT_TRUE(up);
  EXPECT_EQ(up->round, 4u);
  EXPECT_EQ(runtime_->sessions(), 2);
  second->Send(Goodbye{"the run is complete", 0});
  EXPECT_TRUE(runtime_->Wait().ok());
}

// A session replaced by a newer connection with the same client id (another process holding this
// certificate) stops with FailedPrecondition saying so, rather than OK as if the run were over.
TEST_F(ClientRuntimeTest, AGoodbyeSayingSupersededStopsWithFailedPrecondition) {
  StartCoordinator();
  StartRuntime(Options());
  auto session = coordinator_->WaitSession(0);
  ASSERT_TRUE(session && session->hello());
  session->Send(Goodbye{"superseded by a new connection from the same client",
                        static_cast<uint32_t>(ErrorCode::kSuperseded)});
  const Status s = runtime_->Wait();
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s;
  EXPECT_NE(s.message().find("another connection with this client's id"), std::string::npos) << s;
  EXPECT_EQ(coordinator_->session_count(), 1u) << "it must not redial";
}

// A split client made for one cut, given a task of another: cuts 2 and 3 of the mlp lie around
// its relu, so the device parts have one layout and Hello cannot tell them apart; the client
// trained the other model silently. Now it stops, naming both cuts, and tells the coordinator.
TEST_F(ClientRuntimeTest, ASplitTaskOfAnotherCutEndsTheRunNamingBothCuts) {
  StartCoordinator();
  ClientRuntimeOptions o = Options();
  o.split = true;
  o.split_cut = 2;
  StartRuntime(o);
  auto session = coordinator_->WaitSession(0);
  ASSERT_TRUE(session && session->hello());
  TaskAssignment task = MakeTask(1);
  task.split_cut = 3;
  session->Send(task);
  const Status s = runtime_->Wait();
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s;
  EXPECT_NE(s.message().find("the run cuts its model before layer 3, this client's model before "
                             "layer 2: set split.cut as the coordinator's"),
            std::string::npos)
      << s;
  std::optional<Error> told = session->Next<Error>();
  ASSERT_TRUE(told);
  EXPECT_EQ(told->code, static_cast<uint32_t>(ErrorCode::kLayoutMismatch));
  EXPECT_EQ(trainer_->fit_calls.load(), 0);
}

TEST_F(ClientRuntimeTest, ATrainerWithoutParametersIsRefusedAtCreate) {
  struct Stub : Trainer {
    Result<FitResult> fit(const ModelWeights&, const FitConfig&) override {
      return Status::Internal("not called");
    }
    Result<EvalResult> evaluate(const ModelWeights&, const EvalConfig&) override {
      return Status::Internal("not called");
    }
  };
  struct Empty final : Stub {
    Result<ModelWeights> get_parameters() override { return ModelWeights(); }
  };
  struct Broken final : Stub {
    Result<ModelWeights> get_parameters() override { return Status::IoError("no model file"); }
  };
  auto empty =
      ClientRuntime::Create(io_.io(), *client_transport_, std::make_shared<Empty>(), Options());
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.status().message().find("returned an empty model"), std::string::npos);
  auto broken =
      ClientRuntime::Create(io_.io(), *client_transport_, std::make_shared<Broken>(), Options());
  ASSERT_FALSE(broken.ok());
  EXPECT_EQ(broken.status().code(), StatusCode::kIoError);
  EXPECT_NE(broken.status().message().find("get_parameters(): no model file"), std::string::npos)
      << broken.status();
}

TEST_F(ClientRuntimeTest, StopBeforeStartAndWaitWithoutStart) {
  auto rt = ClientRuntime::Create(io_.io(), *client_transport_, trainer_, Options());
  ASSERT_TRUE(rt.ok());
  EXPECT_EQ((*rt)->Wait().code(), StatusCode::kFailedPrecondition);
  (*rt)->Stop();
  EXPECT_EQ((*rt)->Wait().code(), StatusCode::kAborted);
  // Stopped before it started: Start (and so Client::run) returns Aborted, as the API promises
  // for a stopped client (it said FailedPrecondition).
  EXPECT_EQ((*rt)->Start().code(), StatusCode::kAborted);
}

// Every Hello declares the layout, so a layout the wire cannot carry (a tensor name over 1,024
// bytes, more than 16 dimensions) made every Hello fail to encode, silently: the client waited
// 30 s for a Welcome, again and again. Create refuses it now, naming the tensor; a trainer whose
// get_parameters() throws gets an error too, not an exception out of Create.
TEST_F(ClientRuntimeTest, AModelTheWireCannotDeclareIsRefusedAtCreateNamingTheTensor) {
  struct Fixed final : Trainer {
    explicit Fixed(ModelWeights w) : w(std::move(w)) {}
    Result<ModelWeights> get_parameters() override { return w; }
    Result<FitResult> fit(const ModelWeights&, const FitConfig&) override {
      return Status::Internal("not called");
    }
    Result<EvalResult> evaluate(const ModelWeights&, const EvalConfig&) override {
      return Status::Internal("not called");
    }
    ModelWeights w;
  };
  const auto create = [&](const ModelWeights::LayoutSpec& tensors) {
    return ClientRuntime::Create(io_.io(), *client_transport_,
                                 std::make_shared<Fixed>(*ModelWeights::Create(tensors)),
                                 Options());
  };
  EXPECT_TRUE(create({{"w", {2}}, {std::string(1024, 'n'), {1}}}).ok());
  auto long_name = create({{"w", {2}}, {std::string(1025, 'n'), {1}}});
  ASSERT_FALSE(long_name.ok());
  EXPECT_EQ(long_name.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(long_name.status().message().find("tensor 1 has a name of 1025 bytes"),
            std::string::npos)
      << long_name.status();
  EXPECT_TRUE(create({{"deep", std::vector<int64_t>(16, 1)}}).ok());
  auto deep = create({{"deep", std::vector<int64_t>(17, 1)}});
  ASSERT_FALSE(deep.ok());
  EXPECT_NE(deep.status().message().find("tensor 0 ('deep') has 17 dimensions; at most 16"),
            std::string::npos)
      << deep.status();

  struct Throws final : Trainer {
    Result<ModelWeights> get_parameters() override { throw std::runtime_error("camera busy"); }
    Result<FitResult> fit(const ModelWeights&, const FitConfig&) override {
      return Status::Internal("not called");
    }
    Result<EvalResult> evaluate(const ModelWeights&, const EvalConfig&) override {
      return Status::Internal("not called");
    }
  };
  auto thrown =
      ClientRuntime::Create(io_.io(), *client_transport_, std::make_shared<Throws>(), Options());
  ASSERT_FALSE(thrown.ok());
  EXPECT_NE(thrown.status().message().find("get_parameters() threw: camera busy"),
            std::string::npos)
      << thrown.status();
}

TEST_F(ClientRuntimeTest, CreateRejectsBadOptions) {
  ClientRuntimeOptions o = Options();
  o.backoff.jitter = 1.5;
  auto rt = ClientRuntime::Create(io_.io(), *client_transport_, trainer_, o);
  ASSERT_FALSE(rt.ok());
  EXPECT_NE(rt.status().message().find("backoff.jitter"), std::string::npos);
  EXPECT_FALSE(ClientRuntime::Create(io_.io(), *client_transport_, nullptr, Options()).ok());
  o = Options();
  o.address.clear();
  EXPECT_FALSE(ClientRuntime::Create(io_.io(), *client_transport_, trainer_, o).ok());
}

TEST_F(ClientRuntimeTest, StateDirRecordsTheIdAndTheLastRound) {
  TempDir tmp;
  const std::string dir = tmp.file("state");
  auto state = ClientState::Open(dir);
  ASSERT_TRUE(state.ok()) << state.status();
  std::vector<TaskReport> reports;
  std::mutex mu;
  ClientRuntimeOptions o = Options();
  o.on_task = [&](const TaskReport& r) {
    std::lock_guard<std::mutex> lock(mu);
    reports.push_back(r);
  };
  StartCoordinator();
  StartRuntime(o, std::move(*state));
  auto session = coordinator_->WaitSession(0);
  ASSERT_TRUE(session);
  session->Send(MakeTask(6));
  ASSERT_TRUE(session->Next<UpdateSubmission>());
  session->Send(Goodbye{"done"});
  ASSERT_TRUE(runtime_->Wait().ok());
  runtime_.reset();  // joins the worker and releases the lock on the state dir

  auto reopened = ClientState::Open(dir);
  ASSERT_TRUE(reopened.ok()) << reopened.status();
  EXPECT_EQ((*reopened)->data().client_id, "edge-7");
  EXPECT_EQ((*reopened)->data().last_round, 6u);
  EXPECT_EQ((*reopened)->data().last_model_version, 5u);
  EXPECT_EQ((*reopened)->data().tasks_completed, 1u);
  {
    std::lock_guard<std::mutex> lock(mu);
    ASSERT_EQ(reports.size(), 1u);
    EXPECT_EQ(reports[0].kind, TaskReport::Kind::kFit);
    EXPECT_EQ(reports[0].round, 6u);
    EXPECT_EQ(reports[0].num_examples, 200);
    EXPECT_DOUBLE_EQ(reports[0].loss, 0.5);
    EXPECT_EQ(reports[0].update_bytes, 36u);
    EXPECT_TRUE(reports[0].status.ok());
  }
}

}  // namespace
}  // namespace tributary
