// LoopbackSplitExchange: a SplitExchange for tests that hands each batch straight to a SplitServer
// in the same process, as a client's channel and the coordinator's service would, optionally
// through the messages' wire encoding (EncodeMessageBody / DecodeMessageBody).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "protocol/message_codec.h"
#include "split/split_server.h"
#include "split/split_task_channel.h"

namespace tributary::testing {

class LoopbackSplitExchange final : public SplitExchange {
 public:
  LoopbackSplitExchange(SplitServer& server, std::string client, SplitTaskChannel channel,
                        bool over_the_wire = true)
      : server_(server),
        client_(std::move(client)),
        channel_(std::move(channel)),
        wire_(over_the_wire) {}

  Result<CutGradient> Exchange(std::span<const float> acts,
                               std::span<const uint8_t> labels) override {
    TRIB_ASSIGN_OR_RETURN(SplitActivations m, channel_.Activations(acts, labels));
    TRIB_ASSIGN_OR_RETURN(SplitGradient g, server_.OnActivations(client_, Carry(m)));
    return channel_.Gradient(Carry(g));
  }
  Status ExchangeFront(std::span<const float> acts, int64_t samples,
                       std::span<float> middle) override {
    TRIB_ASSIGN_OR_RETURN(SplitActivations m,
                          channel_.FrontActivations(acts, static_cast<uint32_t>(samples)));
    TRIB_ASSIGN_OR_RETURN(Message answer, server_.OnMessage(client_, Message(Carry(m))));
    TRIB_ASSIGN_OR_RETURN(
        std::vector<float> out,
        channel_.Middle(Carry(std::get<SplitActivations>(answer)), middle.size()));
    std::copy(out.begin(), out.end(), middle.begin());
    return Status::Ok();
  }
  Result<CutGradient> ExchangeHead(std::span<const float> gradient, double loss_sum,
                                   int64_t correct) override {
    TRIB_ASSIGN_OR_RETURN(SplitGradient up, channel_.HeadGradient(gradient, loss_sum, correct));
    TRIB_ASSIGN_OR_RETURN(Message answer, server_.OnMessage(client_, Message(Carry(up))));
    return channel_.Gradient(Carry(std::get<SplitGradient>(answer)));
  }

 private:
  template <class M>
  M Carry(const M& m) const {
    if (!wire_) return m;
    Result<std::vector<uint8_t>> body = EncodeMessageBody(Message(m));
    EXPECT_TRUE(body.ok()) << body.status();
    Result<Message> back = DecodeMessageBody(TypeOf(Message(m)), *body);
    EXPECT_TRUE(back.ok()) << back.status();
    return std::get<M>(*back);
  }

  SplitServer& server_;
  std::string client_;
  SplitTaskChannel channel_;
  bool wire_;
};

}  // namespace tributary::testing
