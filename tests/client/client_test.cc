// tributary::Client, the public C++ API, against a fake coordinator over real mutual TLS.
#include "tributary/client.h"

#include <gtest/gtest.h>

#include <boost/asio/ip/tcp.hpp>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <future>
#include <mutex>
#include <string_view>

#include "client/client_state.h"
#include "client/secagg_task.h"
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

// An app that stops its client and destroys it at once (no wait()) still says Goodbye, and the
// destructor returns promptly. The destructor now lets the I/O thread finish what is being written
// (up to 1 s) instead of stopping the io_context at once, which cut off a write still in flight
// (a Goodbye queued behind a large update). Here nothing large is in flight and asio writes the
// Goodbye at once, so this checks the behaviour, not that race (which it does not reproduce).
TEST(ClientTest, DestroyedRightAfterStopItStillSaysGoodbye) {
  TlsCoordinatorFixture fx;
  for (int i = 0; i < 5; ++i) {
    SCOPED_TRACE(i);
    auto client = Client::Create(OptionsFor(fx.ClientFiles("edge-1"), fx.address()),
                                 std::make_shared<FakeTrainer>());
    ASSERT_TRUE(client.ok()) << client.status();
    ASSERT_TRUE((*client)->start().ok());
    auto session = fx.coordinator().WaitSession(static_cast<size_t>(i));
    ASSERT_TRUE(session);
    session->Send(Task(1));  // once answered, the client has its Welcome
    ASSERT_TRUE(session->Next<UpdateSubmission>());
    (*client)->stop();
    const auto before = std::chrono::steady_clock::now();
    client->reset();  // destroyed at once, without wait()
    const auto took = std::chrono::steady_clock::now() - before;
    EXPECT_TRUE(session->Next<Goodbye>(2s)) << "the Goodbye was lost";
    EXPECT_LT(took, 3s);  // bounded by the destructor's drain limit (1 s) and the join
  }
}

// Counts the client's connection attempts (its "connecting to" lines) through the process's log
// handler, which it installs for its lifetime and removes after.
class AttemptCounter {
 public:
  AttemptCounter() {
    SetLogHandler(LogLevel::kDebug, [this](LogLevel, std::string_view line) {
      if (line.starts_with("connecting to ")) {
        std::lock_guard<std::mutex> lock(mu_);
        ++attempts_;
        cv_.notify_all();
      }
    });
  }
  ~AttemptCounter() { SetLogHandler(LogLevel::kOff, nullptr); }
  int attempts() {
    std::lock_guard<std::mutex> lock(mu_);
    return attempts_;
  }
  bool WaitFor(int n, std::chrono::milliseconds timeout = 20s) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return attempts_ >= n; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int attempts_ = 0;
};

// run() of a client that would retry forever, were its failure not final: how it ended, within
// `limit` (after which the test stops it), and how long it took.
struct Ending {
  bool within_limit;
  Status status;
  std::chrono::steady_clock::duration took;
};
Ending RunBounded(Client& client, std::chrono::seconds limit = 10s) {
  const auto t0 = std::chrono::steady_clock::now();
  auto run = std::async(std::launch::async, [&] { return client.run(); });
  const bool within = run.wait_for(limit) == std::future_status::ready;
  if (!within) client.stop();
  Status s = run.get();
  return {within, std::move(s), std::chrono::steady_clock::now() - t0};
}

// A client made from `o` whose first attempt fails for good (a certificate the other side
// refuses): run() ends within the limit, PermissionDenied, at that one attempt, its message
// holding each of `texts`.
void ExpectPermissionDeniedAtTheFirstAttempt(const ClientOptions& o,
                                             std::initializer_list<std::string_view> texts) {
  auto client = Client::Create(o, std::make_shared<FakeTrainer>());
  ASSERT_TRUE(client.ok()) << client.status();
  AttemptCounter counter;
  const Ending end = RunBounded(**client);
  EXPECT_TRUE(end.within_limit);
  EXPECT_EQ(end.status.code(), StatusCode::kPermissionDenied) << end.status;
  for (std::string_view text : texts)
    EXPECT_NE(end.status.message().find(text), std::string::npos) << text << ": " << end.status;
  EXPECT_EQ(counter.attempts(), 1);
}

