// CoordinatorService end to end over both transports, with scripted clients written here.
#include "coordinator/coordinator_service.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <future>

#include "compression/dense_codec.h"
#include "core/manual_clock.h"
#include "core/process_stats.h"
#include "protocol/in_memory_transport.h"
#include "protocol/tls_transport.h"
#include "tests/protocol/transport_test_util.h"

namespace tributary {
namespace {

using namespace std::chrono_literals;
using testing::Inbox;
using testing::IoThreads;
using testing::TestPki;
using testing::Waiter;

enum class Kind { kInMemory, kTls };

// A client that answers every TaskAssignment with a constant delta `value` (or, when `mute`,
// never answers, or when `quit_on_task`, closes on its first task) and records the rest. It closes
// its connection and waits for the close before it goes away, so no handler outlives it.
struct ScriptedClient {
  ~ScriptedClient() {
    if (!started) return;
    conn->Close();
    WaitClosed();
  }
  std::string id;
  float value = 1.0f;
  bool mute = false;
  bool quit_on_task = false;
  bool started = false;
  std::vector<std::string> codecs{"dense"};
  ModelLayout layout{{"w", "F32", {8}}};  // the test run's model
  uint64_t lie_fingerprint = 0;           // when set, declared instead of the layout's
  uint64_t announced = 100;               // num_examples in its Hello (its updates claim 100)
  std::shared_ptr<Connection> conn;
  std::mutex mu;
  std::condition_variable cv;
  std::vector<Message> received;
  std::optional<Status> closed;
  std::atomic<int> tasks{0};

  void Start() {
    started = true;
    conn->Start(
        [this](Message m) {
          if (auto* t = std::get_if<TaskAssignment>(&m); t && quit_on_task) {
            conn->Close();
          } else if (t && !mute) {
            ++tasks;
            UpdateSubmission u;
            u.round = t->round;
            u.task_id = t->task_id;
            u.model_version = t->model_version;
            u.num_examples = 100;
            u.update.codec = "dense";
            u.update.layout_fingerprint = t->model.layout_fingerprint;
            u.update.num_floats = t->model.values.size();
            u.update.bytes =
                *DenseCodec().Encode(std::vector<float>(t->model.values.size(), value));
            conn->Send(std::move(u));
          }
          std::lock_guard<std::mutex> lock(mu);
          received.push_back(std::move(m));
          cv.notify_all();
        },
        [this](Status s) {
          std::lock_guard<std::mutex> lock(mu);
          closed = s;
          cv.notify_all();
        });
    ClientCapabilities caps{"cpu", codecs, announced, 0, {}};
    DeclareLayout(caps, layout);
    if (lie_fingerprint) caps.layout_fingerprint = lie_fingerprint;
    conn->Send(Hello{kProtocolVersion, caps, "test"});
  }
  // Waits until at least n messages of type T arrived.
  template <class T>
  bool WaitFor(size_t n) {
    std::unique_lock<std::mutex> lock(mu);
    return cv.wait_for(lock, 20s, [&] {
      size_t k = 0;
      for (auto& m : received) k += std::holds_alternative<T>(m);
      return k >= n;
    });
  }
  // A heartbeat and its echo: the service has handled everything this client sent before it.
  bool Sync() {
    const size_t n = Received<Heartbeat>().size();
    conn->Send(Heartbeat{n + 1, 0});
    return WaitFor<Heartbeat>(n + 1);
  }
  bool WaitClosed() {
    std::unique_lock<std::mutex> lock(mu);
    return cv.wait_for(lock, 20s, [&] { return closed.has_value(); });
  }
  template <class T>
  std::vector<T> Received() {
    std::lock_guard<std::mutex> lock(mu);
    std::vector<T> out;
    for (auto& m : received)
      if (auto* x = std::get_if<T>(&m)) out.push_back(*x);
    return out;
  }
};

class CoordinatorServiceTest : public ::testing::TestWithParam<Kind> {
 protected:
  ~CoordinatorServiceTest() override { io_.Stop(); }

