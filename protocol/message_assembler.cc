#include "protocol/message_assembler.h"

#include <algorithm>
#include <string>
#include <utility>

namespace tributary {

Status MessageAssembler::Fail(Status s) {
  error_ = std::move(s);
  transfer_.reset();
  return error_;
}

Result<std::optional<AssembledMessage>> MessageAssembler::Add(Frame&& frame) {
  if (!error_.ok()) return error_;
  if (!frame.header.is_chunk()) {
    return std::optional<AssembledMessage>(
        AssembledMessage{frame.header.type, std::move(frame.payload)});
  }
  if (frame.payload.size() < kChunkHeaderBytes) {  // ParseFrameHeader already refuses these
    return Fail(ProtocolError(ErrorCode::kMalformedFrame, "chunk frame without a chunk header"));
  }
  const ChunkHeader c = ParseChunkHeader(frame.payload.data());
  const uint64_t length = frame.payload.size() - kChunkHeaderBytes;
  const std::string type_name = MessageTypeName(frame.header.type);
  if (length == 0) {
    return Fail(ProtocolError(
        ErrorCode::kMalformedFrame,
        type_name + " chunk at offset " + std::to_string(c.offset) + " carries no data"));
  }
  if (!transfer_) {
    if (c.offset != 0) {
      return Fail(ProtocolError(ErrorCode::kMalformedFrame,
                                type_name + " transfer " + std::to_string(c.transfer_id) +
                                    " starts at offset " + std::to_string(c.offset) +
                                    ", expected 0"));
    }
    if (c.total_size > limits_.max_message_bytes) {
      return Fail(ProtocolError(ErrorCode::kMessageTooLarge,
                                type_name + " transfer announces " + std::to_string(c.total_size) +
                                    " bytes; the cap is " +
                                    std::to_string(limits_.max_message_bytes) + " bytes"));
    }
    if (c.total_size <= length) {
      return Fail(ProtocolError(ErrorCode::kMalformedFrame,
                                type_name + " transfer of " + std::to_string(c.total_size) +
                                    " bytes fits in its first chunk; send it as a plain frame"));
    }
    transfer_ = Transfer{frame.header.type, c.transfer_id, c.total_size, {}};
  } else {
    const Transfer& t = *transfer_;
    if (c.transfer_id != t.id || frame.header.type != t.type || c.total_size != t.total) {
      return Fail(ProtocolError(ErrorCode::kMalformedFrame,
                                type_name + " chunk of transfer " + std::to_string(c.transfer_id) +
                                    " (total " + std::to_string(c.total_size) + ") arrived while " +
                                    MessageTypeName(t.type) + " transfer " + std::to_string(t.id) +
                                    " (total " + std::to_string(t.total) + ") is open"));
    }
    if (c.offset != t.body.size()) {
      return Fail(ProtocolError(ErrorCode::kMalformedFrame,
                                type_name + " chunk at offset " + std::to_string(c.offset) +
                                    ", expected " + std::to_string(t.body.size())));
    }
  }
  Transfer& t = *transfer_;
  if (length > t.total - t.body.size()) {
    return Fail(ProtocolError(ErrorCode::kMalformedFrame,
                              type_name + " chunk at offset " + std::to_string(c.offset) + " of " +
                                  std::to_string(length) + " bytes runs past the total of " +
                                  std::to_string(t.total)));
  }
  // Grow geometrically, but never beyond what has arrived times two or the announced total.
  const uint64_t needed = t.body.size() + length;
  if (needed > t.body.capacity()) {
    t.body.reserve(static_cast<size_t>(
        std::min<uint64_t>(t.total, std::max<uint64_t>(needed, 2 * t.body.size()))));
  }
  t.body.insert(t.body.end(), frame.payload.begin() + kChunkHeaderBytes, frame.payload.end());
  if (t.body.size() < t.total) return std::optional<AssembledMessage>();
  AssembledMessage done{t.type, std::move(t.body)};
  transfer_.reset();
  return std::optional<AssembledMessage>(std::move(done));
}

}  // namespace tributary
