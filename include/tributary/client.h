// Client: the federated-learning client an edge app embeds.
//
// The app supplies its own Trainer (trainer.h) — its model, its data, its framework — and a
// ClientOptions naming the coordinator, the TLS files and a state directory. The Client connects
// over mutual TLS 1.3, introduces itself (Hello), and then serves the coordinator until the run is
// over: for each TaskAssignment it calls trainer.fit() on the global model, encodes the delta
// (new - global) with the codec the coordinator asked for and submits it; for each EvaluateTask it
// calls trainer.evaluate(). It sends heartbeats while connected, and when the connection is lost
// or cannot be made for a reason that may heal by waiting (nothing listening, a reset, a timeout,
// the coordinator restarting or shutting down) it reconnects with exponential backoff and jitter.
// A refusal that waiting cannot heal ends run() instead, with an error naming the cause (see
// wait()): a certificate the coordinator refuses (another CA, expired, revoked) or one this client
// cannot verify (another CA, expired, a wrong name), a denied client id, a model layout or
// protocol version the coordinator does not accept. Tasks of a connection that is gone are
// dropped: a queued one is never started, and a fit in progress is asked to stop
// (FitConfig::stop, trainer.h); neither is reported to on_task. It keeps the latest global model
// it received (in memory, and in the state dir when there is one), so the app can predict() with
// the federated model between rounds.
//
//   ClientOptions options;
//   options.coordinator = "coord.example.org:7070";
//   options.ca_cert_file = "ca.crt";  options.cert_file = "edge-001.crt";
//   options.key_file = "edge-001.key";  options.state_dir = "/var/lib/myapp/tributary";
//   TRIB_ASSIGN_OR_RETURN(auto client, Client::Create(options, std::make_shared<MyTrainer>()));
//   Status s = client->run();  // returns when the coordinator says Goodbye, or on stop()
//
// Threading: the Client runs its network on its own I/O thread(s) and calls the Trainer on one
// worker thread of its own (one call at a time, never concurrently), so fit() may take as long as
// it needs without stalling heartbeats. start(), stop() and wait() may be called from any thread
// except from inside a Trainer call or the on_task callback (there wait() returns
// FailedPrecondition saying so, instead of blocking until the run ends). Destroying a Client stops
// it and waits for a fit() in progress to return. predict() and global_model() may be called from
// any thread, at any time (before start(), while running, after the run ended), also from on_task,
// but not from inside a Trainer call. predict() calls the Trainer on the calling thread, so it
// takes turns with the worker: it blocks while a fit() or evaluate() runs (which may be long) and
// never runs alongside one.
//
// This header includes only tributary/* headers: no Boost, OpenSSL or protocol headers.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "tributary/log.h"
#include "tributary/result.h"
#include "tributary/status.h"
#include "tributary/trainer.h"

namespace tributary {

// Reconnect policy. The n-th consecutive failed attempt (n = 0, 1, ...) waits
// d = min(max_delay, initial_delay * multiplier^n), reduced by a random fraction of up to
// `jitter` (the wait is uniform in [d * (1 - jitter), d]), so clients that lost the coordinator
// together do not all come back in the same instant. The random draws come from `seed`: 0 (the
// default) draws a seed of its own per client from the operating system's randomness, so a fleet
// that lost its coordinator together comes back spread out; any other value gives the same
// delays every time (tests).
struct BackoffOptions {
  std::chrono::milliseconds initial_delay{500};
  std::chrono::milliseconds max_delay{30'000};
  double multiplier = 2.0;  // >= 1
  double jitter = 0.5;      // in [0, 1]; 0 disables jitter
  // Give up (run() returns Unavailable) after this many consecutive attempts that did not reach
  // a Welcome. 0 retries until stop(). Refusals that waiting cannot heal end the run at the first
  // attempt, whatever this is (see Client::wait()).
  int64_t max_attempts = 0;
  uint64_t seed = 0;  // 0: drawn per client (above)

  // InvalidArgument naming the field when a value is out of range.
  Status Validate() const;
};

// What happened with one task, for progress output (the Client also logs one line per task).
struct TaskReport {
  enum class Kind { kFit, kEvaluate };
  Kind kind = Kind::kFit;
  uint64_t round = 0;
  uint64_t model_version = 0;
  int64_t num_examples = 0;
  // Fit: the trainer's "train_loss" / "train_accuracy" metrics (0 when it reports none).
  // Evaluate: EvalResult::loss / accuracy.
  double loss = 0.0;
  double accuracy = 0.0;
  double seconds = 0.0;       // trainer time plus encoding
  uint64_t update_bytes = 0;  // fit: encoded update size
  std::string codec;          // fit: the codec spec used
  // OK, or why the task failed (the coordinator was sent an Error saying the same).
  Status status;
};

// Which global model predict() uses: the round of the task that brought it, and its version.
struct GlobalModelInfo {
  uint64_t round = 0;
  uint64_t model_version = 0;

