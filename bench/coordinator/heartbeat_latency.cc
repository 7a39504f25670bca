// Heartbeat round trip under load: does the coordinator answer a heartbeat while it folds 100
// clients' updates and evaluates the model?
//
// In one process: the real RunDriver and CoordinatorService over real mutual TLS on loopback,
// with the `mlp` model (199,210 floats), FedAvg, and server-side evaluation of every round on
// Fashion-MNIST's 10,000 test images. 100 scripted clients join; every round all 100 are selected
// and each answers its task at once with a dense mlp update (a fixed random delta, 797 KB), so
// the coordinator receives, decodes and folds 80 MB per round, then checkpoints nothing and
// evaluates. A probe client (also selected and answering like the others) sends a heartbeat every
// 10 ms and times each echo. Prints the round-trip percentiles for two placements of the engine:
//   io-threads   the engine strand on the io_context (the two I/O threads share the CPU work)
//   own-thread   the engine strand on its own thread (what tributary-coordinator does)
//
//   heartbeat_latency [--rounds R] [--clients N] [--placement io-threads|own-thread|both]
//                     [--transport tls|memory]
//
// The clients run on their own threads (the load on one, the probe on another), not on the
// coordinator's, but on the same cores: every number here is for one machine doing both sides.
//
// Target (issue #13): p99 under 50 ms with the engine on its own thread.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <atomic>
#include <boost/asio/thread_pool.hpp>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <map>
#include <mutex>
#include <thread>

#include "compression/dense_codec.h"
#include "coordinator/coordinator_service.h"
#include "core/log.h"
#include "core/rng.h"
#include "core/stderr_log.h"
#include "protocol/in_memory_transport.h"
#include "protocol/tls_transport.h"
#include "tests/protocol/transport_test_util.h"
#include "train/data/data_config.h"

namespace tributary {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using testing::TestPki;

// A client that answers every task at once with the same precomputed update.
class ScriptedClient {
 public:
  ScriptedClient(std::shared_ptr<Connection> conn, SharedBytes update, size_t floats)
      : conn_(std::move(conn)), update_(std::move(update)), floats_(floats) {}

  void Start(std::function<void(const Message&)> also = {}) {
    also_ = std::move(also);
    conn_->Start(
        [this](Message m) {
          if (auto* t = std::get_if<TaskAssignment>(&m)) {
            UpdateSubmission u;
            u.round = t->round;
            u.task_id = t->task_id;
            u.model_version = t->model_version;
            u.num_examples = 600;
            u.update.codec = "dense";
            u.update.layout_fingerprint = t->model.layout_fingerprint;
            u.update.num_floats = floats_;
            u.update.bytes = update_;
            conn_->Send(std::move(u));
          }
          if (also_) also_(m);
          if (std::holds_alternative<Goodbye>(m)) {
            std::lock_guard<std::mutex> lock(mu_);
            done_ = true;
            cv_.notify_all();
          }
        },
        [this](Status) {
          std::lock_guard<std::mutex> lock(mu_);
          done_ = true;
          cv_.notify_all();
        });
    ClientCapabilities caps{"cpu", {"dense"}, 600, 0, {}};
    DeclareLayout(caps, LayoutOf(*InitWeights(*ModelSpecByName("mlp"), 1)));
    conn_->Send(Hello{kProtocolVersion, caps, "bench"});
  }
  void WaitDone() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return done_; });
  }
  Connection& conn() { return *conn_; }

 private:
  std::shared_ptr<Connection> conn_;
  SharedBytes update_;
  size_t floats_;
  std::function<void(const Message&)> also_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
};

struct Measurement {
  std::vector<double> rtt_ms;
  double seconds = 0;
  uint64_t rounds = 0;
};

