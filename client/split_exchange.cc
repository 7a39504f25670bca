#include "client/split_exchange.h"

#include <algorithm>
#include <string>

#include "protocol/wire.h"

namespace tributary {

NetworkSplitExchange::NetworkSplitExchange(SplitTaskChannel channel,
                                           std::function<void(Message)> send, std::stop_token stop,
                                           std::chrono::steady_clock::time_point deadline)
    : channel_(std::move(channel)),
      send_(std::move(send)),
      stop_(std::move(stop)),
      deadline_(deadline) {}

Result<Message> NetworkSplitExchange::SendAndWait(Message m, uint64_t number) {
  {
    std::lock_guard lock(mu_);
    answer_.reset();
  }
  send_(std::move(m));
  std::unique_lock lock(mu_);
  const bool answered = cv_.wait_until(lock, stop_, deadline_, [&] { return answer_.has_value(); });
  if (!answered) {
    if (stop_.stop_requested())
      return Status::Aborted("split batch " + std::to_string(number) +
                             ": stopped (the connection was lost or the client is stopping)");
    return Status::DeadlineExceeded("split batch " + std::to_string(number) +
                                    ": no answer from the coordinator before the task's "
                                    "deadline");
  }
  Message answer = std::move(*answer_);
  answer_.reset();
  return answer;
}

Result<CutGradient> NetworkSplitExchange::AsGradient(Message answer, uint64_t number) const {
  const auto* g = std::get_if<SplitGradient>(&answer);
  if (g == nullptr)
    return ProtocolError(ErrorCode::kProtocolViolation,
                         "the coordinator answered split batch " + std::to_string(number) +
                             " with a " + MessageTypeName(TypeOf(answer)) + ", not its gradient");
  return channel_.Gradient(*g);
}

Result<CutGradient> NetworkSplitExchange::Exchange(std::span<const float> activations,
                                                   std::span<const uint8_t> labels) {
  TRIB_ASSIGN_OR_RETURN(SplitActivations batch, channel_.Activations(activations, labels));
  const uint64_t number = batch.batch;
  TRIB_ASSIGN_OR_RETURN(Message answer, SendAndWait(Message(std::move(batch)), number));
  return AsGradient(std::move(answer), number);
}

Status NetworkSplitExchange::ExchangeFront(std::span<const float> activations, int64_t samples,
                                           std::span<float> middle) {
  if (samples < 1 || samples > static_cast<int64_t>(kMaxSplitBatch))
    return Status::InvalidArgument("a split batch of " + std::to_string(samples) + " samples");
  TRIB_ASSIGN_OR_RETURN(SplitActivations batch,
                        channel_.FrontActivations(activations, static_cast<uint32_t>(samples)));
  const uint64_t number = batch.batch;
  TRIB_ASSIGN_OR_RETURN(Message answer, SendAndWait(Message(std::move(batch)), number));
  const auto* out = std::get_if<SplitActivations>(&answer);
  if (out == nullptr)
    return ProtocolError(ErrorCode::kProtocolViolation, "the coordinator answered split batch " +
                                                            std::to_string(number) + " with a " +
                                                            MessageTypeName(TypeOf(answer)) +
                                                            ", not the server part's output");
  TRIB_ASSIGN_OR_RETURN(std::vector<float> values, channel_.Middle(*out, middle.size()));
  std::copy(values.begin(), values.end(), middle.begin());
  return Status::Ok();
}

Result<CutGradient> NetworkSplitExchange::ExchangeHead(std::span<const float> gradient,
                                                       double loss_sum, int64_t correct) {
  TRIB_ASSIGN_OR_RETURN(SplitGradient up, channel_.HeadGradient(gradient, loss_sum, correct));
  const uint64_t number = up.batch;
  TRIB_ASSIGN_OR_RETURN(Message answer, SendAndWait(Message(std::move(up)), number));
  return AsGradient(std::move(answer), number);
}

void NetworkSplitExchange::Deliver(Message answer) {
  {
    std::lock_guard lock(mu_);
    answer_ = std::move(answer);
  }
  cv_.notify_all();
}

}  // namespace tributary