  void StartCoordinator(RoundConfig cfg, CoordinatorServiceOptions o = {}) {
    TransportOptions options;
    if (GetParam() == Kind::kTls) {
      server_ = std::move(
          *TlsTransport::Create(io_.io(), {options, TestPki::Get().ServerContext(), nullptr}));
    } else {
      server_ = std::move(*InMemoryTransport::Create(io_.io(), network_, {options, "", 1 << 20}));
    }
    RunConfig run;
    run.round = cfg;
    run.eval_every = 0;
    RunDriver::Options driver_options;
    driver_options.initial_model = *ModelWeights::Create({{"w", {8}}});
    auto driver = RunDriver::Create(run, std::move(driver_options));
    ASSERT_TRUE(driver.ok()) << driver.status();
    driver_ = std::move(*driver);
    driver_->AddObserver(&observer_);
    driver_->Start();
    o.listen_address = GetParam() == Kind::kTls ? "127.0.0.1:0" : "";
    service_ = std::make_shared<CoordinatorService>(io_.io(), *server_, *driver_, o);
    service_->set_on_finished([this](Status s) { finished_.Callback()(s); });
    ASSERT_TRUE(service_->Start().ok());
  }

  std::unique_ptr<ScriptedClient> Connect(const std::string& id, float value) {
    std::unique_ptr<Transport> t;
    if (GetParam() == Kind::kTls) {
      t = std::move(*TlsTransport::Create(
          io_.io(), {TransportOptions{}, nullptr, TestPki::Get().ClientContext(id)}));
    } else {
      t = std::move(
          *InMemoryTransport::Create(io_.io(), network_, {TransportOptions{}, id, 1 << 20}));
    }
    Waiter<Result<std::shared_ptr<Connection>>> w;
    t->Connect(service_->address(), w.Callback());
    auto c = w.Wait();
    EXPECT_TRUE(c && c->ok());
    auto client = std::make_unique<ScriptedClient>();
    client->id = id;
    client->value = value;
    client->conn = **c;
    transports_.push_back(std::move(t));
    return client;
  }

  IoThreads io_{2};
  ManualClock clock_;  // after io_: releases its armed callbacks while io_ still exists
  std::shared_ptr<InMemoryNetwork> network_ = std::make_shared<InMemoryNetwork>();
  std::unique_ptr<Transport> server_;
  std::vector<std::unique_ptr<Transport>> transports_;
  // Collects the closed rounds' summaries (on the engine strand; read after the run finished).
  struct Rounds final : RunObserver {
    void OnEvent(const RunEvent& e) override {
      if (auto* c = std::get_if<RoundClosed>(&e)) summaries.push_back(c->summary);
      if (auto* r = std::get_if<ClientRefused>(&e)) refusals.push_back(*r);
      names.emplace_back(RunEventName(e));
    }
    std::vector<RoundSummary> summaries;
    std::vector<ClientRefused> refusals;
    std::vector<std::string> names;  // every event's, in order
  };
  const ModelWeights& model() const { return driver_->engine().model(); }

