#include "client/split_exchange.h"

#include <string>

namespace tributary {

NetworkSplitExchange::NetworkSplitExchange(SplitTaskChannel channel,
                                           std::function<void(Message)> send, std::stop_token stop,
                                           std::chrono::steady_clock::time_point deadline)
    : channel_(std::move(channel)),
      send_(std::move(send)),
      stop_(std::move(stop)),
      deadline_(deadline) {}

Result<CutGradient> NetworkSplitExchange::Exchange(std::span<const float> activations,
                                                   std::span<const uint8_t> labels) {
  TRIB_ASSIGN_OR_RETURN(SplitActivations batch, channel_.Activations(activations, labels));
  const uint64_t number = batch.batch;
  {
    std::lock_guard lock(mu_);
    answer_.reset();
  }
  send_(Message(std::move(batch)));
  std::unique_lock lock(mu_);
  const bool answered = cv_.wait_until(lock, stop_, deadline_, [&] { return answer_.has_value(); });
  if (!answered) {
    if (stop_.stop_requested())
      return Status::Aborted("split batch " + std::to_string(number) +
                             ": stopped (the connection was lost or the client is stopping)");
    return Status::DeadlineExceeded("split batch " + std::to_string(number) +
                                    ": no gradient from the coordinator before the task's "
                                    "deadline");
  }
  SplitGradient g = std::move(*answer_);
  answer_.reset();
  lock.unlock();
  return channel_.Gradient(g);
}

void NetworkSplitExchange::Deliver(SplitGradient gradient) {
  {
    std::lock_guard lock(mu_);
    answer_ = std::move(gradient);
  }
  cv_.notify_all();
}

}  // namespace tributary
