// Framing: header layout and validation, the incremental FrameDecoder, chunking and bounded
// reassembly, and the MessageReader pipeline.
#include <gtest/gtest.h>

#include <cstring>
#include <numeric>

#include "protocol/frame.h"
#include "protocol/frame_decoder.h"
#include "protocol/message_assembler.h"
#include "protocol/message_codec.h"
#include "protocol/message_reader.h"

namespace tributary {
namespace {

FrameHeaderBytes Header(uint64_t length, MessageType type = MessageType::kHeartbeat,
                        uint8_t flags = 0, uint16_t version = kProtocolVersion,
                        uint32_t magic = kFrameMagic) {
  FrameHeader h;
  h.magic = magic;
  h.version = version;
  h.type = type;
  h.flags = flags;
  h.payload_length = length;
  return EncodeFrameHeader(h);
}

TEST(FrameHeaderTest, LayoutIsLittleEndian) {
  const FrameHeaderBytes b = Header(0x0102030405060708ULL, MessageType::kError, kFrameFlagChunk);
  const uint8_t want[16] = {'T', 'R', 'I', 'B', 1, 0, 8, 1, 8, 7, 6, 5, 4, 3, 2, 1};
  EXPECT_EQ(std::memcmp(b.data(), want, 16), 0);
}

TEST(FrameHeaderTest, ParsesValidHeader) {
  Result<FrameHeader> h = ParseFrameHeader(Header(100, MessageType::kHello), ProtocolLimits{});
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ(h->type, MessageType::kHello);
  EXPECT_EQ(h->payload_length, 100u);
  EXPECT_FALSE(h->is_chunk());
}

TEST(FrameHeaderTest, RejectsBadMagic) {
  Result<FrameHeader> h =
      ParseFrameHeader(Header(1, MessageType::kHello, 0, 1, 0x50545448), ProtocolLimits{});
  ASSERT_FALSE(h.ok());
  EXPECT_EQ(ProtocolErrorCodeOf(h.status()), ErrorCode::kBadMagic);
  EXPECT_NE(h.status().message().find("0x50545448"), std::string::npos) << h.status();
}

TEST(FrameHeaderTest, UnknownVersionNamesBothVersions) {
  Result<FrameHeader> h = ParseFrameHeader(Header(1, MessageType::kHello, 0, 7), ProtocolLimits{});
  ASSERT_FALSE(h.ok());
  EXPECT_EQ(ProtocolErrorCodeOf(h.status()), ErrorCode::kUnsupportedVersion);
  EXPECT_EQ(h.status().message(),
            "UNSUPPORTED_VERSION: peer speaks protocol version 7; this build speaks version 1");
}

TEST(FrameHeaderTest, LengthOverCapIsFrameTooLarge) {
  ProtocolLimits limits;
  EXPECT_TRUE(ParseFrameHeader(Header(limits.max_frame_payload), limits).ok());
  Result<FrameHeader> h = ParseFrameHeader(Header(limits.max_frame_payload + 1), limits);
  ASSERT_FALSE(h.ok());
  EXPECT_EQ(ProtocolErrorCodeOf(h.status()), ErrorCode::kFrameTooLarge);
  h = ParseFrameHeader(Header(uint64_t{1} << 40), limits);
  ASSERT_FALSE(h.ok());
  EXPECT_EQ(h.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(h.status().message().find("1099511627776 exceeds the cap of 4194304"),
            std::string::npos)
      << h.status();
}

TEST(FrameHeaderTest, RejectsUnknownTypeFlagsAndShortChunks) {
  FrameHeaderBytes b = Header(1);
  b[6] = 0;
  EXPECT_EQ(ProtocolErrorCodeOf(ParseFrameHeader(b, {}).status()), ErrorCode::kUnknownMessageType);
  b[6] = kMaxMessageType + 1;
  EXPECT_EQ(ProtocolErrorCodeOf(ParseFrameHeader(b, {}).status()), ErrorCode::kUnknownMessageType);
  EXPECT_EQ(
      ProtocolErrorCodeOf(ParseFrameHeader(Header(1, MessageType::kHello, 0x80), {}).status()),
      ErrorCode::kMalformedFrame);
  EXPECT_EQ(ProtocolErrorCodeOf(
                ParseFrameHeader(Header(23, MessageType::kHello, kFrameFlagChunk), {}).status()),
            ErrorCode::kMalformedFrame);
}

TEST(FrameDecoderTest, YieldsFramesFedOneByteAtATime) {
  std::vector<uint8_t> stream;
  for (uint8_t len : {3, 0, 5}) {
    const FrameHeaderBytes h = Header(len);
    stream.insert(stream.end(), h.begin(), h.end());
    for (uint8_t i = 0; i < len; ++i) stream.push_back(static_cast<uint8_t>(len * 10 + i));
  }
  FrameDecoder d(ProtocolLimits{});
  std::vector<Frame> frames;
  std::vector<bool> mid;
  for (uint8_t byte : stream) {
    ASSERT_TRUE(d.Feed(std::span(&byte, 1), &frames).ok());
    mid.push_back(d.mid_frame());
  }
  ASSERT_EQ(frames.size(), 3u);
  EXPECT_EQ(frames[0].payload, (std::vector<uint8_t>{30, 31, 32}));
  EXPECT_TRUE(frames[1].payload.empty());
  EXPECT_EQ(frames[2].payload, (std::vector<uint8_t>{50, 51, 52, 53, 54}));
  EXPECT_TRUE(mid.front());
  EXPECT_FALSE(mid.back());
  EXPECT_FALSE(mid[16 + 3 - 1]);  // right after the first frame
}

TEST(FrameDecoderTest, ErrorIsStickyAndFramesBeforeItSurvive) {
  std::vector<uint8_t> stream;
  FrameHeaderBytes good = Header(1);
  stream.insert(stream.end(), good.begin(), good.end());
  stream.push_back(42);
  FrameHeaderBytes bad = Header(uint64_t{1} << 40);
  stream.insert(stream.end(), bad.begin(), bad.end());
  FrameDecoder d(ProtocolLimits{});
  std::vector<Frame> frames;
  Status s = d.Feed(stream, &frames);
  EXPECT_EQ(ProtocolErrorCodeOf(s), ErrorCode::kFrameTooLarge);
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_TRUE(d.failed());
  EXPECT_EQ(d.Feed(stream, &frames), s);
  EXPECT_EQ(frames.size(), 1u);
}

Message BigUpdate(size_t bytes) {
  UpdateSubmission u;
  u.round = 3;
  u.update.bytes.resize(bytes);
  std::iota(u.update.bytes.begin(), u.update.bytes.end(), uint8_t{0});
  return u;
}

TEST(ChunkingTest, SmallMessageIsOnePlainFrame) {
  Result<OutboundMessage> out = EncodeOutbound(Heartbeat{1, 2}, ProtocolLimits{}, 7);
  ASSERT_TRUE(out.ok());
  ASSERT_EQ(out->frames.size(), 1u);
  EXPECT_EQ(out->frames[0].header_length, kFrameHeaderBytes);
  EXPECT_EQ(out->Flatten().size(), kFrameHeaderBytes + 16);
}

TEST(ChunkingTest, LargeMessageIsChunkedAndReassembled) {
  ProtocolLimits limits;
  limits.max_frame_payload = 1024;
  limits.chunk_data_bytes = 1000;
  const Message m = BigUpdate(10'000);
  Result<OutboundMessage> out = EncodeOutbound(m, limits, 5);
  ASSERT_TRUE(out.ok()) << out.status();
  const size_t body = out->body.size();
  EXPECT_EQ(out->frames.size(), (body + 999) / 1000);
  for (const auto& f : out->frames) EXPECT_LE(f.body_length + kChunkHeaderBytes, 1024u);

  MessageReader reader(limits);
  std::vector<Message> got;
  const std::vector<uint8_t> wire = out->Flatten();
  for (size_t at = 0; at < wire.size(); at += 333) {
    ASSERT_TRUE(
        reader.Feed(std::span(wire).subspan(at, std::min<size_t>(333, wire.size() - at)), &got)
            .ok());
    if (at + 333 < wire.size()) {
      EXPECT_TRUE(got.empty());
    }
  }
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0], m);
  EXPECT_FALSE(reader.mid_message());
}

TEST(ChunkingTest, PlainFramesMayInterleaveWithChunks) {
  ProtocolLimits limits;
  limits.max_frame_payload = 1024;
  limits.chunk_data_bytes = 1000;
  const Message big = BigUpdate(3000);
  OutboundMessage out = *EncodeOutbound(big, limits, 1);
  const std::vector<uint8_t> hb = EncodeOutbound(Heartbeat{4, 5}, limits, 2)->Flatten();
  MessageReader reader(limits);
  std::vector<Message> got;
  for (size_t i = 0; i < out.frames.size(); ++i) {
    OutboundMessage one = out;
    one.frames = {out.frames[i]};
    ASSERT_TRUE(reader.Feed(one.Flatten(), &got).ok());
    if (i == 0) {
      ASSERT_TRUE(reader.Feed(hb, &got).ok());
    }
  }
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0], Message(Heartbeat{4, 5}));
  EXPECT_EQ(got[1], big);
}