  Rounds observer_;
  std::vector<RoundSummary>& rounds_ = observer_.summaries;
  std::unique_ptr<RunDriver> driver_;
  std::shared_ptr<CoordinatorService> service_;
  Waiter<Status> finished_;
};

TEST_P(CoordinatorServiceTest, RunsRoundsToCompletionAndSaysGoodbye) {
  RoundConfig cfg;
  cfg.rounds = 3;
  cfg.clients_per_round = 3;
  cfg.min_available = 3;
  cfg.round_timeout = 20s;
  StartCoordinator(cfg);
  std::vector<std::unique_ptr<ScriptedClient>> clients;
  for (int i = 0; i < 3; ++i) {
    clients.push_back(Connect("edge-" + std::to_string(i), static_cast<float>(i + 1)));
    clients.back()->Start();
  }
  auto done = finished_.Wait(30s);
  ASSERT_TRUE(done.has_value()) << "the run did not finish";
  EXPECT_TRUE(done->ok()) << *done;
  ASSERT_EQ(rounds_.size(), 3u);
  for (const RoundSummary& r : rounds_) EXPECT_EQ(r.accepted, 3);
  // Each round adds the mean delta (1+2+3)/3 = 2 to every weight.
  EXPECT_FLOAT_EQ(model().data()[0], 6.0f);
  for (auto& c : clients) {
    ASSERT_TRUE(c->WaitClosed());
    EXPECT_EQ(c->tasks.load(), 3);
    auto welcome = c->Received<Welcome>();
    ASSERT_EQ(welcome.size(), 1u);
    EXPECT_EQ(welcome[0].client_id, c->id);  // the id comes from the transport's authentication
    ASSERT_EQ(c->Received<Goodbye>().size(), 1u);
    EXPECT_EQ(c->Received<Goodbye>()[0].reason, "the run is complete");
    EXPECT_EQ(c->Received<Goodbye>()[0].code, 0u);  // over: the client ends its run
  }
}

// Stop (SIGINT or SIGTERM) does not end the run for the clients: their Goodbye says SHUTTING_DOWN,
// and they reconnect until a coordinator restarted with --resume takes them back. (It said 0, the
// run is over, and the clients exited, so the restarted coordinator found none.)
TEST_P(CoordinatorServiceTest, AStoppedCoordinatorTellsItsClientsItIsShuttingDown) {
  RoundConfig cfg;
  cfg.rounds = 5;
  cfg.clients_per_round = 3;
  cfg.min_available = 3;  // two clients: no round starts
  StartCoordinator(cfg);
  auto a = Connect("edge-a", 1.0f), b = Connect("edge-b", 1.0f);
  for (ScriptedClient* c : {a.get(), b.get()}) {
    c->Start();
    ASSERT_TRUE(c->WaitFor<Welcome>(1));
  }
  service_->Stop("the coordinator is shutting down");
  auto done = finished_.Wait(30s);
  ASSERT_TRUE(done.has_value());
  EXPECT_TRUE(done->ok()) << *done;
  for (ScriptedClient* c : {a.get(), b.get()}) {
    ASSERT_TRUE(c->WaitClosed());
    auto bye = c->Received<Goodbye>();
    ASSERT_EQ(bye.size(), 1u);
    EXPECT_EQ(bye[0].code, static_cast<uint32_t>(ErrorCode::kShuttingDown));
    EXPECT_EQ(bye[0].reason, "the coordinator is shutting down");
  }
}

// A second connection with the same client id replaces the first at its Hello. The first is told
// SUPERSEDED (its client stops: two processes hold one certificate), and the operator sees a
// security warning naming the id and both addresses.
TEST_P(CoordinatorServiceTest, ASecondConnectionWithOneIdSupersedesTheFirstAndIsASecurityEvent) {
  RoundConfig cfg;
  cfg.rounds = 1;
  cfg.clients_per_round = 3;
  cfg.min_available = 3;
  CoordinatorServiceOptions o;
  o.security_log = std::make_shared<SecurityLog>();
  StartCoordinator(cfg, o);
  auto first = Connect("edge-twin", 1.0f);
  first->Start();
  ASSERT_TRUE(first->WaitFor<Welcome>(1));
  auto second = Connect("edge-twin", 1.0f);
  second->Start();
  ASSERT_TRUE(second->WaitFor<Welcome>(1));
  ASSERT_TRUE(first->WaitClosed());
  auto bye = first->Received<Goodbye>();
  ASSERT_EQ(bye.size(), 1u);
  EXPECT_EQ(bye[0].code, static_cast<uint32_t>(ErrorCode::kSuperseded));
  EXPECT_EQ(o.security_log->Totals()["client id connected twice"], 1u);
  EXPECT_TRUE(second->Sync()) << "the second connection serves the run";
  EXPECT_TRUE(second->Received<Goodbye>().empty());
}

// A program stops its io_context in on_closed: by then every client has read its Goodbye (so it
// does not keep reconnecting to a coordinator that has exited), however slowly clients close.
TEST_P(CoordinatorServiceTest, OnClosedWaitsUntilEveryClientHasItsGoodbye) {
  RoundConfig cfg;
  cfg.rounds = 1;
  cfg.clients_per_round = 4;
  cfg.min_available = 4;
  cfg.round_timeout = 20s;
  StartCoordinator(cfg);
  Waiter<std::vector<size_t>> closed;  // each client's Goodbyes when on_closed ran
  std::vector<std::unique_ptr<ScriptedClient>> clients;
  service_->set_on_closed([&] {
    std::vector<size_t> goodbyes;
    for (auto& c : clients) goodbyes.push_back(c->Received<Goodbye>().size());
    closed.Callback()(goodbyes);
  });
  for (int i = 0; i < 4; ++i) {
    clients.push_back(Connect("edge-" + std::to_string(i), 1.0f));
    clients.back()->Start();
  }
  ASSERT_TRUE(finished_.Wait(30s).has_value()) << "the run did not finish";
  auto goodbyes = closed.Wait(30s);
  ASSERT_TRUE(goodbyes.has_value()) << "on_closed never ran";
  EXPECT_EQ(*goodbyes, std::vector<size_t>(4, 1u));
  for (auto& c : clients) ASSERT_TRUE(c->WaitClosed());
}

TEST_P(CoordinatorServiceTest, RefusesAClientThatCannotSpeakTheRunsCodec) {
  RoundConfig cfg;
  cfg.rounds = 1;
  cfg.clients_per_round = 1;
  StartCoordinator(cfg);
  auto c = Connect("old-client", 1.0f);
  c->codecs = {"q8"};
  c->Start();
  ASSERT_TRUE(c->WaitClosed());
  auto errors = c->Received<Error>();
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0].message.find("codec 'dense'"), std::string::npos) << errors[0].message;
  EXPECT_NE(errors[0].message.find("offers: q8"), std::string::npos) << errors[0].message;
  EXPECT_EQ(c->tasks.load(), 0);
}

