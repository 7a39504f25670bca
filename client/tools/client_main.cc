// tributary-client: a federated-learning client that trains a zoo model or a model file
// (docs/models.md) with NativeTrainer on its share of Fashion-MNIST, the synthetic set or the
// user's files (data.dataset = "files": .npz, .npy, .csv, IDX) and serves a coordinator over
// mutual TLS.
//
//   tributary-client --config client.toml
//   tributary-client --coordinator coord.example.org:7070 --ca ca.crt --cert edge-001.crt
//       --key edge-001.key --partition dirichlet:0.5 --num-clients 10 --client-index 3
//       (one command line)
//   tributary-client --print-config            every key with its default and flag
//
// Flags and --set key=value override the TOML file (client/client_config.h). Logs one line
// per task. Exit status: 0 when the coordinator ends the run or SIGINT/SIGTERM stops the client,
// 1 when the run fails, 2 for bad settings.
#include <CLI/CLI.hpp>

#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <optional>
#include <thread>

#include "client/client_config.h"
#include "client/client_data.h"
#include "core/config_cli.h"
#include "core/log.h"
#include "core/stderr_log.h"
#include "train/device.h"
#include "train/model_file.h"
#include "train/model_split.h"
#include "train/native_trainer.h"
#include "tributary/client.h"
#include "tributary/config.h"

namespace tributary {
namespace {

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
      Log().info("{} received, stopping", sig == SIGINT ? "SIGINT" : "SIGTERM");
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

Status Run(const ClientConfig& o, SignalStopper& stopper) {
  auto t0 = std::chrono::steady_clock::now();
  TRIB_ASSIGN_OR_RETURN(ClientData data, LoadClientData(o));
  Result<ModelSpec> spec =
      ResolveModelSpec(o.model, Shape3{data.train->height, data.train->width, data.train->channels},
                       data.train->num_classes);
  if (!spec.ok()) return spec.status().WithContext("key 'run.model'");
  std::optional<SplitModel> u_shaped;  // the U-shaped split's cut: its head is trained here too
  int64_t split_cut = 0;               // the cut this client's device part was made for
  if (o.split_head > 0 && !o.split)
    return Status::InvalidArgument("key 'split.head' (--split-head) needs split.enabled (--split)");
  if (o.split) {
    // Split learning: this client trains only the part of the model before the cut.
    const int64_t cut = o.split_cut > 0 ? o.split_cut : spec->cut;
    split_cut = cut;
    if (cut == 0)
      return Status::InvalidArgument(
          "key 'split.enabled' (--split) needs a cut: set split.cut, or cut in the model file (" +
          spec->name + " names none)");
    Result<SplitModel> split =
        CutModel(*spec, static_cast<size_t>(cut), static_cast<size_t>(o.split_head));
    if (!split.ok())
      return split.status().WithContext(o.split_head > 0 ? "keys 'split.cut' and 'split.head'"
                                                         : "key 'split.cut'");
    if (split->u_shaped()) {
      std::printf(
          "split learning (U-shaped): training %s and %s, the layers before layer %lld and from "
          "layer %lld of %s; the labels stay here\n",
          split->device.name.c_str(), split->head.name.c_str(), static_cast<long long>(cut),
          static_cast<long long>(o.split_head), spec->name.c_str());
      u_shaped = *split;
    } else {
      std::printf("split learning: training %s, the layers before layer %lld of %s\n",
                  split->device.name.c_str(), static_cast<long long>(cut), spec->name.c_str());
    }
    spec = split->device;
  }
  TRIB_ASSIGN_OR_RETURN(int threads, ResolveCpuThreads(o.threads));
  TRIB_ASSIGN_OR_RETURN(EngineFactory factory, SelectEngineFactory(o.device, threads));
  TRIB_ASSIGN_OR_RETURN(
      std::unique_ptr<NativeTrainer> trainer,
      u_shaped ? NativeTrainer::CreateWithHead(*u_shaped, data.train, o.init_seed, factory)
               : NativeTrainer::Create(*spec, data.train, data.eval, o.init_seed, factory));
  std::printf(
      "tributary-client %s: %s; model %s, device %s, %d CPU thread(s), coordinator %s (%.1fs)\n",
      TRIBUTARY_VERSION, data.description.c_str(), spec->name.c_str(), o.device.c_str(), threads,
      o.coordinator.c_str(),
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  std::fflush(stdout);

  ClientOptions options = ToClientOptions(o, static_cast<uint64_t>(data.train->size()));
  // Tasks of another cut are refused (two cuts around a parameter-free layer share a layout).
  options.split_cut = static_cast<uint32_t>(split_cut);
  options.split_head = static_cast<uint32_t>(o.split_head);
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
  tributary::ClientConfig o;
  tributary::ConfigSchema schema("tributary-client");
  tributary::BindClientConfig(schema, &o);
  CLI::App app{"tributary-client: a federated-learning client (NativeTrainer on a data share)"};
  tributary::ConfigCommandLine cli(app, schema);
  CLI11_PARSE(app, argc, argv);
  if (cli.print_config()) {
    std::fputs(schema.DefaultsToml().c_str(), stdout);
    return 0;
  }
  tributary::Status s = cli.Apply();
  if (s.ok()) s = tributary::ValidateClientConfig(o);
  if (s.ok()) s = tributary::CheckClientFiles(o);
  if (!s.ok()) {
    std::fprintf(stderr, "tributary-client: %s\n", s.ToString().c_str());
    return 2;
  }
  if (s = tributary::InitLogging(o.log_level); !s.ok()) {
    std::fprintf(stderr, "tributary-client: log_level (--log-level): %s\n", s.ToString().c_str());
    return 2;
  }
  // Block SIGINT/SIGTERM before any thread starts; SignalStopper takes them with sigwait.
  sigset_t set = tributary::SignalStopper::Signals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  tributary::SignalStopper stopper;
  s = tributary::Run(o, stopper);
  if (!s.ok()) {
    std::fprintf(stderr, "tributary-client: %s\n", s.ToString().c_str());
    return 1;
  }
  return 0;
}