TEST(ChunkingTest, SenderRefusesMessagesOverTheCap) {
  ProtocolLimits limits;
  limits.max_message_bytes = 4096;
  Result<OutboundMessage> out = EncodeOutbound(BigUpdate(5000), limits, 1);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(ProtocolErrorCodeOf(out.status()), ErrorCode::kMessageTooLarge);
}

Frame Chunk(uint64_t id, uint64_t offset, uint64_t total, size_t data_len,
            MessageType type = MessageType::kUpdateSubmission) {
  Frame f;
  f.header.type = type;
  f.header.flags = kFrameFlagChunk;
  f.payload.resize(kChunkHeaderBytes + data_len, 0xab);
  EncodeChunkHeader({id, offset, total}, f.payload.data());
  f.header.payload_length = f.payload.size();
  return f;
}

ErrorCode AddError(MessageAssembler& a, Frame f) {
  Result<std::optional<AssembledMessage>> r = a.Add(std::move(f));
  return r.ok() ? ErrorCode::kUnspecified : ProtocolErrorCodeOf(r.status());
}

// 64-bit totals: a 5 GiB transfer is accepted when the cap allows it, and memory follows the bytes
// that arrived, not the announced total.
TEST(AssemblerTest, TotalsOverFourGiBAreFineAndMemoryFollowsArrivals) {
  ProtocolLimits limits;
  limits.max_message_bytes = uint64_t{8} << 30;
  MessageAssembler a(limits);
  const uint64_t total = uint64_t{5} << 30;
  EXPECT_EQ(AddError(a, Chunk(1, 0, total, 1000)), ErrorCode::kUnspecified);
  EXPECT_EQ(AddError(a, Chunk(1, 1000, total, 1000)), ErrorCode::kUnspecified);
  EXPECT_TRUE(a.in_transfer());
  EXPECT_EQ(a.transfer_received(), 2000u);
}