TEST_P(CoordinatorServiceTest, RefusesAClientThatCannotDecodeTheDownloadCodec) {
  RoundConfig cfg;
  cfg.rounds = 1;
  cfg.clients_per_round = 1;
  cfg.download_codec = "q8";
  StartCoordinator(cfg);
  auto c = Connect("dense-only", 1.0f);
  c->codecs = {"dense"};
  c->Start();
  ASSERT_TRUE(c->WaitClosed());
  auto errors = c->Received<Error>();
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].code, static_cast<uint32_t>(ErrorCode::kProtocolViolation));
  EXPECT_NE(errors[0].message.find("download codec 'q8'"), std::string::npos) << errors[0].message;
  EXPECT_NE(errors[0].message.find("offers: dense"), std::string::npos) << errors[0].message;
  EXPECT_EQ(c->tasks.load(), 0);
}

TEST_P(CoordinatorServiceTest, ADisconnectMidRoundDoesNotStopTheRound) {
  RoundConfig cfg;
  cfg.rounds = 1;
  cfg.clients_per_round = 3;
  cfg.min_available = 3;
  cfg.min_completed = 2;
  cfg.round_timeout = 20s;
  StartCoordinator(cfg);
  auto a = Connect("a", 1.0f), b = Connect("b", 3.0f), quitter = Connect("q", 100.0f);
  // The quitter says Hello and closes before answering its task.
  quitter->quit_on_task = true;
  quitter->Start();
  a->Start();
  b->Start();
  auto done = finished_.Wait(30s);
  ASSERT_TRUE(done.has_value());
  ASSERT_EQ(rounds_.size(), 1u);
  EXPECT_EQ(rounds_[0].accepted, 2);
  EXPECT_EQ(rounds_[0].dropped, 1);
  EXPECT_FLOAT_EQ(model().data()[3], 2.0f);  // the quitter's 100 is not in it
}

TEST_P(CoordinatorServiceTest, HeartbeatsAreEchoedAndASilentClientIsClosedAtTheClientTimeout) {
  RoundConfig cfg;
  cfg.min_available = 3;  // no round starts: only the sweep and the heartbeats are at work
  CoordinatorServiceOptions o;
  o.clock = &clock_;
  o.heartbeat_interval = 1s;  // the sweep runs every heartbeat interval
  o.client_timeout = 3s;
  StartCoordinator(cfg, o);
  auto talker = Connect("talker", 1.0f), silent = Connect("silent", 1.0f);
  talker->Start();
  silent->Start();
  ASSERT_TRUE(talker->WaitFor<Welcome>(1));
  ASSERT_TRUE(silent->WaitFor<Welcome>(1));
  const TimePoint t0 = clock_.Now();
  for (uint64_t step = 1; step <= 4; ++step) {
    // The talker's heartbeat, echoed once the service has seen it (so the sweep below sees it).
    talker->conn->Send(Heartbeat{step, 1000 + step});
    ASSERT_TRUE(talker->WaitFor<Heartbeat>(step));
    ASSERT_TRUE(clock_.WaitForTimers(1));
    ASSERT_EQ(clock_.ArmedTimers()[0], t0 + step * 1s) << "the sweep runs every second";
    // The sweeps so far ran before this heartbeat's echo: none of them closed the silent client.
    EXPECT_TRUE(silent->Received<Error>().empty()) << "closed early, before step " << step;
    clock_.Advance(1s);
  }
  // Silent for 4 s > 3 s: closed with a timeout error. The talker stays.
  ASSERT_TRUE(silent->WaitClosed());
  auto errors = silent->Received<Error>();
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].code, static_cast<uint32_t>(ErrorCode::kTimeout));
  EXPECT_NE(errors[0].message.find("client timeout"), std::string::npos) << errors[0].message;
  auto echoes = talker->Received<Heartbeat>();
  ASSERT_EQ(echoes.size(), 4u);
  for (uint64_t i = 0; i < 4; ++i) EXPECT_EQ(echoes[i], (Heartbeat{i + 1, 1001 + i}));
  EXPECT_TRUE(talker->Received<Error>().empty());
}

