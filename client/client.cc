// tributary::Client: ClientRuntime over a TlsTransport, with its own I/O thread.
#include "tributary/client.h"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <future>
#include <mutex>
#include <optional>
#include <thread>

#include "client/client_runtime.h"
#include "crypto/tls_context.h"
#include "protocol/messages.h"
#include "protocol/tls_transport.h"
#include "protocol/transport_util.h"

namespace tributary {

namespace asio = boost::asio;

Status ClientOptions::Validate() const {
  if (coordinator.empty())
    return Status::InvalidArgument("coordinator: no address given (expected host:port)");
  Result<std::vector<std::string>> endpoints = SplitEndpoints(coordinator);
  if (!endpoints.ok()) return endpoints.status().WithContext("coordinator");
  for (const std::string& endpoint : *endpoints) {
    Result<std::pair<std::string, std::string>> host_port = SplitHostPort(endpoint);
    if (!host_port.ok()) return host_port.status().WithContext("coordinator");
  }
  if (server_name.find('\0') != std::string::npos || server_name.size() > 253)
    return Status::InvalidArgument(
        "server_name: must be a host name or IP address (at most 253 "
        "bytes, no NUL)");
  if (ca_cert_file.empty())
    return Status::InvalidArgument("ca_cert_file: required (the CA that signed the coordinator)");
  if (cert_file.empty())
    return Status::InvalidArgument("cert_file: required (this client's certificate)");
  if (key_file.empty()) return Status::InvalidArgument("key_file: required (this client's key)");
  if (device.empty() || device.size() > kMaxNameBytes)
    return Status::InvalidArgument("device: must be 1.." + std::to_string(kMaxNameBytes) +
                                   " bytes");
  TRIB_RETURN_IF_ERROR(backoff.Validate());
  if (heartbeat_interval.count() < 0)
    return Status::InvalidArgument("heartbeat_interval must be >= 0 ms (0 = the coordinator's)");
  if (connect_timeout.count() <= 0)
    return Status::InvalidArgument("connect_timeout must be > 0 ms");
  if (log_level < LogLevel::kTrace || log_level > LogLevel::kOff)
    return Status::InvalidArgument("log_level: " + std::to_string(static_cast<int>(log_level)) +
                                   " is not a LogLevel");
  return Status::Ok();
}

// How long the destructor lets the I/O thread write what the runtime queued last (its Goodbye, the
// connection's TLS close) before it stops the io_context.
constexpr std::chrono::milliseconds kDrainLimit{1'000};

struct Client::Impl {
  ~Impl() {
    if (runtime) {
      runtime->Stop();
      (void)runtime->Wait();
      runtime.reset();
    }
    work.reset();
    // The I/O thread returns by itself once nothing is pending (the close has been written and
    // the peer has answered it); a peer that does not answer is cut off after kDrainLimit.
    // Stopping at once used to drop a Goodbye queued by stop() just before.
    if (io_done.valid() && io_done.wait_for(kDrainLimit) == std::future_status::timeout) io.stop();
    if (io_thread.joinable()) io_thread.join();
  }

  asio::io_context io;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work;
  std::thread io_thread;
  std::future<void> io_done;  // ready when io_thread's run() has returned
  std::unique_ptr<TlsTransport> transport;
  std::unique_ptr<ClientRuntime> runtime;
  std::mutex mu;
  bool started = false;  // GUARDED_BY(mu)
};

Client::Client(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Client::~Client() = default;

Result<std::unique_ptr<Client>> Client::Create(ClientOptions options,
                                               std::shared_ptr<Trainer> trainer) {
  if (!trainer) return Status::InvalidArgument("Client::Create: the trainer is null");
  TRIB_RETURN_IF_ERROR(options.Validate());
  TRIB_ASSIGN_OR_RETURN(
      SslContextPtr ctx,
      MakeClientTlsContext(TlsConfig{options.ca_cert_file, options.cert_file, options.key_file}));
  std::unique_ptr<ClientState> state;
  if (!options.state_dir.empty()) {
    TRIB_ASSIGN_OR_RETURN(state, ClientState::Open(options.state_dir));
  }

  auto impl = std::make_unique<Impl>();
  TlsTransportOptions topts;
  topts.transport.handshake_timeout = options.connect_timeout;
  topts.client_context = std::move(ctx);
  topts.server_name = options.server_name;
  TRIB_ASSIGN_OR_RETURN(impl->transport, TlsTransport::Create(impl->io, std::move(topts)));

  ClientRuntimeOptions ropts;
  ropts.address = options.coordinator;
  ropts.device = options.device;
  ropts.num_examples = options.num_examples;
  ropts.backoff = options.backoff;
  ropts.heartbeat_interval = options.heartbeat_interval;
  ropts.on_task = std::move(options.on_task);
  ropts.split = options.split;
  ropts.split_cut = options.split_cut;
  ropts.split_head = options.split_head;
  // The same key, certificate and CA sign and check the keys of secure aggregation.
  TRIB_ASSIGN_OR_RETURN(
      ropts.secagg_identity,
      SecAggIdentity::FromFiles(options.key_file, options.cert_file, options.ca_cert_file));
  TRIB_ASSIGN_OR_RETURN(impl->runtime,
                        ClientRuntime::Create(impl->io, *impl->transport, std::move(trainer),
                                              std::move(ropts), std::move(state)));
  // Last, so that a Create that fails leaves the process's handler as it was (nothing above logs).
  if (options.log_callback) SetLogHandler(options.log_level, std::move(options.log_callback));
  return std::unique_ptr<Client>(new Client(std::move(impl)));
}

Status Client::run() {
  TRIB_RETURN_IF_ERROR(start());
  return wait();
}

Status Client::start() {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    if (impl_->started) return Status::FailedPrecondition("Client::start: already started");
    impl_->started = true;
  }
  TRIB_RETURN_IF_ERROR(impl_->runtime->Start());
  impl_->work.emplace(asio::make_work_guard(impl_->io));
  std::promise<void> done;
  impl_->io_done = done.get_future();
  impl_->io_thread = std::thread([io = &impl_->io, done = std::move(done)]() mutable {
    io->run();
    done.set_value();
  });
  return Status::Ok();
}

void Client::stop() { impl_->runtime->Stop(); }

Status Client::wait() { return impl_->runtime->Wait(); }

std::string Client::client_id() const { return impl_->runtime->client_id(); }

Result<std::vector<float>> Client::predict(std::span<const float> inputs, int64_t count) {
  return impl_->runtime->Predict(inputs, count);
}

std::optional<GlobalModelInfo> Client::global_model() const {
  return impl_->runtime->global_model();
}

}  // namespace tributary
