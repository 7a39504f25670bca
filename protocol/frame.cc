#include "protocol/frame.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>

#include "protocol/message_codec.h"

namespace tributary {
namespace {

void PutLe(uint8_t* out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out[i] = static_cast<uint8_t>(v >> (8 * i));
}

uint64_t GetLe(const uint8_t* in, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= uint64_t{in[i]} << (8 * i);
  return v;
}

}  // namespace

FrameHeaderBytes EncodeFrameHeader(const FrameHeader& header) {
  FrameHeaderBytes out{};
  PutLe(out.data(), header.magic, 4);
  PutLe(out.data() + 4, header.version, 2);
  out[6] = static_cast<uint8_t>(header.type);
  out[7] = header.flags;
  PutLe(out.data() + 8, header.payload_length, 8);
  return out;
}

Result<FrameHeader> ParseFrameHeader(std::span<const uint8_t, kFrameHeaderBytes> bytes,
                                     const ProtocolLimits& limits) {
  const auto magic = static_cast<uint32_t>(GetLe(bytes.data(), 4));
  if (magic != kFrameMagic) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "frame starts with 0x%08x, expected 0x%08x (\"TRIB\")", magic,
                  kFrameMagic);
    return ProtocolError(ErrorCode::kBadMagic, buf);
  }
  const auto version = static_cast<uint16_t>(GetLe(bytes.data() + 4, 2));
  if (version != kProtocolVersion) {
    return ProtocolError(ErrorCode::kUnsupportedVersion,
                         "peer speaks protocol version " + std::to_string(version) +
                             "; this build speaks version " + std::to_string(kProtocolVersion));
  }
  FrameHeader h;
  h.magic = magic;
  h.version = version;
  h.flags = bytes[7];
  h.payload_length = GetLe(bytes.data() + 8, 8);
  if (h.payload_length > limits.max_frame_payload) {
    return ProtocolError(ErrorCode::kFrameTooLarge,
                         "frame payload length " + std::to_string(h.payload_length) +
                             " exceeds the cap of " + std::to_string(limits.max_frame_payload) +
                             " bytes");
  }
  const std::optional<MessageType> type = MessageTypeFromWire(bytes[6]);
  if (!type) {
    return ProtocolError(ErrorCode::kUnknownMessageType,
                         "frame type " + std::to_string(bytes[6]) + " names no message");
  }
  h.type = *type;
  if ((h.flags & ~kKnownFrameFlags) != 0) {
    char buf[48];
    std::snprintf(buf, sizeof buf, "unknown frame flag bits 0x%02x", h.flags & ~kKnownFrameFlags);
    return ProtocolError(ErrorCode::kMalformedFrame, buf);
  }
  if (h.is_chunk() && h.payload_length < kChunkHeaderBytes) {
    return ProtocolError(ErrorCode::kMalformedFrame,
                         "chunk frame of " + std::to_string(h.payload_length) +
                             " bytes is shorter than its 24-byte chunk header");
  }
  return h;
}

void EncodeChunkHeader(const ChunkHeader& chunk, uint8_t* out) {
  PutLe(out, chunk.transfer_id, 8);
  PutLe(out + 8, chunk.offset, 8);
  PutLe(out + 16, chunk.total_size, 8);
}

ChunkHeader ParseChunkHeader(const uint8_t* in) {
  return {GetLe(in, 8), GetLe(in + 8, 8), GetLe(in + 16, 8)};
}

std::vector<uint8_t> OutboundMessage::FrameBytes(size_t i) const {
  const FrameRef& f = frames.at(i);
  std::vector<uint8_t> out(f.header.begin(), f.header.begin() + f.header_length);
  ForEachBodyPiece(f.body_offset, f.body_length,
                   [&out](const uint8_t* p, size_t n) { out.insert(out.end(), p, p + n); });
  return out;
}

std::vector<uint8_t> OutboundMessage::BodyBytes() const {
  std::vector<uint8_t> out;
  out.reserve(static_cast<size_t>(body_size()));
  ForEachBodyPiece(0, body_size(),
                   [&out](const uint8_t* p, size_t n) { out.insert(out.end(), p, p + n); });
  return out;
}

std::vector<uint8_t> OutboundMessage::Flatten() const {
  std::vector<uint8_t> out;
  for (size_t i = 0; i < frames.size(); ++i) {
    const std::vector<uint8_t> f = FrameBytes(i);
    out.insert(out.end(), f.begin(), f.end());
  }
  return out;
}

Result<OutboundMessage> EncodeOutbound(const Message& message, const ProtocolLimits& limits,
                                       uint64_t transfer_id) {
  OutboundMessage out;
  out.type = TypeOf(message);
  TRIB_RETURN_IF_ERROR(
      EncodeMessageBodySharingPayload(message, &out.body, &out.shared_tail, &out.tail));
  const uint64_t total = out.body_size();
  if (total > limits.max_message_bytes) {
    return ProtocolError(ErrorCode::kMessageTooLarge,
                         MessageTypeName(out.type) + " body of " + std::to_string(total) +
                             " bytes exceeds the cap of " +
                             std::to_string(limits.max_message_bytes) + " bytes");
  }
  FrameHeader h;
  h.type = out.type;
  if (total <= limits.chunk_data_bytes) {
    OutboundMessage::FrameRef f;
    h.payload_length = total;
    const FrameHeaderBytes hb = EncodeFrameHeader(h);
    std::copy(hb.begin(), hb.end(), f.header.begin());
    f.header_length = kFrameHeaderBytes;
    f.body_length = total;
    out.frames.push_back(f);
    return out;
  }
  h.flags = kFrameFlagChunk;
  out.frames.reserve(
      static_cast<size_t>((total + limits.chunk_data_bytes - 1) / limits.chunk_data_bytes));
  for (uint64_t offset = 0; offset < total; offset += limits.chunk_data_bytes) {
    OutboundMessage::FrameRef f;
    f.body_offset = offset;
    f.body_length = std::min<uint64_t>(limits.chunk_data_bytes, total - offset);
    h.payload_length = kChunkHeaderBytes + f.body_length;
    const FrameHeaderBytes hb = EncodeFrameHeader(h);
    std::copy(hb.begin(), hb.end(), f.header.begin());
    EncodeChunkHeader({transfer_id, offset, total}, f.header.data() + kFrameHeaderBytes);
    f.header_length = kFrameHeaderBytes + kChunkHeaderBytes;
    out.frames.push_back(f);
  }
  return out;
}

}  // namespace tributary
