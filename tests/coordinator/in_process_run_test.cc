// The whole run in one process: N real ClientRuntimes (with a fake trainer, so no data is needed)
// against the real CoordinatorService and RunDriver, over both transports (in-memory and mutual
// TLS on loopback). The model that comes out is the FedAvg of what the clients sent, every client
// ends with the coordinator's Goodbye, and the run's events say so.
#include <gtest/gtest.h>

#include <boost/asio/thread_pool.hpp>
#include <cstdlib>
#include <filesystem>

#include "client/client_runtime.h"
#include "coordinator/coordinator_service.h"
#include "core/process_stats.h"
#include "crypto/cert_authority.h"
#include "crypto/signing.h"
#include "protocol/in_memory_transport.h"
#include "protocol/tls_transport.h"
#include "tests/client/fake_trainer.h"
#include "tests/client/test_secagg_identity.h"
#include "tests/coordinator/run_recorder.h"
#include "tests/protocol/transport_test_util.h"

namespace tributary {
namespace {

using namespace std::chrono_literals;
using testing::FakeTrainer;
using testing::IoThreads;
using testing::TestPki;
using testing::Waiter;

enum class Kind { kInMemory, kTls };

class InProcessRunTest : public ::testing::TestWithParam<Kind> {
 protected:
  std::unique_ptr<Transport> MakeTransport(const std::string& id) {
    if (GetParam() == Kind::kTls) {
      return std::move(*TlsTransport::Create(
          io_.io(), {TransportOptions{}, id.empty() ? TestPki::Get().ServerContext() : nullptr,
                     id.empty() ? nullptr : TestPki::Get().ClientContext(id)}));
    }
    return std::move(*InMemoryTransport::Create(io_.io(), network_, {{}, id, 1 << 20}));
  }

  // Runs `clients` ClientRuntimes against a coordinator running `run`; returns the run's outcome.
  Status Run(RunConfig run, int clients, std::chrono::seconds limit = std::chrono::seconds(60)) {
    RunDriver::Options options;
    options.initial_model = FakeTrainer::Layout();  // zeros
    auto driver = RunDriver::Create(run, std::move(options));
    if (!driver.ok()) return driver.status();
    driver_ = std::move(*driver);
    if (record_) driver_->AddObserver(&recorder_);
    for (RunObserver* o : extra_observers_) driver_->AddObserver(o);
    driver_->Start();
    server_ = MakeTransport("");
    CoordinatorServiceOptions so;
    so.listen_address = GetParam() == Kind::kTls ? "127.0.0.1:0" : "coordinator";
    so.heartbeat_interval = 200ms;
    so.client_timeout = 20s;
    so.engine_executor = engine_thread_.get_executor();
    auto service = std::make_shared<CoordinatorService>(io_.io(), *server_, *driver_, so);
    Waiter<Status> finished;
    service->set_on_finished(finished.Callback());
    TRIB_RETURN_IF_ERROR(service->Start());
    for (int i = 0; i < clients; ++i) {
      const std::string id = "edge-" + std::to_string(i);
      transports_.push_back(MakeTransport(id));
      trainers_.push_back(std::make_shared<FakeTrainer>());
      if (i == failing_client_)
        trainers_.back()->during_fit = [] { throw std::runtime_error("out of GPU memory"); };
      ClientRuntimeOptions ro;
      ro.address = service->address();
      ro.num_examples = 100;
      ro.backoff.initial_delay = 10ms;
      ro.backoff.max_delay = 50ms;
      if (run.round.secagg.enabled) ro.secagg_identity = SecAggIdentityFor(id);
      auto rt = ClientRuntime::Create(io_.io(), *transports_.back(), trainers_.back(), ro);
      if (!rt.ok()) return rt.status();
      TRIB_RETURN_IF_ERROR((*rt)->Start());
      runtimes_.push_back(std::move(*rt));
    }
    std::optional<Status> outcome = finished.Wait(limit);
    if (!outcome)
      return Status::DeadlineExceeded("the run did not finish within " +
                                      std::to_string(limit.count()) + " s");
    for (auto& rt : runtimes_) client_results_.push_back(rt->Wait());
    return *outcome;
  }

