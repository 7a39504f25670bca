// MessageAssembler: turns frames into whole message bodies, reassembling chunked transfers.
//
// Rules for chunks (frame.h), each broken one a MALFORMED_FRAME or MESSAGE_TOO_LARGE error:
//   - a transfer starts with offset 0 and announces total_size, which must be at most
//     ProtocolLimits::max_message_bytes (64-bit: no 2 GiB limit) and larger than one chunk;
//   - only one chunked transfer is open at a time; its chunks arrive in order with the same
//     transfer id, type and total_size; plain frames may arrive between them;
//   - a chunk may not run past total_size, and may not be empty.
// Memory for a transfer grows with the bytes that actually arrived (never reserved from the
// announced total alone), so a peer that announces 1 GiB and sends 1 KiB costs about 1 KiB.
//
// After an error the assembler is failed and returns that error from every later Add. Not
// thread-safe; one per connection.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "protocol/frame.h"

namespace tributary {

struct AssembledMessage {
  MessageType type = MessageType::kHeartbeat;
  std::vector<uint8_t> body;
};

class MessageAssembler {
 public:
  explicit MessageAssembler(const ProtocolLimits& limits) : limits_(limits) {}

  // A whole message when `frame` completes one; nullopt when a transfer needs more chunks.
  Result<std::optional<AssembledMessage>> Add(Frame&& frame);

  bool in_transfer() const { return transfer_.has_value(); }
  // Bytes of the open transfer received so far (0 when none is open).
  uint64_t transfer_received() const { return transfer_ ? transfer_->body.size() : 0; }

 private:
  struct Transfer {
    MessageType type;
    uint64_t id = 0;
    uint64_t total = 0;
    std::vector<uint8_t> body;
  };
  Status Fail(Status s);

  ProtocolLimits limits_;
  std::optional<Transfer> transfer_;
  Status error_;
};

}  // namespace tributary
