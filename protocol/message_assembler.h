// MessageAssembler: the FrameSink that turns frames into whole message bodies, reassembling
// chunked transfers, and hands each body to a callback.
//
// Rules for chunks (frame.h), each broken one a MALFORMED_FRAME or MESSAGE_TOO_LARGE error:
//   - a transfer starts with offset 0 and announces total_size, which must be at most the cap for
//     its type (ProtocolLimits::CapFor: max_message_bytes, 64-bit, for model-bearing messages;
//     max_control_message_bytes for the rest, which a plain frame also may not exceed) and larger
//     than its first chunk;
//   - only one chunked transfer is open at a time; its chunks arrive in order with the same
//     transfer id, type and total_size; plain frames may arrive between them;
//   - a chunk may not run past total_size, and may not be empty.
// Memory for a transfer grows with the bytes that actually arrived (never reserved from the
// announced total alone), so a peer that announces 1 GiB and sends 1 KiB costs about 1 KiB. The
// transfer's buffer is handed over with its body (BodyHandler) and freed with its last owner.
//
// After an error the assembler is failed and returns that error from every later call. Not
// thread-safe; one per connection.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>

#include "protocol/byte_buffer.h"
#include "protocol/frame_decoder.h"

namespace tributary {

class MessageAssembler final : public FrameSink {
 public:
  // Receives each complete body. `owner` is null for a plain frame's body, which is valid only
  // during the call; a reassembled body is handed over instead: `owner` holds its buffer, which
  // nobody writes again, so the handler may keep pointers into it by keeping `owner`. An error it
  // returns fails the assembler (and the connection).
  using BodyHandler = std::function<Status(MessageType, std::span<const uint8_t>,
                                           const std::shared_ptr<const void>& owner)>;

  MessageAssembler(const ProtocolLimits& limits, BodyHandler on_body)
      : limits_(limits), on_body_(std::move(on_body)) {}

  Status OnFrame(const FrameHeader& header, std::span<const uint8_t> payload) override;
  Status OnChunkBegin(const FrameHeader& header, const ChunkHeader& chunk) override;
  Status OnChunkData(std::span<const uint8_t> data, bool last) override;

  // Zero-copy receive: the reserved space where the current chunk frame's remaining data bytes
  // belong (empty when no chunk data is expected). OnChunkBegin already reserved it, within the
  // growth rule above, so reading into it allocates nothing. Valid until the next call.
  std::span<uint8_t> ChunkSpace();
  // Like OnChunkData for n bytes that were written at the start of ChunkSpace().
  Status OnChunkDataInPlace(size_t n, bool last);

  // The cap on messages whose first frame arrives from now on (see ProtocolLimits::CapFor).
  void set_max_message_bytes(uint64_t n) { limits_.max_message_bytes = n; }

  bool in_transfer() const { return transfer_.has_value(); }
  // Bytes of the open transfer received so far (0 when none is open).
  uint64_t transfer_received() const { return transfer_ ? transfer_->body.size() : 0; }
  // Bytes of memory held for the open transfer's body (0 when none is open): grows with the bytes
  // that arrived, never with the announced total alone.
  uint64_t transfer_reserved() const { return transfer_ ? transfer_->body.capacity() : 0; }
  // The open transfer's announced size (0 when none is open).
  uint64_t transfer_total() const { return transfer_ ? transfer_->total : 0; }
  // Transfers begun so far: tells one open transfer from the next.
  uint64_t transfers_begun() const { return transfers_begun_; }

 private:
  struct Transfer {
    Transfer(MessageType t, uint64_t i, uint64_t n) : type(t), id(i), total(n) {}
    MessageType type;
    uint64_t id;
    uint64_t total;
    ByteBuffer body;
  };
  Status Fail(Status s);
  // After n chunk data bytes were added to the body: hands over a finished transfer.
  Status ChunkDataAdded(size_t n, bool last);

  ProtocolLimits limits_;
  BodyHandler on_body_;
  std::optional<Transfer> transfer_;
  uint64_t chunk_left_ = 0;  // data bytes of the current chunk frame still to come
  uint64_t transfers_begun_ = 0;
  Status error_;
};

}  // namespace tributary
