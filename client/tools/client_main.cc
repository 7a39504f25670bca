// tributary-client: a federated-learning client that trains a zoo model with NativeTrainer on its
// share of Fashion-MNIST (or of given IDX files) and serves a coordinator over mutual TLS.
//
//   tributary-client --config client.toml
//   tributary-client --coordinator coord.example.org:7070 --ca ca.crt --cert edge-001.crt
//       --key edge-001.key --partition dirichlet:0.5 --num-clients 10 --client-index 3
//       (one command line)
//
// Flags override the TOML file (client/tools/client_config.h lists every key). Logs one line per
// task. Exit status: 0 when the coordinator ends the run or SIGINT/SIGTERM stops the client,
// 1 when the run fails, 2 for bad settings.
#include <CLI/CLI.hpp>

#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <thread>

#include "client/tools/client_config.h"
#include "client/tools/client_data.h"
#include "core/log.h"
#include "train/device.h"
#include "train/model_spec.h"
#include "train/native_trainer.h"
#include "tributary/client.h"
#include "tributary/config.h"

namespace tributary {
namespace {

void AddFlags(CLI::App& app, ClientCliOptions& o) {
  app.add_option("-c,--config", o.config_file, "TOML config file (flags override it)")
      ->check(CLI::ExistingFile);
  app.add_option("--coordinator", o.coordinator, "coordinator host:port");
  app.add_option("--server-name", o.server_name, "name the coordinator's certificate must carry");
  app.add_option("--ca", o.ca, "CA certificate (PEM)");
  app.add_option("--cert", o.cert, "this client's certificate (PEM)");
  app.add_option("--key", o.key, "this client's private key (PEM)");
  app.add_option("--state-dir", o.state_dir, "local state directory (created if missing)");
  app.add_option("-m,--model", o.model, "model: mlp, cnn or lenet")->capture_default_str();
  app.add_option("--device", o.device, "cpu, auto or cuda[:N]")->capture_default_str();
  app.add_option("--seed", o.seed, "seed of the initial weights")->capture_default_str();
  app.add_option("--heartbeat-ms", o.heartbeat_ms, "heartbeat period (0: the coordinator's)");
  app.add_option("--log-level", o.log_level, "trace, debug, info, warn, error")
      ->capture_default_str();
  app.add_option("--data", o.data_dir, "Fashion-MNIST directory");
  app.add_option("--train-images", o.train_images,
                 "training images (IDX) instead of Fashion-MNIST");
  app.add_option("--train-labels", o.train_labels, "training labels (IDX)");
  app.add_option("--test-images", o.test_images, "evaluation images (IDX)");
  app.add_option("--test-labels", o.test_labels, "evaluation labels (IDX)");
  app.add_option("--partition", o.partition, "iid, dirichlet:ALPHA or shards:K")
      ->capture_default_str();
  app.add_option("--num-clients", o.num_clients, "clients the data is split among")
      ->capture_default_str();
  app.add_option("--client-index", o.client_index, "this client's share, in [0, num-clients)")
      ->capture_default_str();
  app.add_option("--partition-seed", o.partition_seed, "partition seed (the same on every client)")
      ->capture_default_str();
  app.add_option("--train-examples", o.train_examples,
                 "use the first N training examples (0: all)");
  app.add_option("--eval-examples", o.eval_examples, "cap on this client's evaluation examples");
  app.add_option("--backoff-initial-ms", o.backoff_initial_ms, "first reconnect delay")
      ->capture_default_str();
  app.add_option("--backoff-max-ms", o.backoff_max_ms, "longest reconnect delay")
      ->capture_default_str();
  app.add_option("--backoff-jitter", o.backoff_jitter, "random fraction taken off each delay")
      ->capture_default_str();
  app.add_option("--max-attempts", o.max_attempts, "give up after N failed connects (0: never)");
  app.add_option("--backoff-seed", o.backoff_seed, "seed of the reconnect jitter");
}

// Stops the client on SIGINT/SIGTERM. The signals are blocked in every thread (main() sets the
// mask before any thread starts) and taken here with sigwait, so no async-signal-safety is needed.
// A signal that arrives before the client exists (while data loads) stops it as soon as it does.
class SignalStopper {
 public:
  SignalStopper() {
    thread_ = std::thread([this] {
      sigset_t set = Signals();
      int sig = 0;
      sigwait(&set, &sig);
      std::lock_guard<std::mutex> lock(mu_);
      if (done_) return;
      signalled_ = true;
      spdlog::info("{} received, stopping", sig == SIGINT ? "SIGINT" : "SIGTERM");
      if (client_) client_->stop();
    });
  }
  ~SignalStopper() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      done_ = true;
    }
    pthread_kill(thread_.native_handle(), SIGTERM);  // wakes the sigwait if still waiting
    thread_.join();
  }
  // Null before the client is destroyed.
  void set_client(Client* client) {
    std::lock_guard<std::mutex> lock(mu_);
    client_ = client;
    if (client_ && signalled_) client_->stop();
  }
  bool signalled() {
    std::lock_guard<std::mutex> lock(mu_);
    return signalled_;
  }

