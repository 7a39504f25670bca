// Frames: the unit a connection reads and writes.
//
// Every frame is a fixed 16-byte little-endian header followed by `payload_length` bytes:
//   offset 0  uint32 magic           kFrameMagic ("TRIB")
//   offset 4  uint16 version         kProtocolVersion
//   offset 6  uint8  type            MessageType
//   offset 7  uint8  flags           bit 0: kFrameFlagChunk; other bits must be 0
//   offset 8  uint64 payload_length  <= ProtocolLimits::max_frame_payload
// A plain frame's payload is one whole message body (message_codec.h). A message whose body is
// larger than ProtocolLimits::chunk_data_bytes travels as chunk frames of the same type: each
// chunk payload starts with a 24-byte little-endian chunk header
//   uint64 transfer_id, uint64 offset, uint64 total_size
// followed by body bytes [offset, offset + payload_length - 24). Chunks of one transfer are sent in
// order; plain frames (a Heartbeat, say) may come between them. See message_assembler.h.
//
// All functions are thread-safe (no shared state).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "protocol/byte_buffer.h"
#include "protocol/messages.h"
#include "protocol/wire.h"
#include "tributary/result.h"

namespace tributary {

inline constexpr uint8_t kFrameFlagChunk = 0x01;
inline constexpr uint8_t kKnownFrameFlags = kFrameFlagChunk;

struct FrameHeader {
  uint32_t magic = kFrameMagic;
  uint16_t version = kProtocolVersion;
  MessageType type = MessageType::kHeartbeat;
  uint8_t flags = 0;
  uint64_t payload_length = 0;

  bool is_chunk() const { return (flags & kFrameFlagChunk) != 0; }
};

struct ChunkHeader {
  uint64_t transfer_id = 0;
  uint64_t offset = 0;
  uint64_t total_size = 0;
};

struct Frame {
  FrameHeader header;
  std::vector<uint8_t> payload;
};

using FrameHeaderBytes = std::array<uint8_t, kFrameHeaderBytes>;

// Writes `header` in wire layout. Does not validate it.
FrameHeaderBytes EncodeFrameHeader(const FrameHeader& header);

// Reads and validates a header: BAD_MAGIC, UNSUPPORTED_VERSION (naming both versions),
// FRAME_TOO_LARGE (payload_length over limits.max_frame_payload), UNKNOWN_MESSAGE_TYPE, or
// MALFORMED_FRAME (unknown flag bits; a chunk frame too short for its chunk header). Checked in
// that order, so nothing is trusted before the magic and version are.
Result<FrameHeader> ParseFrameHeader(std::span<const uint8_t, kFrameHeaderBytes> bytes,
                                     const ProtocolLimits& limits);

void EncodeChunkHeader(const ChunkHeader& chunk, uint8_t* out);  // writes kChunkHeaderBytes
ChunkHeader ParseChunkHeader(const uint8_t* in);                 // reads kChunkHeaderBytes

// A message encoded for sending: its body and the frames that carry it. Frame i is
// frames[i].header bytes followed by body bytes [frames[i].body_offset, + frames[i].body_length).
//
// The body is `body` followed by the bytes of `tail`, owned by `shared_tail`, when there is one: a
// TaskAssignment's or EvaluateTask's model data (raw floats or encoded bytes, the last bytes of
// both messages) is referenced, not copied, so a model
// sent to 1,000 clients, each message encoded on its own (their fit.seed differs), is in memory
// once. The tail is shared and never written; it stays alive as long as the message does.
struct OutboundMessage {
  struct FrameRef {
    std::array<uint8_t, kFrameHeaderBytes + kChunkHeaderBytes> header{};
    size_t header_length = 0;  // kFrameHeaderBytes, plus kChunkHeaderBytes for a chunk
    uint64_t body_offset = 0;
    uint64_t body_length = 0;
  };
  MessageType type = MessageType::kHeartbeat;
  ByteBuffer body;
  std::shared_ptr<const void> shared_tail;  // owns `tail`'s bytes; may be null
  std::span<const uint8_t> tail;            // empty when shared_tail is null
  std::vector<FrameRef> frames;

  // The whole body's size: body plus the tail's bytes.
  uint64_t body_size() const { return body.size() + tail_bytes(); }
  uint64_t tail_bytes() const { return tail.size(); }
  // Calls fn(const uint8_t* data, size_t size) for each contiguous piece (one or two) of body bytes
  // [offset, offset + length), which must lie within body_size().
  template <class Fn>
  void ForEachBodyPiece(uint64_t offset, uint64_t length, Fn&& fn) const {
    if (offset < body.size() && length > 0) {
      const uint64_t n = std::min<uint64_t>(length, body.size() - offset);
      fn(body.data() + offset, static_cast<size_t>(n));
      offset += n;
      length -= n;
    }
    if (length > 0) {
      fn(tail.data() + (offset - body.size()), static_cast<size_t>(length));
    }
  }

  // Frame i as bytes, and all frames back to back (tests, fuzz seeds).
  std::vector<uint8_t> FrameBytes(size_t i) const;
  // The whole body, body then tail, in one vector (what the receiver reassembles).
  std::vector<uint8_t> BodyBytes() const;
  std::vector<uint8_t> Flatten() const;
};

// Encodes `message` and cuts it into frames: one plain frame when the body is at most
// limits.chunk_data_bytes, otherwise chunks carrying `transfer_id`. MESSAGE_TOO_LARGE when the body
// exceeds limits.max_message_bytes; encode errors (a field over its cap) as EncodeMessageBody.
Result<OutboundMessage> EncodeOutbound(const Message& message, const ProtocolLimits& limits,
                                       uint64_t transfer_id);

}  // namespace tributary