Measurement Measure(bool own_thread, int rounds, int clients, std::shared_ptr<Evaluator> evaluator,
                    const ModelSpec& spec, bool tls) {
  // The coordinator's two I/O threads, and the clients' own threads: the load's on one, the
  // probe's on another, as remote clients would not share the coordinator's threads.
  // The engine's pool outlives the io threads (see coordinator_main.cc).
  boost::asio::thread_pool engine_thread(1);
  testing::IoThreads io(2), load_io(1), probe_io(1);
  auto network = std::make_shared<InMemoryNetwork>();
  RunConfig run;
  run.model = "mlp";
  run.round.rounds = rounds;
  run.round.clients_per_round = clients + 1;
  run.round.min_available = clients + 1;
  run.round.round_timeout = 300s;
  run.eval_every = 1;
  RunDriver::Options options;
  options.model_spec = spec;
  options.evaluator = std::move(evaluator);
  auto driver = *RunDriver::Create(run, std::move(options));
  driver->Start();
  std::unique_ptr<Transport> server;
  if (tls) {
    server = *TlsTransport::Create(io.io(),
                                   {TransportOptions{}, TestPki::Get().ServerContext(), nullptr});
  } else {
    server = *InMemoryTransport::Create(io.io(), network, {TransportOptions{}, "", 1 << 20});
  }
  CoordinatorServiceOptions so;
  so.listen_address = tls ? "127.0.0.1:0" : "coordinator";
  so.heartbeat_interval = 1s;
  so.client_timeout = 300s;
  if (own_thread) so.engine_executor = engine_thread.get_executor();
  auto service = std::make_shared<CoordinatorService>(io.io(), *server, *driver, so);
  testing::Waiter<Status> finished;
  service->set_on_finished(finished.Callback());
  if (!service->Start().ok()) std::abort();

  // One update for everyone: N(0, 0.01) per weight.
  const size_t n = driver->engine().model().size();
  auto delta = std::make_shared<std::vector<float>>(n);
  Rng rng(7);
  for (float& x : *delta) x = static_cast<float>(0.01 * rng.Normal());
  const SharedBytes update = *DenseCodec().EncodeShared(delta, *delta, nullptr, 0);

  std::vector<std::unique_ptr<Transport>> transports;
  std::vector<std::unique_ptr<ScriptedClient>> fleet;
  auto connect = [&](const std::string& id, boost::asio::io_context& on) {
    if (tls) {
      transports.push_back(*TlsTransport::Create(
          on, {TransportOptions{}, nullptr, TestPki::Get().ClientContext(id)}));
    } else {
      transports.push_back(
          *InMemoryTransport::Create(on, network, {TransportOptions{}, id, 1 << 20}));
    }
    testing::Waiter<Result<std::shared_ptr<Connection>>> w;
    transports.back()->Connect(service->address(), w.Callback());
    auto c = w.Wait(30s);
    if (!c || !c->ok()) std::abort();
    fleet.push_back(std::make_unique<ScriptedClient>(**c, update, n));
    return fleet.back().get();
  };
  for (int i = 0; i < clients; ++i) connect("load-" + std::to_string(i), load_io.io())->Start();

  // The probe: a heartbeat every 10 ms, each echo timed.
  std::mutex mu;
  std::map<uint64_t, Clock::time_point> sent;
  Measurement result;
  ScriptedClient* probe = connect("probe", probe_io.io());
  probe->Start([&](const Message& m) {
    const auto* hb = std::get_if<Heartbeat>(&m);
    if (!hb) return;
    const auto now = Clock::now();
    std::lock_guard<std::mutex> lock(mu);
    auto it = sent.find(hb->sequence);
    if (it == sent.end()) return;
    result.rtt_ms.push_back(std::chrono::duration<double, std::milli>(now - it->second).count());
    sent.erase(it);
  });
  const auto t0 = Clock::now();
  std::atomic<bool> stop{false};
  std::thread beater([&] {
    for (uint64_t seq = 1; !stop; ++seq) {
      {
        std::lock_guard<std::mutex> lock(mu);
        sent[seq] = Clock::now();
      }
      probe->conn().Send(Heartbeat{seq, 0});
      std::this_thread::sleep_for(10ms);
    }
  });
  auto outcome = finished.Wait(600s);
  stop = true;
  beater.join();
  result.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  result.rounds = driver->engine().rounds_done();
  if (!outcome || !outcome->ok()) {
    std::fprintf(stderr, "heartbeat_latency: the run did not finish: %s\n",
                 outcome ? outcome->ToString().c_str() : "timeout");
    std::exit(1);
  }
  {
    std::lock_guard<std::mutex> lock(mu);
    // Heartbeats still in flight when the run ended never came back: count them as lost, not as
    // fast.
    if (!sent.empty())
      std::printf("  (%zu heartbeats unanswered at the end of the run)\n", sent.size());
  }
  for (auto& c : fleet) c->WaitDone();
  io.Stop();
  load_io.Stop();
  probe_io.Stop();
  engine_thread.stop();
  engine_thread.join();
  return result;
}

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t i = std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())));
  return v[i];
}

}  // namespace
}  // namespace tributary

int main(int argc, char** argv) {
  using namespace tributary;
  int rounds = 20, clients = 100;
  std::string placement = "both", transport = "tls";
  CLI::App app{"heartbeat_latency: heartbeat round trip while 100 clients stream mlp updates"};
  app.add_option("--rounds", rounds, "rounds per placement")->capture_default_str();
  app.add_option("--clients", clients, "clients streaming updates")->capture_default_str();
  app.add_option("--placement", placement, "io-threads, own-thread or both")->capture_default_str();
  app.add_option("--transport", transport, "tls (mutual TLS on loopback) or memory")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  (void)InitLogging("warn");  // the coordinators' warnings, not their info lines

  DataConfig data;
  Result<DataSplits> test = LoadDataSplits(data, false, true);
  if (!test.ok()) {
    std::fprintf(stderr, "heartbeat_latency: %s\n", test.status().ToString().c_str());
    return 1;
  }
  const ModelSpec spec = *ModelSpecByName("mlp");
  ThreadPool eval_pool(0);
  std::shared_ptr<Evaluator> evaluator = *ModelEvaluator::Create(spec, test->test, 256, &eval_pool);
  // Evaluation alone, for scale.
  const auto e0 = std::chrono::steady_clock::now();
  (void)evaluator->Evaluate(*InitWeights(spec, 1));
  const double eval_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - e0).count();
  std::printf(
      "mlp, %d clients + 1 probe, %d rounds, every update 797 KB over %s, "
      "evaluation of 10,000 test images every round (%.0f ms alone)\n",
      clients, rounds, transport == "tls" ? "mutual TLS" : "the in-memory transport", eval_ms);
  std::printf("%-11s %7s %7s %8s %8s %8s %8s %8s\n", "engine", "rounds", "s", "beats", "p50 ms",
              "p90 ms", "p99 ms", "max ms");
  for (const bool own : {false, true}) {
    if (placement != "both" && (placement == "own-thread") != own) continue;
    Measurement r = Measure(own, rounds, clients, evaluator, spec, transport == "tls");
    std::printf("%-11s %7llu %7.1f %8zu %8.2f %8.2f %8.2f %8.2f\n",
                own ? "own-thread" : "io-threads", static_cast<unsigned long long>(r.rounds),
                r.seconds, r.rtt_ms.size(), Percentile(r.rtt_ms, 0.5), Percentile(r.rtt_ms, 0.9),
                Percentile(r.rtt_ms, 0.99),
                r.rtt_ms.empty() ? 0.0 : *std::max_element(r.rtt_ms.begin(), r.rtt_ms.end()));
    std::fflush(stdout);
  }
  return 0;
}