  static sigset_t Signals() {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    return set;
  }

 private:
  std::mutex mu_;
  Client* client_ = nullptr;  // GUARDED_BY(mu_)
  bool done_ = false;         // GUARDED_BY(mu_)
  bool signalled_ = false;    // GUARDED_BY(mu_)
  std::thread thread_;
};

Status Run(const ClientCliOptions& o, SignalStopper& stopper) {
  auto t0 = std::chrono::steady_clock::now();
  TRIB_ASSIGN_OR_RETURN(ClientData data, LoadClientData(o));
  TRIB_ASSIGN_OR_RETURN(ModelSpec spec,
                        ModelSpecByName(o.model, Shape3{data.train->height, data.train->width, 1},
                                        data.train->num_classes));
  TRIB_ASSIGN_OR_RETURN(EngineFactory factory, SelectEngineFactory(o.device));
  TRIB_ASSIGN_OR_RETURN(
      std::unique_ptr<NativeTrainer> trainer,
      NativeTrainer::Create(spec, data.train, data.eval, static_cast<uint64_t>(o.seed), factory));
  std::printf("tributary-client %s: %s; model %s, device %s, coordinator %s (%.1fs)\n",
              TRIBUTARY_VERSION, data.description.c_str(), spec.name.c_str(), o.device.c_str(),
              o.coordinator.c_str(),
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  std::fflush(stdout);

  ClientOptions options = ToClientOptions(o, static_cast<uint64_t>(data.train->size()));
  TRIB_ASSIGN_OR_RETURN(std::unique_ptr<Client> client,
                        Client::Create(std::move(options), std::move(trainer)));
  stopper.set_client(client.get());
  Status s = client->run();
  stopper.set_client(nullptr);
  // A run stopped by a signal (before or after it started) is a clean exit.
  if (stopper.signalled() &&
      (s.code() == StatusCode::kAborted || s.code() == StatusCode::kFailedPrecondition))
    return Status::Ok();
  return s;
}

}  // namespace
}  // namespace tributary

int main(int argc, char** argv) {
  tributary::ClientCliOptions o;
  CLI::App app{"tributary-client: a federated-learning client (NativeTrainer on a data share)"};
  tributary::AddFlags(app, o);
  CLI11_PARSE(app, argc, argv);
  if (!o.config_file.empty()) {
    auto cfg = tributary::Config::LoadFile(o.config_file);
    tributary::Status s = cfg.ok()
                              ? tributary::ApplyClientConfig(
                                    *cfg, [&](const char* flag) { return app.count(flag) > 0; }, &o)
                              : cfg.status();
    if (!s.ok()) {
      std::fprintf(stderr, "tributary-client: %s\n", s.ToString().c_str());
      return 2;
    }
  }
  if (tributary::Status s = tributary::ValidateClientCliOptions(o);
      !s.ok() || !(s = tributary::CheckClientFiles(o)).ok()) {
    std::fprintf(stderr, "tributary-client: %s\n", s.ToString().c_str());
    return 2;
  }
  if (tributary::Status s = tributary::InitLogging(o.log_level); !s.ok()) {
    std::fprintf(stderr, "tributary-client: log_level (--log-level): %s\n", s.ToString().c_str());
    return 2;
  }
  // Block SIGINT/SIGTERM before any thread starts; SignalStopper takes them with sigwait.
  sigset_t set = tributary::SignalStopper::Signals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  tributary::SignalStopper stopper;
  tributary::Status s = tributary::Run(o, stopper);
  if (!s.ok()) {
    std::fprintf(stderr, "tributary-client: %s\n", s.ToString().c_str());
    return 1;
  }
  return 0;
}
