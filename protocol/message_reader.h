// MessageReader: the whole receive path of a connection, bytes in, messages out:
// FrameDecoder -> MessageAssembler -> DecodeMessageBody.
//
// Every transport feeds what it reads into one of these, so TLS and in-memory connections enforce
// the same framing and the same caps; the fuzz target drives it directly. The first error (a
// ProtocolError, see wire.h) is sticky: the connection sends an Error with its code and closes.
// Not thread-safe; one per connection.
#pragma once

#include <span>
#include <vector>

#include "protocol/frame_decoder.h"
#include "protocol/message_assembler.h"
#include "protocol/messages.h"

namespace tributary {

class MessageReader {
 public:
  explicit MessageReader(const ProtocolLimits& limits);
  MessageReader(const MessageReader&) = delete;
  MessageReader& operator=(const MessageReader&) = delete;

  // Consumes `data`, appending each message it completes to `messages` (also those completed
  // before an error).
  Status Feed(std::span<const uint8_t> data, std::vector<Message>* messages);

  // Zero-copy receive, for a connection that reads a stream: while a chunk frame's data is
  // expected, the reassembly space it belongs in (else empty). A read may put bytes at its start
  // and report them with CommitRead instead of Feed; that skips one copy of every chunked byte.
  // Valid until the next Feed or CommitRead.
  std::span<uint8_t> ReadSpace();
  // Consumes n (1 <= n <= ReadSpace().size()) bytes that were written at ReadSpace().data(), like
  // Feed would.
  Status CommitRead(size_t n, std::vector<Message>* messages);

  // The cap on messages that begin from now on (a coordinator lowers it until Hello, then sets the
  // run's update size).
  void set_max_message_bytes(uint64_t n) { assembler_.set_max_message_bytes(n); }

  // Some bytes of a frame have arrived, but not the whole frame.
  bool mid_frame() const { return frames_.mid_frame(); }
  // Frames completed so far; with mid_frame() this tells when a new frame has begun.
  uint64_t frames_decoded() const { return frames_.frames_decoded(); }
  // A chunked message is partly received.
  bool mid_message() const { return assembler_.in_transfer(); }
  // Its announced size (0 when none is open).
  uint64_t message_total() const { return assembler_.transfer_total(); }
  // Its bytes received so far (0 when none is open).
  uint64_t message_received() const { return assembler_.transfer_received(); }
  // Chunked messages begun so far: with mid_message() this tells when a new one has begun.
  uint64_t messages_begun() const { return assembler_.transfers_begun(); }

 private:
  FrameDecoder frames_;
  MessageAssembler assembler_;
  std::vector<Message>* out_ = nullptr;  // set during Feed
  Status error_;
};

}  // namespace tributary
