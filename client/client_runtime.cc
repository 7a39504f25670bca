#include "client/client_runtime.h"

#include <fmt/format.h>

#include "client/runtime_core.h"
#include "core/model_layout.h"
#include "core/thread_pool.h"
#include "protocol/schema_caps.h"
#include "protocol/transport_util.h"

namespace tributary {
namespace {

// Every Hello declares the model's layout: a layout the wire cannot carry would fail every Hello,
// so it is refused here, naming the tensor.
Status CheckDeclarable(const ModelLayout& layout) {
  if (layout.size() > kMaxTensors)
    return Status::InvalidArgument(
        fmt::format("the trainer's model has {} tensors; a client declares at most {}",
                    layout.size(), kMaxTensors));
  for (size_t i = 0; i < layout.size(); ++i) {
    const TensorLayout& t = layout[i];
    if (t.name.size() > kMaxTensorNameBytes)
      return Status::InvalidArgument(fmt::format(
          "the trainer's model: tensor {} has a name of {} bytes ('{}...'); names may be up to {} "
          "bytes",
          i, t.name.size(), t.name.substr(0, 32), kMaxTensorNameBytes));
    if (t.shape.size() > kMaxTensorRank)
      return Status::InvalidArgument(
          fmt::format("the trainer's model: tensor {} ('{}') has {} dimensions; at most {}", i,
                      t.name, t.shape.size(), kMaxTensorRank));
  }
  return Status::Ok();
}

}  // namespace

Result<std::unique_ptr<ClientRuntime>> ClientRuntime::Create(boost::asio::io_context& io,
                                                             Transport& transport,
                                                             std::shared_ptr<Trainer> trainer,
                                                             ClientRuntimeOptions options,
                                                             std::unique_ptr<ClientState> state) {
  if (!trainer) return Status::InvalidArgument("client runtime: the trainer is null");
  if (options.address.empty())
    return Status::InvalidArgument("client runtime: the coordinator address is empty");
  TRIB_RETURN_IF_ERROR(SplitEndpoints(options.address).status().WithContext("client runtime"));
  TRIB_RETURN_IF_ERROR(options.backoff.Validate());
  if (options.heartbeat_interval.count() < 0)
    return Status::InvalidArgument("heartbeat_interval must be >= 0 ms");
  if (options.heartbeat_timeout.count() < 0)
    return Status::InvalidArgument("heartbeat_timeout must be >= 0 ms");
  // The layout is declared in every Hello, so a coordinator running another model refuses this
  // client at once, naming the tensor that differs.
  Result<ModelWeights> params = Status::Internal("not called");
  try {  // an app's trainer may throw; Create returns the error as for fit and evaluate
    params = trainer->get_parameters();
  } catch (const std::exception& e) {
    return Status::Internal(fmt::format("the trainer's get_parameters() threw: {}", e.what()));
  } catch (...) {
    return Status::Internal("the trainer's get_parameters() threw an exception");
  }
  if (!params.ok()) return params.status().WithContext("the trainer's get_parameters()");
  if (params->size() == 0)
    return Status::InvalidArgument("the trainer's get_parameters() returned an empty model");
  TRIB_RETURN_IF_ERROR(CheckDeclarable(LayoutOf(*params)));
  std::unique_ptr<ClientRuntime> rt(new ClientRuntime());
  rt->worker_ = std::make_unique<ThreadPool>(1);
  rt->core_ =
      std::make_shared<RuntimeCore>(io, transport, std::move(trainer), std::move(options),
                                    std::move(state), rt->worker_.get(), params->ZerosLike());
  return rt;
}

ClientRuntime::~ClientRuntime() {
  core_->Stop();
  (void)core_->Wait();
  // Joins the worker after the job in progress (queued ones see the stop and return at once).
  // The core itself may live on in handlers still queued on the io_context; once finished it
  // touches neither the worker nor the transport.
  worker_.reset();
  // Handlers still queued on the io_context may keep the core alive for a while; the state dir's
  // lock must not wait for them, or a client created next on the same dir would be refused.
  core_->ReleaseState();
}

Status ClientRuntime::Start() { return core_->Start(); }
void ClientRuntime::Stop() { core_->Stop(); }
Status ClientRuntime::Wait() { return core_->Wait(); }

Status ClientRuntime::Run() {
  TRIB_RETURN_IF_ERROR(Start());
  return Wait();
}

std::string ClientRuntime::client_id() const { return core_->client_id(); }
int64_t ClientRuntime::sessions() const { return core_->sessions(); }

Result<std::vector<float>> ClientRuntime::Predict(std::span<const float> inputs, int64_t count) {
  return core_->Predict(inputs, count);
}

std::optional<GlobalModelInfo> ClientRuntime::global_model() const { return core_->global_model(); }

}  // namespace tributary