  friend bool operator==(const GlobalModelInfo&, const GlobalModelInfo&) = default;
};

struct ClientOptions {
  // The coordinator, "host:port" (host: a DNS name or an IP literal, "[v6]:port" for IPv6), or
  // several endpoints separated by commas, "agg-a:7070,agg-b:7070" (an aggregation tier,
  // docs/tier.md): the first is tried first, and each failed attempt or lost connection moves
  // the next attempt to another one, drawn at random among the others (so a dead aggregator's
  // clients spread over the rest), after the backoff's delay with its jitter.
  std::string coordinator;
  // The name (or IP address) the coordinator's certificate must carry (SAN), also sent as SNI.
  // Empty means the host of `coordinator`. Set it to dial an address the certificate does not
  // name (an IP, an internal name) while verifying the one it does; with several endpoints, every
  // one must present a certificate for this name.
  std::string server_name;
  // PEM files: the CA that signed the coordinator's certificate, and this client's certificate
  // (which carries its client id) and private key. All three are required.
  std::string ca_cert_file;
  std::string cert_file;
  std::string key_file;
  // Local state: created if missing, locked against a second client using it, and holding a small
  // state file (client id, last round seen), the codec's error-feedback residual and the latest
  // global model (global_model.safetensors), so all survive a restart (client/client_state.h).
  // Empty means no local state: the global model then lives in memory only.
  std::string state_dir;
  // Reported to the coordinator in Hello.
  std::string device = "cpu";
  // Local training examples. The coordinator refuses an update claiming more than this, and a
  // Hello announcing more than its run.max_num_examples; 0 announces none (the run's cap applies).
  uint64_t num_examples = 0;
  BackoffOptions backoff;
  // Heartbeat period. 0 uses the period the coordinator asks for in Welcome (and none if it asks
  // for none).
  std::chrono::milliseconds heartbeat_interval{0};
  // TCP connect plus TLS handshake must finish within this.
  std::chrono::milliseconds connect_timeout{10'000};
  // Split learning (docs/split.md): the trainer's model is the device part of a cut model, and
  // each task trains it with Trainer::fit_split, exchanging every batch's activations and
  // gradients with the coordinator's server part. The coordinator's run must be a split run.
  bool split = false;
  // With split: the cuts the trainer's model was made for (the device part holds layers before
  // split_cut, and in a U-shaped split those from split_head on). When split_cut is not 0, a task
  // of another cut or head ends the run with FailedPrecondition naming both (two cuts with the
  // same layout, around a parameter-free layer, would otherwise train another model silently).
  // 0: not checked.
  uint32_t split_cut = 0;
  uint32_t split_head = 0;
  // Called on the worker thread after each task; must not block for long. With secure
  // aggregation, a fit is reported when it ends; when its masking must wait for the shares and
  // then fails (a neighbour's share withheld), the coordinator is told the task failed, the
  // client logs a warning, and the fit's report is not repeated.
  std::function<void(const TaskReport&)> on_task;
  // Logging (log.h). By default the library writes nothing anywhere. When log_callback is set,
  // a Create that succeeds installs it for the whole process with SetLogHandler(log_level,
  // log_callback): it then receives the lines at log_level and above from every Client in the
  // process, replaces the handler installed before (the last one installed wins), and stays
  // installed after this Client is destroyed. When log_callback is empty, Create leaves the
  // process's handler as it is and log_level is unused.
  LogLevel log_level = LogLevel::kInfo;
  LogCallback log_callback;

  // InvalidArgument naming the field when a value is missing or out of range (files are checked
  // by Client::Create, which reads them).
  Status Validate() const;
};

class Client {
 public:
  // Validates the options, reads the TLS files (errors name the file) and opens the state dir.
  // Connects to nothing yet. `trainer` must not be null. A global model saved in the state dir by
  // an earlier client is taken for predict() when it matches trainer.get_parameters()'s layout; one
  // that does not (another model, a damaged file) is left unused, with a warning logged at start().
  static Result<std::unique_ptr<Client>> Create(ClientOptions options,
                                                std::shared_ptr<Trainer> trainer);
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // start() then wait(): blocks until the run is over.
  Status run();
  // Starts connecting in the background and returns. FailedPrecondition when called twice.
  Status start();
  // Asks the client to stop: it says Goodbye to the coordinator and closes. Returns at once;
  // wait() (or run()) then returns Aborted. Idempotent; safe before start().
  void stop();
  // Blocks until the run is over and returns how it ended:
  //   OK                 the coordinator completed the run, or stopped it (Goodbye)
  //   Aborted            stop() was called, or the coordinator's run failed (the message says
  //                      why, e.g. a round that failed max_round_attempts times)
  //   Unavailable        backoff.max_attempts consecutive connection attempts failed, each for a
  //                      reason that may heal (the message names the last)
  //   PermissionDenied   the coordinator refused this client: its id is revoked (denied) or
  //                      unauthenticated, or the TLS handshake refused this client's certificate
  //                      (e.g. "tlsv1 alert unknown ca": the coordinator does not trust the CA that
  //                      issued cert_file; or it expired, or was revoked); or this client could not
  //                      verify the coordinator's certificate (the message has OpenSSL's verify
  //                      error: not issued by ca_cert_file's CA, expired, or not for the host
  //                      dialled). Found at the first attempt, which is the only one.
  //   FailedPrecondition the coordinator refused this client's model: its layout (from
  //                      trainer.get_parameters()) is not the run's, and the message names the
  //                      first tensor that differs on both sides; or the coordinator speaks
  //                      another protocol (or TLS) version; or it refused this client's Hello
  //                      otherwise (e.g. a codec the run uses that this build lacks); or start()
  //                      was never called
  Status wait();

  // The id the coordinator read from this client's certificate (from Welcome); empty before.
  std::string client_id() const;

  // trainer.predict(the latest global model, inputs, count): the federated model's outputs for
  // `count` samples stored one after another in `inputs` (for NativeTrainer, count rows of class
  // probabilities). The latest global model is the one of the last fit or evaluate task received
  // (as decoded, when it came compressed), or else the one found in the state dir at Create.
  // Errors: FailedPrecondition when there is none yet, or when called from inside a Trainer call;
  // InvalidArgument when count < 1; otherwise what trainer.predict returns (Unimplemented for a
  // Trainer without it, InvalidArgument for inputs of the wrong size). Blocks while a fit or
  // evaluate runs (see Threading above).
  Result<std::vector<float>> predict(std::span<const float> inputs, int64_t count);
  // The round and version of the model predict() uses; nullopt when there is none yet. Does not
  // block on the Trainer.
  std::optional<GlobalModelInfo> global_model() const;

 private:
  struct Impl;
  explicit Client(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace tributary