TEST_P(CoordinatorServiceTest, TheRoundDeadlineRunsOnTheServicesClock) {
  RoundConfig cfg;
  cfg.rounds = 1;
  cfg.clients_per_round = 2;
  cfg.min_available = 2;
  cfg.min_completed = 1;
  cfg.round_timeout = 60s;
  CoordinatorServiceOptions o;
  o.clock = &clock_;
  o.heartbeat_interval = 10min;
  o.client_timeout = 20min;
  StartCoordinator(cfg, o);
  const TimePoint t0 = clock_.Now();
  auto worker = Connect("worker", 2.0f), mute = Connect("mute", 50.0f);
  // The mute client joins and takes its task, but never answers it.
  mute->mute = true;
  mute->Start();
  worker->Start();
  ASSERT_TRUE(worker->WaitFor<TaskAssignment>(1));
  ASSERT_TRUE(worker->Sync());  // its update is in
  // The deadline timer is armed for the round's start + 60 s; nothing closes before it.
  ASSERT_TRUE(clock_.WaitForTimers(2));
  EXPECT_EQ(clock_.ArmedTimers()[0], t0 + 60s);
  clock_.Advance(60s);
  auto done = finished_.Wait(30s);
  ASSERT_TRUE(done.has_value());
  EXPECT_TRUE(done->ok()) << *done;
  ASSERT_EQ(rounds_.size(), 1u);
  EXPECT_EQ(rounds_[0].accepted, 1);
  EXPECT_EQ(rounds_[0].dropped, 1);
  EXPECT_DOUBLE_EQ(rounds_[0].duration_s, 60.0);
  EXPECT_FLOAT_EQ(model().data()[0], 2.0f);
}

TEST_P(CoordinatorServiceTest, AClientWithAnotherLayoutIsRefusedAtHelloAndNeverSelected) {
  RoundConfig cfg;
  cfg.rounds = 2;
  cfg.clients_per_round = 2;
  cfg.min_available = 2;
  cfg.round_timeout = 20s;
  StartCoordinator(cfg);
  // Connected first, so it would be selected were it admitted.
  auto wrong = Connect("wrong-shape", 100.0f);
  wrong->layout = {{"w", "F32", {9}}};
  auto renamed = Connect("renamed", 100.0f);
  renamed->layout = {{"weight", "F32", {8}}};
  auto liar = Connect("liar", 100.0f);  // the run's tensors, another fingerprint
  liar->lie_fingerprint = 12345;
  for (ScriptedClient* c : {wrong.get(), renamed.get(), liar.get()}) c->Start();
  for (ScriptedClient* c : {wrong.get(), renamed.get(), liar.get()}) ASSERT_TRUE(c->WaitClosed());
  auto a = Connect("a", 1.0f), b = Connect("b", 3.0f);
  a->Start();
  b->Start();
  auto done = finished_.Wait(30s);
  ASSERT_TRUE(done.has_value());
  EXPECT_TRUE(done->ok()) << *done;
  ASSERT_EQ(rounds_.size(), 2u);
  for (const RoundSummary& r : rounds_) {
    EXPECT_EQ(r.selected, 2);
    EXPECT_EQ(r.accepted, 2);
    EXPECT_EQ(r.dropped, 0);
  }
  EXPECT_FLOAT_EQ(model().data()[0], 4.0f);  // two rounds of mean(1, 3): no 100 ever folded in
  auto refusal = [](ScriptedClient& c) {
    auto errors = c.Received<Error>();
    EXPECT_EQ(errors.size(), 1u);
    EXPECT_EQ(c.tasks.load(), 0);
    EXPECT_TRUE(c.Received<Welcome>().empty());
    return errors.empty() ? Error{} : errors[0];
  };
  const Error shape = refusal(*wrong);
  EXPECT_EQ(shape.code, static_cast<uint32_t>(ErrorCode::kLayoutMismatch));
  EXPECT_EQ(shape.message,
            "the client's model layout is not this run's: tensor 0 is 'w' [8] F32 in the run's "
            "model and 'w' [9] F32 in the client's");
  const Error name = refusal(*renamed);
  EXPECT_NE(name.message.find("'w' [8] F32 in the run's model and 'weight' [8] F32"),
            std::string::npos)
      << name.message;
  EXPECT_NE(refusal(*liar).message.find("a fingerprint that does not match them"),
            std::string::npos);
}

