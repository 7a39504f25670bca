#include "protocol/message_reader.h"

#include <utility>

#include "protocol/message_codec.h"

namespace tributary {

Status MessageReader::Feed(std::span<const uint8_t> data, std::vector<Message>* messages) {
  if (!error_.ok()) return error_;
  pending_.clear();
  const Status framing = frames_.Feed(data, &pending_);
  for (Frame& frame : pending_) {
    Result<std::optional<AssembledMessage>> assembled = assembler_.Add(std::move(frame));
    if (!assembled.ok()) {
      error_ = assembled.status();
      break;
    }
    if (!assembled->has_value()) continue;
    Result<Message> message = DecodeMessageBody((*assembled)->type, (*assembled)->body);
    if (!message.ok()) {
      error_ = message.status();
      break;
    }
    messages->push_back(std::move(*message));
  }
  pending_.clear();
  if (error_.ok() && !framing.ok()) error_ = framing;
  return error_;
}

}  // namespace tributary
