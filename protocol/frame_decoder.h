// FrameDecoder: turns a byte stream, fed in pieces of any size, into frame events for a FrameSink.
//
// The header is validated (ParseFrameHeader) as soon as its 16 bytes are in, before any payload
// memory is reserved, so a bad magic, an unknown version or a length of 2^40 fails without
// allocating. A plain frame's payload is handed over whole (straight from the input when it
// arrived in one piece, else from a buffer of at most ProtocolLimits::max_frame_payload). A chunk
// frame is streamed: its 24-byte chunk header, then its data pieces as they arrive, so chunked
// transfers are copied once, from the input into the reassembly buffer.
//
// After an error (its own or the sink's) the decoder is failed: it returns the same Status from
// every later Feed and calls the sink no more. Not thread-safe; one per connection.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "protocol/frame.h"

namespace tributary {

class FrameSink {
 public:
  virtual ~FrameSink() = default;
  // A whole plain frame; `payload` is valid only during the call.
  virtual Status OnFrame(const FrameHeader& header, std::span<const uint8_t> payload) = 0;
  // A chunk frame's chunk header arrived; header.payload_length - kChunkHeaderBytes data bytes
  // follow through OnChunkData.
  virtual Status OnChunkBegin(const FrameHeader& header, const ChunkHeader& chunk) = 0;
  // The next data bytes of the current chunk frame (valid only during the call); `last` is set on
  // the piece that ends the frame (possibly empty when the chunk carries no data).
  virtual Status OnChunkData(std::span<const uint8_t> data, bool last) = 0;
};

class FrameDecoder {
 public:
  explicit FrameDecoder(const ProtocolLimits& limits) : limits_(limits) {}

  // Consumes `data` (up to the first error), calling `sink` for everything it completes.
  Status Feed(std::span<const uint8_t> data, FrameSink& sink);

  // True when some, but not all, bytes of a frame have arrived. Transports time this state out.
  bool mid_frame() const { return stage_ != Stage::kHeader || header_have_ > 0; }
  bool failed() const { return !error_.ok(); }
  // Frames completed so far.
  uint64_t frames_decoded() const { return frames_decoded_; }

  // Data bytes of the current chunk frame still to come; 0 unless the decoder is inside chunk data.
  uint64_t chunk_data_left() const {
    return error_.ok() && stage_ == Stage::kChunkData ? remaining_ : 0;
  }
  // Counts n (1 <= n <= chunk_data_left()) chunk data bytes that the caller handed to the sink
  // itself (MessageAssembler::OnChunkDataInPlace) instead of feeding them; returns whether they
  // ended the frame.
  bool SkipChunkData(size_t n);

 private:
  enum class Stage { kHeader, kPayload, kChunkHeader, kChunkData };
  Status Fail(Status s);
  void EndFrame();

  ProtocolLimits limits_;
  Stage stage_ = Stage::kHeader;
  FrameHeaderBytes header_bytes_{};
  size_t header_have_ = 0;
  FrameHeader header_;
  std::array<uint8_t, kChunkHeaderBytes> chunk_bytes_{};
  size_t chunk_have_ = 0;
  uint64_t remaining_ = 0;        // payload (or chunk data) bytes still to come
  std::vector<uint8_t> payload_;  // a plain frame that arrived in pieces
  uint64_t frames_decoded_ = 0;
  Status error_;
};

}  // namespace tributary