  // A signing identity for secure aggregation, from a CA made once per test.
  std::shared_ptr<const SecAggIdentity> SecAggIdentityFor(const std::string& id) {
    if (secagg_ca_.cert_pem.empty()) secagg_ca_ = *MakeCaCertificate("SecAgg Test CA");
    return testing::MakeSecAggIdentity(secagg_ca_, id);
  }

  ~InProcessRunTest() override {
    runtimes_.clear();
    io_.Stop();
  }

  // Declared first, destroyed last: handlers still queued when io_ goes may hold the service,
  // whose engine strand belongs to this pool (TSan: a destroyed strand service's mutex).
  boost::asio::thread_pool engine_thread_{1};
  IoThreads io_{2};
  std::shared_ptr<InMemoryNetwork> network_ = std::make_shared<InMemoryNetwork>();
  std::unique_ptr<Transport> server_;
  std::vector<std::unique_ptr<Transport>> transports_;
  std::vector<std::shared_ptr<FakeTrainer>> trainers_;
  std::vector<std::unique_ptr<ClientRuntime>> runtimes_;
  std::vector<Status> client_results_;
  testing::RunRecorder recorder_;
  bool record_ = true;       // the soak turns it off: it keeps every event
  int failing_client_ = -1;  // this client's every fit throws
  std::vector<RunObserver*> extra_observers_;
  std::unique_ptr<RunDriver> driver_;
  PemPair secagg_ca_;
};

RunConfig SmallRun() {
  RunConfig run;
  run.model = "fake";
  run.round.rounds = 3;
  run.round.clients_per_round = 4;
  run.round.min_available = 4;
  run.round.round_timeout = 30s;
  run.round.fit.lr = 0.25f;
  run.round.federated_eval_every = 1;
  run.eval_every = 0;
  return run;
}

// The same run with secure aggregation: the coordinator sees only masked inputs, and the model
// is the same FedAvg within the quantization (16 bits over [-4, 4]: a level of 1.2e-4 per round).
TEST_P(InProcessRunTest, SecureAggregationGivesTheSameModelWithinTheQuantization) {
  RunConfig run = SmallRun();
  run.round.federated_eval_every = 0;
  run.round.secagg.enabled = true;
  run.round.secagg.clip = 4.0f;
  run.round.secagg.quant_bits = 16;
  const Status outcome = Run(run, 4);
  ASSERT_TRUE(outcome.ok()) << outcome;
  const ModelWeights& m = driver_->engine().model();
  const float step = 8.0f / 65535.0f;
  for (size_t i = 0; i < m.size(); ++i)
    EXPECT_NEAR(m.data()[i], 3 * 0.25f * static_cast<float>(i + 1), 3 * step) << i;
  for (const Status& s : client_results_) EXPECT_TRUE(s.ok()) << s;
  auto closed = recorder_.All<RoundClosed>();
  ASSERT_EQ(closed.size(), 3u);
  for (const RoundClosed& c : closed) {
    EXPECT_EQ(c.summary.accepted, 4);
    EXPECT_EQ(c.summary.num_examples, 400u);  // the total weight, learned from the sum
    EXPECT_EQ(c.summary.attempts, 1);
  }
  EXPECT_TRUE(recorder_.All<UpdateAccepted>().empty());  // no plaintext update was ever seen
}

TEST_P(InProcessRunTest, TheModelIsTheFedAvgOfTheClientsUpdatesAndEveryClientIsToldGoodbye) {
  const Status outcome = Run(SmallRun(), 4);
  ASSERT_TRUE(outcome.ok()) << outcome;
  // Each round every client adds lr * (i + 1) to weight i; their mean is the same.
  const ModelWeights& m = driver_->engine().model();
  for (size_t i = 0; i < m.size(); ++i)
    EXPECT_FLOAT_EQ(m.data()[i], 3 * 0.25f * static_cast<float>(i + 1)) << i;
  ASSERT_EQ(client_results_.size(), 4u);
  for (const Status& s : client_results_) EXPECT_TRUE(s.ok()) << s;  // the Goodbye
  for (const auto& t : trainers_) EXPECT_EQ(t->fit_calls.load(), 3);
  auto closed = recorder_.All<RoundClosed>();
  ASSERT_EQ(closed.size(), 3u);
  for (const RoundClosed& c : closed) {
    EXPECT_EQ(c.summary.accepted, 4);
    EXPECT_EQ(c.summary.num_examples, 400u);
    EXPECT_EQ(c.summary.client_metrics.at("train_loss"), 1.0);
  }
  EXPECT_EQ(recorder_.All<UpdateAccepted>().size(), 12u);
  EXPECT_TRUE(recorder_.All<UpdateRefused>().empty());
  // Federated evaluation: every client's fake accuracy is 0.75.
  auto fed = recorder_.All<FederatedEvaluated>();
  ASSERT_FALSE(fed.empty());
  EXPECT_EQ(fed[0].summary.clients, 4);
  EXPECT_DOUBLE_EQ(fed[0].summary.accuracy, 0.75);
  auto finished = recorder_.All<RunFinished>();
  ASSERT_EQ(finished.size(), 1u);
  EXPECT_TRUE(finished[0].ok);
  EXPECT_EQ(finished[0].rounds_done, 3u);
  EXPECT_EQ(finished[0].model_hash, m.content_hash());
}

// A client whose every fit throws tells the coordinator (TaskFailed), and each round closes with
// the other three as soon as they have answered: three rounds finish well within one round's
// 30 s deadline (the limit below), which they could not if any round waited for the failing
// client. The failing client stays in the run to its end.
TEST_P(InProcessRunTest, AClientWhoseFitFailsDoesNotHoldItsRoundsToTheDeadline) {
  RunConfig run = SmallRun();
  run.round.federated_eval_every = 0;
  run.round.min_completed = 3;
  failing_client_ = 2;
  const Status outcome = Run(run, 4, std::chrono::seconds(20));
  ASSERT_TRUE(outcome.ok()) << outcome;
  auto closed = recorder_.All<RoundClosed>();
  ASSERT_EQ(closed.size(), 3u);
  for (const RoundClosed& c : closed) {
    EXPECT_EQ(c.summary.accepted, 3);
    EXPECT_EQ(c.summary.dropped, 1);
    EXPECT_EQ(c.summary.refused, 0);
    EXPECT_LT(c.summary.duration_s, 15.0);
  }
  EXPECT_EQ(trainers_[2]->fit_calls.load(), 3);  // selected every round (cool-downs fill in)
  const ModelWeights& m = driver_->engine().model();
  for (size_t i = 0; i < m.size(); ++i)
    EXPECT_FLOAT_EQ(m.data()[i], 3 * 0.25f * static_cast<float>(i + 1)) << i;
  ASSERT_EQ(client_results_.size(), 4u);
  for (const Status& s : client_results_) EXPECT_TRUE(s.ok()) << s;
}

TEST_P(InProcessRunTest, CompressedUpdatesWithResidualsAndAQuantizedDownload) {
  RunConfig run = SmallRun();
  run.round.codec = "topk(0.5)+q8";
  run.round.download_codec = "q8";
  const Status outcome = Run(run, 4);
  ASSERT_TRUE(outcome.ok()) << outcome;
  for (const Status& s : client_results_) EXPECT_TRUE(s.ok()) << s;
  auto closed = recorder_.All<RoundClosed>();
  ASSERT_EQ(closed.size(), 3u);
  // Half the values at a byte each (plus indices) instead of 4 bytes each, and a q8 model down.
  const uint64_t n = FakeTrainer::Layout().size();
  for (const RoundClosed& c : closed) {
    EXPECT_EQ(c.summary.accepted, 4);
    EXPECT_LT(c.summary.bytes_up, 4 * n * 4);
    EXPECT_LT(c.summary.bytes_down, 4 * n * 4);
  }
  // With error feedback what top-k held back arrives later: after 3 rounds every weight has moved
  // toward 0.75 (i + 1), the largest ones most.
  const ModelWeights& m = driver_->engine().model();
  EXPECT_GT(m.data()[n - 1], 0.5f * 0.75f * static_cast<float>(n));
  // Nothing overshoots by more than the q8 steps (max |value| / 127 each) along the way.
  for (size_t i = 0; i < n; ++i) EXPECT_LE(m.data()[i], 0.75f * static_cast<float>(i + 1) + 0.3f);
}

// The soak of #19: many short rounds over mutual TLS (4 clients, a fake trainer) with resident
// memory and open file descriptors sampled as it goes; both must stay flat once warm. CI runs
// 2,000 rounds; TRIBUTARY_SOAK_ROUNDS=10000 is the long mode (docs/results.md, reliability).
int64_t OpenFileDescriptors() {
  int64_t n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) ++n;
  return n;
}

struct SoakSampler final : RunObserver {
  explicit SoakSampler(int64_t every) : every(every) {}
  void OnEvent(const RunEvent& e) override {
    const auto* closed = std::get_if<RoundClosed>(&e);
    if (!closed || closed->summary.round % static_cast<uint64_t>(every) != 0) return;
    std::lock_guard<std::mutex> lock(mu);
    samples.push_back({closed->summary.round, CurrentRssBytes(), OpenFileDescriptors()});
  }
  struct Sample {
    uint64_t round;
    uint64_t rss;
    int64_t fds;
  };
  int64_t every;
  std::mutex mu;
  std::vector<Sample> samples;
};

TEST_P(InProcessRunTest, ASoakOfShortRoundsKeepsMemoryAndFileDescriptorsFlat) {
  if (GetParam() != Kind::kTls) GTEST_SKIP() << "the soak runs over mutual TLS only";
  const char* env = std::getenv("TRIBUTARY_SOAK_ROUNDS");
  const int64_t rounds = env ? std::atoll(env) : 2000;
  RunConfig run = SmallRun();
  run.round.rounds = rounds;
  run.round.federated_eval_every = 0;
  SoakSampler sampler(std::max<int64_t>(1, rounds / 10));
  record_ = false;
  extra_observers_.push_back(&sampler);
  const auto t0 = std::chrono::steady_clock::now();
  const Status outcome = Run(run, 4, std::chrono::seconds(60 + rounds / 5));
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_TRUE(outcome.ok()) << outcome;
  std::lock_guard<std::mutex> lock(sampler.mu);
  ASSERT_EQ(sampler.samples.size(), 10u);
  // Warm after the first tenth: from then on RSS may wander by allocator noise, not grow.
  const auto& warm = sampler.samples[1];
  const auto& last = sampler.samples.back();
  for (const auto& s : sampler.samples)
    std::printf("soak: round %llu rss %.1f MiB fds %lld\n",
                static_cast<unsigned long long>(s.round), static_cast<double>(s.rss) / 1048576.0,
                static_cast<long long>(s.fds));
  std::printf("soak: %lld rounds in %.1f s (%.2f ms per round)\n", static_cast<long long>(rounds),
              seconds, 1000.0 * seconds / static_cast<double>(rounds));
  EXPECT_LE(last.rss, warm.rss + (uint64_t{8} << 20))
      << "RSS grew from " << warm.rss << " at round " << warm.round << " to " << last.rss;
  EXPECT_EQ(last.fds, warm.fds) << "file descriptors leaked";
  for (const Status& s : client_results_) EXPECT_TRUE(s.ok()) << s;
}

INSTANTIATE_TEST_SUITE_P(Transports, InProcessRunTest,
                         ::testing::Values(Kind::kInMemory, Kind::kTls),
                         [](const auto& p) { return p.param == Kind::kTls ? "Tls" : "InMemory"; });

}  // namespace
}  // namespace tributary