TEST(ClientTest, ACertificateFromAnotherCaEndsTheRunAtTheFirstAttemptNamingTheCause) {
  TlsCoordinatorFixture fx;
  Result<PemPair> rogue_ca = MakeCaCertificate("Rogue CA");
  ASSERT_TRUE(rogue_ca.ok());
  ClientOptions o = OptionsFor(fx.ClientFiles("edge-9", &*rogue_ca), fx.address());
  o.backoff.max_attempts = 0;  // retry until stopped
  auto client = Client::Create(o, std::make_shared<FakeTrainer>());
  ASSERT_TRUE(client.ok()) << client.status();
  AttemptCounter counter;
  const Ending end = RunBounded(**client);
  EXPECT_TRUE(end.within_limit) << "still retrying after 10 s, " << counter.attempts()
                                << " attempts";
  EXPECT_EQ(end.status.code(), StatusCode::kPermissionDenied) << end.status;
  EXPECT_NE(end.status.message().find("tlsv1 alert unknown ca"), std::string::npos) << end.status;
  EXPECT_NE(end.status.message().find("does not trust the CA that issued"), std::string::npos)
      << end.status;
  EXPECT_NE(end.status.message().find("not retrying"), std::string::npos) << end.status;
  EXPECT_EQ(counter.attempts(), 1);
  EXPECT_LT(end.took, 5s);
  EXPECT_TRUE((*client)->client_id().empty());
  EXPECT_EQ(fx.coordinator().session_count(), 0u);  // refused in the handshake, never a session
}

// server_name reaches the TLS check: the test coordinator's certificate names localhost and
// 127.0.0.1, so a client dialling 127.0.0.1 but verifying another name is refused at once.
TEST(ClientTest, AServerNameTheCoordinatorsCertificateLacksEndsTheRunAtTheFirstAttempt) {
  TlsCoordinatorFixture fx;
  ClientOptions o = OptionsFor(fx.ClientFiles("edge-8"), fx.address());
  o.server_name = "coordinator.example.org";
  ExpectPermissionDeniedAtTheFirstAttempt(o, {"mismatch", "coordinator.example.org"});
  EXPECT_EQ(fx.coordinator().session_count(), 0u);
}

TEST(ClientTest, AnExpiredCertificateEndsTheRunAtTheFirstAttempt) {
  TlsCoordinatorFixture fx;
  CertOptions expired;
  expired.valid_days = 1;
  expired.not_before_offset_s = -3 * 86400;
  ExpectPermissionDeniedAtTheFirstAttempt(
      OptionsFor(fx.ClientFiles("edge-old", nullptr, expired), fx.address()), {"expired"});
}

TEST(ClientTest, ACoordinatorCertificateFromAnotherCaEndsTheRunAtTheFirstAttempt) {
  TlsCoordinatorFixture fx;
  auto files = fx.ClientFiles("edge-5");
  Result<PemPair> rogue_ca = MakeCaCertificate("Rogue CA");
  ASSERT_TRUE(rogue_ca.ok());
  files.ca = fx.dir().file("rogue-ca.crt");  // this client trusts another CA than the server's
  TlsCoordinatorFixture::Write(files.ca, rogue_ca->cert_pem);
  ExpectPermissionDeniedAtTheFirstAttempt(OptionsFor(files, fx.address()),
                                          {"certificate verify failed", "(certificate verify: "});
}

TEST(ClientTest, NothingListeningIsRetriedUntilACoordinatorAppears) {
  // A port with nothing on it: connection refused, which heals once a coordinator starts there.
  std::string address;
  {
    boost::asio::io_context io;
    boost::asio::ip::tcp::acceptor probe(
        io, boost::asio::ip::tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), 0));
    address = "127.0.0.1:" + std::to_string(probe.local_endpoint().port());
  }
  TempDir dir;
  Result<PemPair> cert = MakeClientCertificate(TestPki::Get().ca, "edge-late");
  ASSERT_TRUE(cert.ok());
  TlsCoordinatorFixture::Files files{dir.file("ca.crt"), dir.file("c.crt"), dir.file("c.key")};
  TlsCoordinatorFixture::Write(files.ca, TestPki::Get().ca.cert_pem);
  TlsCoordinatorFixture::Write(files.cert, cert->cert_pem);
  TlsCoordinatorFixture::Write(files.key, cert->key_pem);
  auto client = Client::Create(OptionsFor(files, address), std::make_shared<FakeTrainer>());
  ASSERT_TRUE(client.ok()) << client.status();
  AttemptCounter counter;
  auto run = std::async(std::launch::async, [&] { return (*client)->run(); });
  ASSERT_TRUE(counter.WaitFor(3)) << "the client stopped redialling after a refused connection";
  TlsCoordinatorFixture fx({}, address);
  auto session = fx.coordinator().WaitSession(0);
  ASSERT_TRUE(session);
  EXPECT_EQ(session->peer_id(), "edge-late");
  session->Send(Goodbye{"finished"});
  ASSERT_EQ(run.wait_for(20s), std::future_status::ready);
  EXPECT_TRUE(run.get().ok());
  EXPECT_GE(counter.attempts(), 3);  // the first two were refused (a third began after them)
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
  o.server_name = std::string("coord\0example", 13);
  EXPECT_NE(error_of(o, trainer).find("server_name"), std::string::npos);
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

