// FrameDecoder: turns a byte stream, fed in pieces of any size, into frames.
//
// The header is validated (ParseFrameHeader) as soon as its 16 bytes are in, before any payload
// memory is reserved, so a bad magic, an unknown version or a length of 2^40 fails without
// allocating. Payload memory is then at most ProtocolLimits::max_frame_payload per frame.
//
// After an error the decoder is failed: it returns the same Status from every later Feed and never
// yields another frame (the connection is going to close). Not thread-safe; one per connection.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "protocol/frame.h"

namespace tributary {

class FrameDecoder {
 public:
  explicit FrameDecoder(const ProtocolLimits& limits) : limits_(limits) {}

  // Consumes all of `data` (or up to the first bad header), appending each completed frame to
  // `frames`. Frames completed before an error are still appended.
  Status Feed(std::span<const uint8_t> data, std::vector<Frame>* frames);

  // True when some, but not all, bytes of a frame have arrived. Transports time this state out.
  bool mid_frame() const { return header_have_ > 0; }
  bool failed() const { return !error_.ok(); }
  // Frames completed so far.
  uint64_t frames_decoded() const { return frames_decoded_; }

 private:
  ProtocolLimits limits_;
  FrameHeaderBytes header_bytes_{};
  size_t header_have_ = 0;             // bytes of the current frame's header received
  std::optional<FrameHeader> header_;  // set once the current header is complete and valid
  std::vector<uint8_t> payload_;       // the current frame's payload so far
  uint64_t frames_decoded_ = 0;
  Status error_;
};

}  // namespace tributary
