#include "protocol/message_reader.h"

#include <algorithm>
#include <utility>

#include "protocol/message_codec.h"

namespace tributary {

MessageReader::MessageReader(const ProtocolLimits& limits)
    : frames_(limits),
      assembler_(limits, [this](MessageType type, std::span<const uint8_t> body,
                                const std::shared_ptr<const void>& owner) {
        // A reassembled body is shared: a large update is not copied out of it.
        Message message;
        TRIB_RETURN_IF_ERROR(DecodeMessageBodySharing(type, owner, body, &message));
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

std::span<uint8_t> MessageReader::ReadSpace() {
  const uint64_t left = frames_.chunk_data_left();
  if (!error_.ok() || left == 0) return {};
  const std::span<uint8_t> space = assembler_.ChunkSpace();
  return space.first(static_cast<size_t>(std::min<uint64_t>(space.size(), left)));
}

Status MessageReader::CommitRead(size_t n, std::vector<Message>* messages) {
  if (!error_.ok()) return error_;
  if (n == 0 || n > ReadSpace().size()) {
    return error_ = Status::Internal("MessageReader::CommitRead past the read space");
  }
  out_ = messages;
  const bool last = frames_.SkipChunkData(n);
  error_ = assembler_.OnChunkDataInPlace(n, last);
  out_ = nullptr;
  return error_;
}

}  // namespace tributary