// Issue 28, item 1: a Hello's num_examples bounds the client's updates, so the run's cap
// (run.max_num_examples) applies to it: a client announcing more is refused at Hello, naming the
// cap, and never selected.
TEST_P(CoordinatorServiceTest, AClientAnnouncingMoreExamplesThanTheRunsCapIsRefusedAtHello) {
  RoundConfig cfg;
  cfg.rounds = 1;
  cfg.clients_per_round = 1;
  cfg.max_num_examples = 1000;
  StartCoordinator(cfg);
  auto big = Connect("big-claim", 100.0f);
  big->announced = 1'000'000'000;
  big->Start();
  ASSERT_TRUE(big->WaitClosed());
  auto errors = big->Received<Error>();
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].message,
            "the client announces 1000000000 examples, more than this run's cap "
            "run.max_num_examples = 1000");
  EXPECT_TRUE(big->Received<Welcome>().empty());
  EXPECT_EQ(big->tasks.load(), 0);
  auto ok = Connect("at-the-cap", 1.0f);
  ok->announced = 1000;
  ok->Start();
  auto done = finished_.Wait(30s);
  ASSERT_TRUE(done.has_value());
  EXPECT_TRUE(done->ok()) << *done;
  EXPECT_FLOAT_EQ(model().data()[0], 1.0f);  // only at-the-cap's update
  ASSERT_FALSE(observer_.refusals.empty());
  EXPECT_EQ(observer_.refusals[0].client, "big-claim");
}

// Issue 27, item 5: refusals at Hello were only in the rate-limited log, which names the first
// per source address in a window; a second client refused from the same address was a count. Each
// is now a ClientRefused run event naming the client, its address, the code and the reason.
TEST_P(CoordinatorServiceTest, EveryClientRefusedAtHelloIsARunEventNamingItAndWhy) {
  RoundConfig cfg;
  cfg.rounds = 1;
  cfg.clients_per_round = 1;
  cfg.min_available = 1;
  cfg.round_timeout = 20s;
  StartCoordinator(cfg);
  auto wrong = Connect("wrong-shape", 100.0f);
  wrong->layout = {{"w", "F32", {9}}};
  auto old = Connect("old-codec", 100.0f);
  old->codecs = {"q8"};
  for (ScriptedClient* c : {wrong.get(), old.get()}) c->Start();
  for (ScriptedClient* c : {wrong.get(), old.get()}) ASSERT_TRUE(c->WaitClosed());
  auto good = Connect("good", 1.0f);
  good->Start();
  auto done = finished_.Wait(30s);
  ASSERT_TRUE(done.has_value());
  EXPECT_TRUE(done->ok()) << *done;
  // Read after the run: the observer runs on the engine strand, which is idle now.
  const std::vector<ClientRefused>& refusals = observer_.refusals;
  ASSERT_EQ(refusals.size(), 2u);
  std::map<std::string, ClientRefused> by_client;
  for (const ClientRefused& r : refusals) by_client[r.client] = r;
  ASSERT_EQ(by_client.count("wrong-shape"), 1u);
  ASSERT_EQ(by_client.count("old-codec"), 1u);
  const ClientRefused& shape = by_client["wrong-shape"];
  EXPECT_EQ(shape.code, "LAYOUT_MISMATCH");
  EXPECT_NE(shape.reason.find("'w' [8] F32 in the run's model and 'w' [9] F32"), std::string::npos)
      << shape.reason;
  EXPECT_EQ(shape.count, 1u);
  const ClientRefused& codec = by_client["old-codec"];
  EXPECT_EQ(codec.code, "PROTOCOL_VIOLATION");
  EXPECT_NE(codec.reason.find("codec 'dense'"), std::string::npos) << codec.reason;
  // One source address for both: the security log would have named only one of them.
  EXPECT_FALSE(shape.address.empty());
  EXPECT_EQ(shape.address, codec.address);
  EXPECT_EQ(shape.address, GetParam() == Kind::kTls ? "127.0.0.1" : "memory");
  // Between RunStarted and RunFinished, like every event.
  ASSERT_GE(observer_.names.size(), 4u);
  EXPECT_EQ(observer_.names.front(), "run_started");
  EXPECT_EQ(observer_.names.back(), "run_finished");
}