TEST(AssemblerTest, AnnouncedTotalOverCapIsMessageTooLarge) {
  ProtocolLimits limits;
  limits.max_message_bytes = 1 << 20;
  MessageAssembler a(limits);
  EXPECT_EQ(AddError(a, Chunk(1, 0, (1 << 20) + 1, 100)), ErrorCode::kMessageTooLarge);
  // Failed for good.
  EXPECT_EQ(AddError(a, Chunk(2, 0, 1000, 100)), ErrorCode::kMessageTooLarge);
}

TEST(AssemblerTest, RejectsBrokenChunkSequences) {
  const ProtocolLimits limits;
  struct Case {
    const char* what;
    std::vector<Frame> frames;
  };
  std::vector<Case> cases;
  cases.push_back({"first chunk not at 0", {Chunk(1, 10, 1000, 100)}});
  cases.push_back({"fits in one chunk", {Chunk(1, 0, 100, 100)}});
  cases.push_back({"empty chunk", {Chunk(1, 0, 1000, 0)}});
  cases.push_back({"gap", {Chunk(1, 0, 1000, 100), Chunk(1, 200, 1000, 100)}});
  cases.push_back({"replay", {Chunk(1, 0, 1000, 100), Chunk(1, 0, 1000, 100)}});
  cases.push_back({"other id", {Chunk(1, 0, 1000, 100), Chunk(2, 100, 1000, 100)}});
  cases.push_back({"other total", {Chunk(1, 0, 1000, 100), Chunk(1, 100, 2000, 100)}});
  cases.push_back(
      {"other type", {Chunk(1, 0, 1000, 100), Chunk(1, 100, 1000, 100, MessageType::kHello)}});
  cases.push_back({"past total", {Chunk(1, 0, 1000, 900), Chunk(1, 900, 1000, 101)}});
  for (Case& c : cases) {
    MessageAssembler a(limits);
    ErrorCode last = ErrorCode::kUnspecified;
    for (Frame& f : c.frames) last = AddError(a, std::move(f));
    EXPECT_EQ(last, ErrorCode::kMalformedFrame) << c.what;
  }
}

TEST(MessageReaderTest, GoodMessagesBeforeABadFrameAreDelivered) {
  std::vector<uint8_t> wire = EncodeOutbound(Heartbeat{1, 1}, {}, 1)->Flatten();
  const FrameHeaderBytes bad = Header(10, MessageType::kHello, 0, 2);
  wire.insert(wire.end(), bad.begin(), bad.end());
  MessageReader reader(ProtocolLimits{});
  std::vector<Message> got;
  Status s = reader.Feed(wire, &got);
  EXPECT_EQ(ProtocolErrorCodeOf(s), ErrorCode::kUnsupportedVersion);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(reader.Feed(wire, &got), s);
  EXPECT_EQ(got.size(), 1u);
}

TEST(MessageReaderTest, UndecodableBodyIsMalformedMessage) {
  std::vector<uint8_t> wire;
  const FrameHeaderBytes h = Header(3, MessageType::kHeartbeat);
  wire.insert(wire.end(), h.begin(), h.end());
  wire.insert(wire.end(), {1, 2, 3});
  MessageReader reader(ProtocolLimits{});
  std::vector<Message> got;
  Status s = reader.Feed(wire, &got);
  EXPECT_EQ(ProtocolErrorCodeOf(s), ErrorCode::kMalformedMessage);
  EXPECT_NE(s.message().find("Heartbeat"), std::string::npos) << s;
}

TEST(ProtocolLimitsTest, ValidateChecksChunkFitsFrame) {
  EXPECT_TRUE(ProtocolLimits{}.Validate().ok());
  ProtocolLimits l;
  l.chunk_data_bytes = l.max_frame_payload;
  EXPECT_EQ(l.Validate().code(), StatusCode::kInvalidArgument);
  l.chunk_data_bytes = 0;
  EXPECT_EQ(l.Validate().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tributary
