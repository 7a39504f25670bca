// Coordinator: a whole tributary-coordinator, assembled from its CoordinatorConfig in one place, so
// that a program's main only parses its command line and serves:
//
//   Result<std::unique_ptr<Coordinator>> c = Coordinator::Assemble(cfg, {resume}, &exit_status);
//   if (!c.ok()) ...                                  // exit with exit_status
//   Status s = (*c)->Serve();                         // until the run ends, or SIGINT/SIGTERM
//
// Assemble() checks the config (after ResolveOutputs) and builds, in this order: logging
// (log_level); the lock on the run's outputs (RunOutputLock: output.checkpoint_dir, and the event
// log and final model when they are elsewhere; held until the Coordinator is destroyed, so a second
// coordinator on them refuses to start, naming this one's pid and host); the run's model spec
// (run.model, for the data's shape) and server-side evaluation on the test set (eval.every, on
// eval.threads); the RunDriver (resuming a checkpoint with options.resume or
// options.resume_or_start); the standard observers (RunObservers: event log, console, run history,
// metrics and the dashboard on monitor.listen); the mutual-TLS transport (tls.*, tls.deny_list,
// net.max_handshakes_per_address, net.transfer_budget_mb, net.min_upload_rate_kib_s,
// net.frame_timeout_s, one security log for the listener, the service and the monitor). Nothing
// listens for clients yet.
//
// Serve() starts the run (RunStarted), listens on net.listen (CoordinatorService: its engine on a
// thread of its own, the I/O on two), prints the start-up line, writes output.ready_file (the
// clients' host:port; then, with a monitor, "monitor=host:port" with its bound port), refreshes
// the monitor's client table every 2 s, and returns when the run has ended: OK when every round is
// done or SIGINT/SIGTERM stopped it (clients are told Goodbye; the last checkpoint is complete),
// else why the run failed. Call it once.
//
// Errors: Assemble's name the key or file at fault; *exit_status (when given) is then 2 when the
// configuration is (a key's value, a model that does not fit the data, a checkpoint that cannot be
// resumed, a history database or monitor address that cannot be opened), 1 otherwise (outputs
// another run holds, the TLS files, the event log, the evaluation data). Serve's: the address that
// cannot be listened on, the ready file that cannot be written (either ends the started run as
// failed, with that reason, in the event log and the history), or the run's failure.
//
// Threading: Assemble and Serve on one thread; Serve blocks it and handles the signals.
#pragma once

#include <memory>
#include <string>

#include "coordinator/coordinator_config.h"
#include "tributary/result.h"

namespace boost::asio {
class io_context;
class thread_pool;
}  // namespace boost::asio

namespace tributary {

class CoordinatorService;
class RunDriver;
class RunObservers;
class RunOutputLock;
class SecurityLog;
class ThreadPool;
class TlsTransport;

class Coordinator {
 public:
  struct Options {
    bool resume = false;           // continue from the newest good checkpoint; none is an error
    bool resume_or_start = false;  // continue from one when there is one, else start a new run
  };

  static Result<std::unique_ptr<Coordinator>> Assemble(CoordinatorConfig config, Options options,
                                                       int* exit_status = nullptr);
  ~Coordinator();
  Coordinator(const Coordinator&) = delete;
  Coordinator& operator=(const Coordinator&) = delete;

  Status Serve();

  RunDriver& driver() { return *driver_; }
  const RunObservers& observers() const { return *observers_; }

 private:
  Coordinator();
  void PrintStartLine(const std::string& address) const;
  // After the run: with a monitor and monitor.linger_s > 0, waits that long (or until SIGINT or
  // SIGTERM) while the monitor serves the run's final state.
  void LingerForScrapes() const;

  CoordinatorConfig config_;
  // Declared first, so released last: after everything below has written its last byte.
  std::unique_ptr<RunOutputLock> output_lock_;
  std::string evaluation_;  // how the run evaluates, for the start-up line
  // Destroyed in the reverse order: the service first, then the transport and the io_context
  // (handlers still queued in it may hold the service, whose engine strand belongs to
  // engine_thread_, so that pool outlives it), then the driver, then its observers (which must
  // outlive it), then the evaluation's pool.
  std::shared_ptr<SecurityLog> security_;  // the listener's, the service's and the monitor's
  std::unique_ptr<ThreadPool> eval_pool_;
  std::unique_ptr<RunObservers> observers_;
  std::unique_ptr<RunDriver> driver_;
  std::unique_ptr<boost::asio::thread_pool> engine_thread_;
  std::unique_ptr<boost::asio::thread_pool> split_pool_;  // a split run's server parts
  std::unique_ptr<boost::asio::io_context> io_;
  std::unique_ptr<TlsTransport> transport_;
  std::shared_ptr<CoordinatorService> service_;
};

}  // namespace tributary
