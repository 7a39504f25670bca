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

Status MessageAssembler::OnFrame(const FrameHeader& header, std::span<const uint8_t> payload) {
  if (!error_.ok()) return error_;
  if (payload.size() > limits_.CapFor(header.type))
    return Fail(ProtocolError(ErrorCode::kMessageTooLarge,
                              MessageTypeName(header.type) + " of " +
                                  std::to_string(payload.size()) + " bytes; the cap is " +
                                  std::to_string(limits_.CapFor(header.type)) + " bytes"));
  const Status s = on_body_(header.type, payload, nullptr);
  if (!s.ok()) return Fail(s);
  return Status::Ok();
}

Status MessageAssembler::OnChunkBegin(const FrameHeader& header, const ChunkHeader& c) {
  if (!error_.ok()) return error_;
  const uint64_t length = header.payload_length - kChunkHeaderBytes;
  const std::string type_name = MessageTypeName(header.type);
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
    if (c.total_size > limits_.CapFor(header.type)) {
      return Fail(ProtocolError(ErrorCode::kMessageTooLarge,
                                type_name + " transfer announces " + std::to_string(c.total_size) +
                                    " bytes; the cap is " +
                                    std::to_string(limits_.CapFor(header.type)) + " bytes"));
    }
    if (c.total_size <= length) {
      return Fail(ProtocolError(ErrorCode::kMalformedFrame,
                                type_name + " transfer of " + std::to_string(c.total_size) +
                                    " bytes fits in its first chunk; send it as a plain frame"));
    }
    transfer_.emplace(header.type, c.transfer_id, c.total_size);
    ++transfers_begun_;
  } else {
    const Transfer& t = *transfer_;
    if (c.transfer_id != t.id || header.type != t.type || c.total_size != t.total) {
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
  // Grow geometrically, but never past twice what has arrived or the announced total.
  const uint64_t needed = t.body.size() + length;
  if (needed > t.body.capacity()) {
    t.body.Reserve(static_cast<size_t>(
        std::min<uint64_t>(t.total, std::max<uint64_t>(needed, 2 * t.body.size()))));
  }
  chunk_left_ = length;
  return Status::Ok();
}

Status MessageAssembler::OnChunkData(std::span<const uint8_t> data, bool last) {
  if (!error_.ok()) return error_;
  if (!transfer_ || data.size() > chunk_left_ || (last && data.size() != chunk_left_)) {
    return Fail(Status::Internal("chunk data without a matching chunk header"));  // decoder bug
  }
  transfer_->body.Append(data.data(), data.size());
  return ChunkDataAdded(data.size(), last);
}

std::span<uint8_t> MessageAssembler::ChunkSpace() {
  if (!error_.ok() || !transfer_ || chunk_left_ == 0) return {};
  ByteBuffer& body = transfer_->body;
  // OnChunkBegin reserved size() + chunk_left_.
  return {body.data() + body.size(), static_cast<size_t>(chunk_left_)};
}

Status MessageAssembler::OnChunkDataInPlace(size_t n, bool last) {
  if (!error_.ok()) return error_;
  if (!transfer_ || n > chunk_left_ || (last && n != chunk_left_)) {
    return Fail(Status::Internal("chunk data without a matching chunk header"));  // caller bug
  }
  transfer_->body.CommitAppended(n);
  return ChunkDataAdded(n, last);
}

Status MessageAssembler::ChunkDataAdded(size_t n, bool last) {
  chunk_left_ -= n;
  if (!last || transfer_->body.size() < transfer_->total) return Status::Ok();
  const MessageType type = transfer_->type;
  auto body = std::make_shared<const ByteBuffer>(std::move(transfer_->body));
  transfer_.reset();
  const Status s = on_body_(type, body->span(), body);
  if (!s.ok()) return Fail(s);
  return Status::Ok();
}

}  // namespace tributary
