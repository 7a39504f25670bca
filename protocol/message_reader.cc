#include "protocol/message_reader.h"

#include <utility>

#include "protocol/message_codec.h"

namespace tributary {

MessageReader::MessageReader(const ProtocolLimits& limits)
    : frames_(limits), assembler_(limits, [this](MessageType type, std::span<const uint8_t> body) {
        Message message;
        TRIB_RETURN_IF_ERROR(DecodeMessageBodyInto(type, body, &message));
        out_->push_back(std::move(message));
        return Status::Ok();
      }) {}

Status MessageReader::Feed(std::span<const uint8_t> data, std::vector<Message>* messages) {
  if (!error_.ok()) return error_;
  out_ = messages;
  error_ = frames_.Feed(data, assembler_);
  out_ = nullptr;
  return error_;
}

}  // namespace tributary
