// NetworkSplitExchange: the client runtime's SplitExchange (docs/split.md). The worker thread that
// runs fit_split sends each batch's activations through `send` (which hands the message to the
// connection's strand) and waits until the strand delivers the coordinator's answer (Deliver: a
// SplitGradient, or in a U-shaped split first the server part's output, a SplitActivations), the
// task's stop token is requested (the connection was lost, the client is stopping: Aborted), or
// the task's deadline passes (DeadlineExceeded). An answer that does not answer the batch in
// flight ends the fit with the channel's PROTOCOL_VIOLATION.
//
// Thread-safe between the one worker that calls Exchange and the strand that calls Deliver.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <stop_token>

#include "protocol/messages.h"
#include "split/split_task_channel.h"
#include "tributary/trainer.h"

namespace tributary {

class NetworkSplitExchange final : public SplitExchange {
 public:
  NetworkSplitExchange(SplitTaskChannel channel, std::function<void(Message)> send,
                       std::stop_token stop, std::chrono::steady_clock::time_point deadline);

  Result<CutGradient> Exchange(std::span<const float> activations,
                               std::span<const uint8_t> labels) override;
  Status ExchangeFront(std::span<const float> activations, int64_t samples,
                       std::span<float> middle) override;
  Result<CutGradient> ExchangeHead(std::span<const float> gradient, double loss_sum,
                                   int64_t correct) override;
  // The coordinator's answer (the strand).
  void Deliver(Message answer);

 private:
  // Sends `m` (batch `number`'s) and waits for the answer, or for the stop or the deadline.
  Result<Message> SendAndWait(Message m, uint64_t number);
  // The answer as a SplitGradient for the channel to check (another message: a violation).
  Result<CutGradient> AsGradient(Message answer, uint64_t number) const;

  SplitTaskChannel channel_;
  std::function<void(Message)> send_;
  std::stop_token stop_;
  std::chrono::steady_clock::time_point deadline_;
  std::mutex mu_;
  std::condition_variable_any cv_;
  std::optional<Message> answer_;  // GUARDED_BY(mu_)
};

}  // namespace tributary