TEST_P(CoordinatorServiceTest, AFailedRunSaysSoInItsGoodbye) {
  RoundConfig cfg;
  cfg.rounds = 2;
  cfg.clients_per_round = 2;
  cfg.min_available = 2;
  cfg.min_completed = 2;
  cfg.max_round_attempts = 1;
  cfg.round_timeout = 60s;
  CoordinatorServiceOptions o;
  o.clock = &clock_;
  o.heartbeat_interval = 10min;
  o.client_timeout = 20min;
  StartCoordinator(cfg, o);
  auto worker = Connect("worker", 2.0f), mute = Connect("mute", 50.0f);
  mute->mute = true;
  mute->Start();
  worker->Start();
  ASSERT_TRUE(worker->WaitFor<TaskAssignment>(1));
  ASSERT_TRUE(worker->Sync());
  ASSERT_TRUE(clock_.WaitForTimers(2));
  clock_.Advance(60s);  // the round's only attempt fails at its deadline: 1 of 2 updates
  auto done = finished_.Wait(30s);
  ASSERT_TRUE(done.has_value());
  EXPECT_EQ(done->code(), StatusCode::kUnavailable) << *done;
  for (ScriptedClient* c : {worker.get(), mute.get()}) {
    ASSERT_TRUE(c->WaitClosed());
    auto bye = c->Received<Goodbye>();
    ASSERT_EQ(bye.size(), 1u);
    EXPECT_EQ(bye[0].code, static_cast<uint32_t>(ErrorCode::kRunFailed));
    EXPECT_NE(bye[0].reason.find("round 1 failed 1 attempts"), std::string::npos) << bye[0].reason;
  }
}

// Finding 4 of the hostile test: one valid certificate could make the coordinator hold up to
// max_message_bytes (1 GiB) per connection, Hello or not. Now a message before Hello may be at most
// a control message (1 MiB), and after it at most an update of this run (the test model: 8 floats,
// so about half a MiB): larger ones are refused as they are announced, by 20 connections at once.
TEST_P(CoordinatorServiceTest, AuthenticatedConnectionsCannotMakeTheCoordinatorHoldLargeMessages) {
  RoundConfig cfg;
  cfg.rounds = 1;
  cfg.clients_per_round = 2;
  cfg.min_available = 2;
  cfg.min_completed = 2;  // a hostile client still registered when a round opens is retried
  cfg.round_timeout = 20s;
  StartCoordinator(cfg);
  // One 4 MiB update, encoded once and shared by every hostile connection.
  UpdateSubmission big;
  big.round = 1;
  big.update.codec = "dense";
  big.update.num_floats = 8;
  big.update.bytes = SharedBytes(std::vector<uint8_t>(size_t{4} << 20, 7));
  ProtocolLimits limits;
  auto encoded = std::make_shared<const OutboundMessage>(*EncodeOutbound(big, limits, 1));
  std::vector<std::unique_ptr<ScriptedClient>> hostile;
  for (int i = 0; i < 20; ++i) {
    hostile.push_back(Connect("hostile-" + std::to_string(i), 1.0f));
    ScriptedClient& c = *hostile.back();
    c.mute = true;
    if (i % 2 == 0) {
      // Before Hello: the conn is started without a Hello (Start() sends one), so start reading
      // by hand and send the update first.
      c.started = true;
      c.conn->Start(
          [&c](Message m) {
            std::lock_guard<std::mutex> lock(c.mu);
            c.received.push_back(std::move(m));
            c.cv.notify_all();
          },
          [&c](Status st) {
            std::lock_guard<std::mutex> lock(c.mu);
            c.closed = st;
            c.cv.notify_all();
          });
      c.conn->SendEncoded(encoded);
    } else {
      c.Start();  // Hello (the run's layout: admitted), then the update
      ASSERT_TRUE(c.WaitFor<Welcome>(1));
      c.conn->SendEncoded(encoded);
    }
  }
  for (int i = 0; i < 20; ++i) {
    ScriptedClient& c = *hostile[static_cast<size_t>(i)];
    ASSERT_TRUE(c.WaitClosed()) << i;
    auto errors = c.Received<Error>();
    ASSERT_EQ(errors.size(), 1u) << i;
    EXPECT_EQ(errors[0].code, static_cast<uint32_t>(ErrorCode::kMessageTooLarge)) << i;
    const std::string cap = i % 2 == 0 ? "the cap is 1048576 bytes" : "the cap is 524320 bytes";
    EXPECT_NE(errors[0].message.find("UpdateSubmission transfer announces"), std::string::npos)
        << errors[0].message;
    EXPECT_NE(errors[0].message.find(cap), std::string::npos) << i << ": " << errors[0].message;
  }
  // The run is unaffected: two honest clients complete it.
  auto a = Connect("a", 1.0f), b = Connect("b", 3.0f);
  a->Start();
  b->Start();
  auto done = finished_.Wait(30s);
  ASSERT_TRUE(done.has_value());
  EXPECT_TRUE(done->ok()) << *done;
  EXPECT_FLOAT_EQ(model().data()[0], 2.0f);
}