// Secure aggregation's identity reads the client's certificate whole, and refuses a file too large
// to be one (before reading it), naming it.
TEST(ClientTest, SecAggIdentityReadsTheCertificateAndBoundsItsSize) {
  TlsCoordinatorFixture fx;
  const auto files = fx.ClientFiles("edge-7");
  auto id = SecAggIdentity::FromFiles(files.key, files.cert, files.ca);
  ASSERT_TRUE(id.ok()) << id.status();
  std::ifstream in(files.cert, std::ios::binary);
  const std::string pem((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_GT(pem.size(), 100u);
  EXPECT_EQ((*id)->cert_pem, pem);

  const std::string missing = fx.dir().file("missing.crt");
  auto none = SecAggIdentity::FromFiles(files.key, missing, files.ca);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), StatusCode::kNotFound);
  EXPECT_NE(none.status().ToString().find(missing), std::string::npos) << none.status();

  const std::string huge = fx.dir().file("huge.crt");
  std::ofstream(huge, std::ios::binary) << std::string((size_t{1} << 20) + 1, 'A');
  auto big = SecAggIdentity::FromFiles(files.key, huge, files.ca);
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.status().code(), StatusCode::kOutOfRange);
  EXPECT_NE(big.status().ToString().find(huge), std::string::npos) << big.status();
  EXPECT_NE(big.status().ToString().find("certificate"), std::string::npos) << big.status();
}

// Two samples for FakeTrainer::predict, and what it computes from Task()'s global model
// (fc.weight = [[1, 2, 3], [4, 5, 6]], fc.bias = [7, 8, 9]), worked out by hand.
const std::vector<float> kInputs = {1.0f, 2.0f, -1.0f, 0.5f};
const std::vector<float> kTaskOutputs = {16.0f, 20.0f, 24.0f, 8.0f, 8.5f, 9.0f};

TEST(ClientTest, PredictBeforeAnyGlobalModelIsAFailedPrecondition) {
  TlsCoordinatorFixture fx;
  ClientOptions o = OptionsFor(fx.ClientFiles("edge-5"), fx.address());
  o.state_dir = fx.dir().file("state");
  auto client = Client::Create(o, std::make_shared<FakeTrainer>());
  ASSERT_TRUE(client.ok()) << client.status();
  Result<std::vector<float>> r = (*client)->predict(kInputs, 2);
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition) << r.status();
  EXPECT_NE(r.status().message().find("no global model yet"), std::string::npos) << r.status();
  EXPECT_EQ((*client)->global_model(), std::nullopt);
  EXPECT_EQ((*client)->predict(kInputs, 0).status().code(), StatusCode::kInvalidArgument);
}