// An admitted client that sends update after update while the engine strand is busy (a long
// evaluation, a checkpoint, a fold) is read no further than about one update ahead of the engine:
// before, every update it sent waited, decoded, in the coordinator's memory (200 of half a MiB
// here, all read within the stall). Reading resumes once the engine has taken them, nothing is
// lost or refused for the wait, the client hears keepalives meanwhile and is not closed as silent
// (the client timeout is 1.5 s, the stall 2.5 s), and another client's messages go on being read.
TEST_P(CoordinatorServiceTest, AClientIsReadNoFurtherAheadOfABusyEngineThanAboutOneUpdate) {
  RoundConfig cfg;
  cfg.rounds = 1;
  cfg.clients_per_round = 3;
  cfg.min_available = 3;  // no round opens: every update below names no task and is refused
  cfg.round_timeout = 60s;
  CoordinatorServiceOptions o;
  o.client_timeout = 1500ms;     // the scripted clients send no heartbeats of their own
  o.heartbeat_interval = 250ms;  // the silence sweep's period
  StartCoordinator(cfg, o);
  auto flood = Connect("edge-flood", 1.0f), other = Connect("edge-other", 1.0f);
  flood->mute = other->mute = true;
  flood->Start();
  other->Start();
  ASSERT_TRUE(flood->WaitFor<Welcome>(1) && other->WaitFor<Welcome>(1));

  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  // The engine strand is busy (it holds one of the two I/O threads; the other goes on reading).
  service_->RunOnEngine([released] { released.wait(); });
  UpdateSubmission u;
  u.round = 7;
  u.task_id = 99;
  u.num_examples = 100;
  u.update.codec = "dense";
  u.update.num_floats = 8;
  u.update.bytes = SharedBytes(std::vector<uint8_t>(500'000, 1));  // under the cap of 524,320
  auto encoded = std::make_shared<const OutboundMessage>(*EncodeOutbound(u, ProtocolLimits{}, 1));
  // 200 by default; TRIBUTARY_FLOOD_UPDATES=400 for docs/operations.md's measurement.
  const char* env = std::getenv("TRIBUTARY_FLOOD_UPDATES");
  const int kSent = env ? std::max(8, std::atoi(env)) : 200;
  const uint64_t peak_before = PeakRssBytes();
  std::atomic<int> written{0};
  for (int i = 0; i < kSent; ++i)
    flood->conn->SendEncoded(encoded, [&written](Status s) { written += s.ok(); });
  // Two keepalive intervals (budget_wait_keepalive, 1 s); the other client says something every
  // half second, and is answered although the engine is busy.
  for (int i = 0; i < 5; ++i) {
    std::this_thread::sleep_for(500ms);
    EXPECT_TRUE(other->Sync()) << "another client's heartbeat went unanswered";
  }
  const uint64_t grown = PeakRssBytes() - peak_before;
  std::printf("%d updates sent, %d written while the engine was busy; peak RSS grew %.1f MB\n",
              kSent, written.load(), static_cast<double>(grown) / 1e6);
  // What left the client is what the coordinator read, plus what the socket buffers hold (about
  // 6 MiB on loopback here; the kernel may let them grow to tcp_rmem's maximum): far from all.
  EXPECT_LE(written.load(), kSent / 2);
  EXPECT_GE(written.load(), 2);
  size_t keepalives = 0;
  for (const Heartbeat& h : flood->Received<Heartbeat>()) keepalives += h.sequence == 0;
  EXPECT_GE(keepalives, 1u);

  release.set_value();
  for (int i = 0; i < 2000 && written.load() < kSent; ++i) std::this_thread::sleep_for(10ms);
  ASSERT_EQ(written.load(), kSent);
  ASSERT_TRUE(flood->Sync());  // the service has handed every update to the engine strand
  // Every update reached the engine (each refused: it names no task), and the client is still in.
  Waiter<size_t> refused;
  service_->RunOnEngine([this, &refused] {
    size_t n = 0;
    for (const std::string& name : observer_.names) n += name == "update_refused";
    refused.Callback()(n);
  });
  const std::optional<size_t> n = refused.Wait();
  ASSERT_TRUE(n.has_value());
  EXPECT_EQ(*n, static_cast<size_t>(kSent));
  std::lock_guard<std::mutex> lock(flood->mu);
  EXPECT_FALSE(flood->closed.has_value()) << "the held client was closed";
}

INSTANTIATE_TEST_SUITE_P(Transports, CoordinatorServiceTest,
                         ::testing::Values(Kind::kInMemory, Kind::kTls),
                         [](const auto& p) { return p.param == Kind::kTls ? "Tls" : "InMemory"; });

}  // namespace
}  // namespace tributary