TEST(ClientTest, PredictUsesTheLatestGlobalModelAlsoAfterARestart) {
  TlsCoordinatorFixture fx;
  const auto files = fx.ClientFiles("edge-6");
  ClientOptions o = OptionsFor(files, fx.address());
  o.state_dir = fx.dir().file("state");
  auto trainer = std::make_shared<FakeTrainer>();
  auto client = Client::Create(o, trainer);
  ASSERT_TRUE(client.ok()) << client.status();
  auto run = std::async(std::launch::async, [&] { return (*client)->run(); });
  auto session = fx.coordinator().WaitSession(0);
  ASSERT_TRUE(session);

  // After a fit: the model the coordinator sent, not the one the client trained from it.
  session->Send(Task(2));
  ASSERT_TRUE(session->Next<UpdateSubmission>());
  Result<std::vector<float>> r = (*client)->predict(kInputs, 2);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(*r, kTaskOutputs);
  EXPECT_EQ((*client)->global_model(), (GlobalModelInfo{2, 1}));

  // After an evaluation of a newer model: that one (twice the weights, so twice the outputs).
  ModelWeights g2 = FakeTrainer::Layout();
  for (size_t i = 0; i < g2.size(); ++i) g2.data()[i] = 2.0f * (1.0f + static_cast<float>(i));
  EvaluateTask eval;
  eval.round = 3;
  eval.model_version = 2;
  eval.model =
      ModelPayload{g2.fingerprint(), std::vector<float>(g2.data().begin(), g2.data().end())};
  session->Send(eval);
  ASSERT_TRUE(session->Next<EvaluateResult>());
  std::vector<float> twice = kTaskOutputs;
  for (float& v : twice) v *= 2.0f;
  r = (*client)->predict(kInputs, 2);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(*r, twice);
  EXPECT_EQ((*client)->global_model(), (GlobalModelInfo{3, 2}));
  // The trainer's own checks come back as they are.
  EXPECT_EQ((*client)->predict(std::span(kInputs).first(3), 2).status().code(),
            StatusCode::kInvalidArgument);

  session->Send(Goodbye{"finished"});
  ASSERT_EQ(run.wait_for(20s), std::future_status::ready);
  EXPECT_TRUE(run.get().ok());
  client->reset();
  EXPECT_EQ(trainer->overlapping_calls, 0);
  const std::string saved = o.state_dir + "/" + ClientState::kGlobalModelFileName;
  ASSERT_TRUE(std::filesystem::exists(saved));

  // A new client on the same state dir predicts with the saved model before it connects.
  {
    auto restarted = Client::Create(o, std::make_shared<FakeTrainer>());
    ASSERT_TRUE(restarted.ok()) << restarted.status();
    EXPECT_EQ((*restarted)->global_model(), (GlobalModelInfo{3, 2}));
    r = (*restarted)->predict(kInputs, 2);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(*r, twice);
  }

  // A damaged file is not used (the next task brings a model); the client still starts.
  {
    std::fstream f(saved, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(-1, std::ios::end);
    const char last = static_cast<char>(f.get());
    f.seekp(-1, std::ios::end);
    f.put(static_cast<char>(last ^ 0x40));
  }
  auto damaged = Client::Create(o, std::make_shared<FakeTrainer>());
  ASSERT_TRUE(damaged.ok()) << damaged.status();
  EXPECT_EQ((*damaged)->global_model(), std::nullopt);
  EXPECT_EQ((*damaged)->predict(kInputs, 2).status().code(), StatusCode::kFailedPrecondition);
}

TEST(ClientTest, PredictWaitsForAFitInProgressAndIsRefusedInsideOne) {
  TlsCoordinatorFixture fx;
  auto trainer = std::make_shared<FakeTrainer>();
  auto client = Client::Create(OptionsFor(fx.ClientFiles("edge-7"), fx.address()), trainer);
  ASSERT_TRUE(client.ok()) << client.status();
  Client* c = client->get();
  std::promise<Status> inside;  // what predict said when called from inside fit
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  // Lets the fit go also when an assertion below returns early (the client's destructor waits
  // for it).
  bool fit_released = false;
  auto release_fit = [&] {
    if (!fit_released) release.set_value();
    fit_released = true;
  };
  struct AtExit {
    std::function<void()> run;
    ~AtExit() { run(); }
  } release_at_exit{release_fit};
  trainer->during_fit = [&, released] {
    inside.set_value(c->predict(kInputs, 2).status());
    released.wait();
  };
  ASSERT_TRUE(c->start().ok());
  auto session = fx.coordinator().WaitSession(0);
  ASSERT_TRUE(session);
  session->Send(Task(2));

  // The fit is running now.
  std::future<Status> inside_status = inside.get_future();
  ASSERT_EQ(inside_status.wait_for(20s), std::future_status::ready);
  const Status s = inside_status.get();
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s;
  EXPECT_NE(s.message().find("inside a Trainer call"), std::string::npos) << s;
  auto outside = std::async(std::launch::async, [&] { return c->predict(kInputs, 2); });
  EXPECT_EQ(outside.wait_for(100ms), std::future_status::timeout);  // waiting for fit
  EXPECT_EQ(c->global_model(), (GlobalModelInfo{2, 1}));            // does not wait
  release_fit();
  ASSERT_EQ(outside.wait_for(20s), std::future_status::ready);
  Result<std::vector<float>> r = outside.get();
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(*r, kTaskOutputs);
  ASSERT_TRUE(session->Next<UpdateSubmission>());
  EXPECT_EQ(trainer->overlapping_calls, 0);
  EXPECT_EQ(trainer->predict_calls, 1);
  c->stop();
  EXPECT_EQ(c->wait().code(), StatusCode::kAborted);
}

}  // namespace
}  // namespace tributary
