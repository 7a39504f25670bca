// Framing: header layout and validation, the incremental FrameDecoder, chunking and bounded
// reassembly, and the MessageReader pipeline.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <numeric>

#include "protocol/frame.h"
#include "protocol/frame_decoder.h"
#include "protocol/message_assembler.h"
#include "protocol/message_codec.h"
#include "protocol/message_reader.h"

namespace tributary {
namespace {

size_t CurrentRss() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoul(line.substr(6)) * 1024;
  }
  return 0;
}

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

Message BigUpdate(size_t bytes) {
  UpdateSubmission u;
  u.round = 3;
  std::vector<uint8_t> data(bytes);
  std::iota(data.begin(), data.end(), uint8_t{0});
  u.update.bytes = std::move(data);
  return u;
}

// Records what a FrameDecoder yields; chunk frames are rebuilt as chunk header + data.
class CollectingSink : public FrameSink {
 public:
  Status OnFrame(const FrameHeader& h, std::span<const uint8_t> payload) override {
    frames.push_back(Frame{h, {payload.begin(), payload.end()}});
    return Status::Ok();
  }
  Status OnChunkBegin(const FrameHeader& h, const ChunkHeader& c) override {
    current = Frame{h, std::vector<uint8_t>(kChunkHeaderBytes)};
    EncodeChunkHeader(c, current.payload.data());
    return Status::Ok();
  }
  Status OnChunkData(std::span<const uint8_t> data, bool last) override {
    current.payload.insert(current.payload.end(), data.begin(), data.end());
    if (last) frames.push_back(std::move(current));
    return Status::Ok();
  }
  std::vector<Frame> frames;
  Frame current;
};

TEST(FrameHeaderTest, LayoutIsLittleEndian) {
  const FrameHeaderBytes b = Header(0x0102030405060708ULL, MessageType::kError, kFrameFlagChunk);
  const uint8_t want[16] = {
      'T', 'R', 'I', 'B', static_cast<uint8_t>(kProtocolVersion), 0, 8, 1, 8, 7, 6, 5, 4, 3, 2, 1};
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
  const uint16_t next = kProtocolVersion + 1;  // a newer peer's
  Result<FrameHeader> h =
      ParseFrameHeader(Header(1, MessageType::kHello, 0, next), ProtocolLimits{});
  ASSERT_FALSE(h.ok());
  EXPECT_EQ(ProtocolErrorCodeOf(h.status()), ErrorCode::kUnsupportedVersion);
  EXPECT_EQ(h.status().message(), "UNSUPPORTED_VERSION: peer speaks protocol version " +
                                      std::to_string(next) + "; this build speaks version " +
                                      std::to_string(kProtocolVersion));
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
  CollectingSink sink;
  std::vector<Frame>& frames = sink.frames;
  std::vector<bool> mid;
  for (uint8_t byte : stream) {
    ASSERT_TRUE(d.Feed(std::span(&byte, 1), sink).ok());
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
  CollectingSink sink;
  Status s = d.Feed(stream, sink);
  EXPECT_EQ(ProtocolErrorCodeOf(s), ErrorCode::kFrameTooLarge);
  ASSERT_EQ(sink.frames.size(), 1u);
  EXPECT_TRUE(d.failed());
  EXPECT_EQ(d.Feed(stream, sink), s);
  EXPECT_EQ(sink.frames.size(), 1u);
}

TEST(FrameDecoderTest, ChunkFramesAreStreamedAndRebuildExactly) {
  ProtocolLimits limits;
  limits.max_frame_payload = 1024;
  limits.chunk_data_bytes = 1000;
  OutboundMessage out = *EncodeOutbound(BigUpdate(2500), limits, 3);
  ASSERT_EQ(out.frames.size(), 3u);
  const std::vector<uint8_t> wire = out.Flatten();
  FrameDecoder d(limits);
  CollectingSink sink;
  for (size_t at = 0; at < wire.size(); at += 7) {
    ASSERT_TRUE(
        d.Feed(std::span(wire).subspan(at, std::min<size_t>(7, wire.size() - at)), sink).ok());
  }
  ASSERT_EQ(sink.frames.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    const std::vector<uint8_t> bytes = out.FrameBytes(i);
    EXPECT_EQ(sink.frames[i].payload,
              std::vector<uint8_t>(bytes.begin() + kFrameHeaderBytes, bytes.end()));
    EXPECT_TRUE(sink.frames[i].header.is_chunk());
  }
  EXPECT_EQ(d.frames_decoded(), 3u);
}

TEST(ChunkingTest, SmallMessageIsOnePlainFrame) {
  Result<OutboundMessage> out = EncodeOutbound(Heartbeat{1, 2}, ProtocolLimits{}, 7);
  ASSERT_TRUE(out.ok());
  ASSERT_EQ(out->frames.size(), 1u);
  EXPECT_EQ(out->frames[0].header_length, kFrameHeaderBytes);
  EXPECT_EQ(out->Flatten().size(), kFrameHeaderBytes + 16);
}

// A model payload is referenced by the encoded message, not copied: two clients' assignments,
// encoded on their own, share one copy of the floats, and the bytes on the wire are unchanged.
TEST(ChunkingTest, ModelPayloadIsSharedNotCopiedIntoTheEncoding) {
  ProtocolLimits limits;
  limits.max_frame_payload = 1024;
  limits.chunk_data_bytes = 1000;
  TaskAssignment a;
  a.round = 2;
  std::vector<float> floats(700);
  std::iota(floats.begin(), floats.end(), 0.0f);
  a.model.layout_fingerprint = 42;
  a.model.values = std::move(floats);
  TaskAssignment b = a;
  b.fit.seed = 99;
  Result<OutboundMessage> ea = EncodeOutbound(a, limits, 1);
  Result<OutboundMessage> eb = EncodeOutbound(b, limits, 2);
  ASSERT_TRUE(ea.ok() && eb.ok());
  ASSERT_NE(ea->shared_tail, nullptr);
  EXPECT_EQ(ea->shared_tail.get(), a.model.values.shared().get());
  EXPECT_EQ(eb->shared_tail.get(), ea->shared_tail.get());
  EXPECT_EQ(ea->tail_bytes(), 700u * sizeof(float));
  EXPECT_LT(ea->body.size(), 200u);  // only the fields before the floats were copied

  // The frames carry exactly EncodeMessageBody's bytes; one chunk straddles body and tail.
  const std::vector<uint8_t> plain = *EncodeMessageBody(a);
  ASSERT_EQ(ea->body_size(), plain.size());
  std::vector<uint8_t> rebuilt;
  for (const OutboundMessage::FrameRef& f : ea->frames)
    ea->ForEachBodyPiece(f.body_offset, f.body_length, [&](const uint8_t* p, size_t n) {
      rebuilt.insert(rebuilt.end(), p, p + n);
    });
  EXPECT_EQ(rebuilt, plain);
  EXPECT_EQ(ea->frames.size(), (plain.size() + 999) / 1000);

  MessageReader reader(limits);
  std::vector<Message> got;
  ASSERT_TRUE(reader.Feed(ea->Flatten(), &got).ok());
  ASSERT_TRUE(reader.Feed(eb->Flatten(), &got).ok());
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(std::get<TaskAssignment>(got[0]), a);
  EXPECT_EQ(std::get<TaskAssignment>(got[1]), b);

  // An encoded (compressed-download) payload is shared the same way: the tail is its bytes.
  TaskAssignment c = a;
  c.model.values = SharedFloats();
  c.model.encoding = "q8";
  c.model.encoded = SharedBytes(std::vector<uint8_t>(900, 0x33));
  Result<OutboundMessage> ec = EncodeOutbound(c, limits, 5);
  ASSERT_TRUE(ec.ok()) << ec.status();
  EXPECT_EQ(ec->shared_tail.get(), c.model.encoded.shared().get());
  EXPECT_EQ(ec->tail_bytes(), 900u);
  EXPECT_EQ(ec->tail.data(), c.model.encoded.data());
  ASSERT_TRUE(reader.Feed(ec->Flatten(), &got).ok());
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(std::get<TaskAssignment>(got[2]), c);

  // Small payloads and messages without one are encoded whole.
  EvaluateTask empty;
  EXPECT_EQ(EncodeOutbound(empty, limits, 3)->shared_tail, nullptr);
  EXPECT_EQ(EncodeOutbound(Heartbeat{1, 2}, limits, 4)->shared_tail, nullptr);
}

// An update travels without copies: the sender frames UpdateSubmission's bytes in place (the
// tail), and the receiver's decoded update points into the reassembled buffer, which it keeps
// alive alone; a plain (unchunked) frame's update is copied out, since its frame buffer is reused.
TEST(ChunkingTest, UpdateBytesAreSharedOnBothEnds) {
  ProtocolLimits limits;
  limits.max_frame_payload = 1024;
  limits.chunk_data_bytes = 1000;
  const Message sent = BigUpdate(5000);
  const UpdateSubmission& u = std::get<UpdateSubmission>(sent);
  Result<OutboundMessage> out = EncodeOutbound(sent, limits, 1);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->shared_tail.get(), u.update.bytes.shared().get());
  EXPECT_EQ(out->tail.data(), u.update.bytes.data());
  EXPECT_EQ(out->tail_bytes(), 5000u);
  EXPECT_LT(out->body.size(), 100u);
  EXPECT_EQ(out->BodyBytes(), *EncodeMessageBody(sent));

  MessageReader reader(limits);
  std::vector<Message> got;
  ASSERT_TRUE(reader.Feed(out->Flatten(), &got).ok());
  ASSERT_EQ(got.size(), 1u);
  const SharedBytes& received = std::get<UpdateSubmission>(got[0]).update.bytes;
  EXPECT_EQ(received, u.update.bytes);
  ASSERT_NE(received.shared(), nullptr);
  EXPECT_NE(received.shared().get(), u.update.bytes.shared().get());
  EXPECT_EQ(received.shared().use_count(), 1);  // only the message holds the receive buffer
  const auto* buffer = static_cast<const ByteBuffer*>(received.shared().get());
  EXPECT_GE(received.data(), buffer->data());
  EXPECT_EQ(received.data() + received.size(), buffer->data() + buffer->size());

  // Unchunked: the update is a vector of its own.
  Result<OutboundMessage> small = EncodeOutbound(BigUpdate(100), limits, 2);
  ASSERT_TRUE(small.ok());
  ASSERT_EQ(small->frames.size(), 1u);
  got.clear();
  ASSERT_TRUE(reader.Feed(small->Flatten(), &got).ok());
  ASSERT_EQ(got.size(), 1u);
  const SharedBytes& copied = std::get<UpdateSubmission>(got[0]).update.bytes;
  EXPECT_EQ(copied, std::get<UpdateSubmission>(BigUpdate(100)).update.bytes);
  EXPECT_EQ(copied.shared().use_count(), 1);
}

TEST(ChunkingTest, LargeMessageIsChunkedAndReassembled) {
  ProtocolLimits limits;
  limits.max_frame_payload = 1024;
  limits.chunk_data_bytes = 1000;
  const Message m = BigUpdate(10'000);
  Result<OutboundMessage> out = EncodeOutbound(m, limits, 5);
  ASSERT_TRUE(out.ok()) << out.status();
  const size_t body = out->body_size();
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
  const OutboundMessage out = *EncodeOutbound(big, limits, 1);
  const std::vector<uint8_t> hb = EncodeOutbound(Heartbeat{4, 5}, limits, 2)->Flatten();
  MessageReader reader(limits);
  std::vector<Message> got;
  for (size_t i = 0; i < out.frames.size(); ++i) {
    ASSERT_TRUE(reader.Feed(out.FrameBytes(i), &got).ok());
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

struct ChunkSpec {
  uint64_t id, offset, total;
  size_t data_len;
  MessageType type = MessageType::kUpdateSubmission;
};

// Feeds one chunk frame to the assembler; the error code (kUnspecified when accepted).
ErrorCode AddChunk(MessageAssembler& a, const ChunkSpec& c) {
  FrameHeader h;
  h.type = c.type;
  h.flags = kFrameFlagChunk;
  h.payload_length = kChunkHeaderBytes + c.data_len;
  Status s = a.OnChunkBegin(h, {c.id, c.offset, c.total});
  if (s.ok()) {
    const std::vector<uint8_t> data(c.data_len, 0xab);
    s = a.OnChunkData(data, true);
  }
  return s.ok() ? ErrorCode::kUnspecified : ProtocolErrorCodeOf(s);
}

MessageAssembler::BodyHandler CountBodies(int* n) {
  return [n](MessageType, std::span<const uint8_t>, const std::shared_ptr<const void>&) {
    ++*n;
    return Status::Ok();
  };
}

// 64-bit totals: a 5 GiB transfer is accepted when the cap allows it, and memory follows the bytes
// that arrived, not the announced total.
TEST(AssemblerTest, TotalsOverFourGiBAreFineAndMemoryFollowsArrivals) {
  ProtocolLimits limits;
  limits.max_message_bytes = uint64_t{8} << 30;
  int bodies = 0;
  MessageAssembler a(limits, CountBodies(&bodies));
  const uint64_t total = uint64_t{5} << 30;
  const size_t rss_before = CurrentRss();
  EXPECT_EQ(AddChunk(a, {1, 0, total, 1000}), ErrorCode::kUnspecified);
  EXPECT_EQ(AddChunk(a, {1, 1000, total, 1000}), ErrorCode::kUnspecified);
  EXPECT_TRUE(a.in_transfer());
  EXPECT_EQ(a.transfer_received(), 2000u);
  // The reservation follows the 2,000 bytes that arrived (at most twice them, rounded up to a
  // page), not the announced 5 GiB.
  EXPECT_GE(a.transfer_reserved(), 2000u);
  EXPECT_LE(a.transfer_reserved(), 4096u);
  // Resident memory says the same with a margin for the allocator's own bookkeeping: a sanitizer's
  // allocator and shadow can add a megabyte or so on their own (CI's ASan run saw 1.02 MiB).
  EXPECT_LT(CurrentRss(), rss_before + (16u << 20));
  EXPECT_EQ(bodies, 0);
}

TEST(AssemblerTest, CompletesTransferAndHandsOverTheBody) {
  ProtocolLimits limits;
  std::vector<uint8_t> body;
  std::shared_ptr<const void> owner;
  std::span<const uint8_t> kept;
  MessageAssembler a(limits, [&](MessageType type, std::span<const uint8_t> b,
                                 const std::shared_ptr<const void>& o) {
    EXPECT_EQ(type, MessageType::kUpdateSubmission);
    body.assign(b.begin(), b.end());
    owner = o;  // a reassembled body is handed over: it stays valid while its owner lives
    kept = b;
    return Status::Ok();
  });
  EXPECT_EQ(AddChunk(a, {1, 0, 250, 100}), ErrorCode::kUnspecified);
  EXPECT_EQ(AddChunk(a, {1, 100, 250, 100}), ErrorCode::kUnspecified);
  EXPECT_TRUE(body.empty());
  EXPECT_EQ(AddChunk(a, {1, 200, 250, 50}), ErrorCode::kUnspecified);
  EXPECT_EQ(body, std::vector<uint8_t>(250, 0xab));
  EXPECT_FALSE(a.in_transfer());
  ASSERT_NE(owner, nullptr);
  EXPECT_EQ(owner.use_count(), 1);  // the assembler let go of it
  EXPECT_EQ(std::vector<uint8_t>(kept.begin(), kept.end()), body);
}

TEST(AssemblerTest, AnnouncedTotalOverCapIsMessageTooLarge) {
  ProtocolLimits limits;
  limits.max_message_bytes = 1 << 20;
  int bodies = 0;
  MessageAssembler a(limits, CountBodies(&bodies));
  EXPECT_EQ(AddChunk(a, {1, 0, (1 << 20) + 1, 100}), ErrorCode::kMessageTooLarge);
  // Failed for good.
  EXPECT_EQ(AddChunk(a, {2, 0, 1000, 100}), ErrorCode::kMessageTooLarge);
}

TEST(AssemblerTest, RejectsBrokenChunkSequences) {
  const ProtocolLimits limits;
  struct Case {
    const char* what;
    std::vector<ChunkSpec> chunks;
  };
  const std::vector<Case> cases = {
      {"first chunk not at 0", {{1, 10, 1000, 100}}},
      {"fits in one chunk", {{1, 0, 100, 100}}},
      {"empty chunk", {{1, 0, 1000, 0}}},
      {"gap", {{1, 0, 1000, 100}, {1, 200, 1000, 100}}},
      {"replay", {{1, 0, 1000, 100}, {1, 0, 1000, 100}}},
      {"other id", {{1, 0, 1000, 100}, {2, 100, 1000, 100}}},
      {"other total", {{1, 0, 1000, 100}, {1, 100, 2000, 100}}},
      {"other type", {{1, 0, 1000, 100}, {1, 100, 1000, 100, MessageType::kHello}}},
      {"past total", {{1, 0, 1000, 900}, {1, 900, 1000, 101}}},
  };
  for (const Case& c : cases) {
    int bodies = 0;
    MessageAssembler a(limits, CountBodies(&bodies));
    ErrorCode last = ErrorCode::kUnspecified;
    for (const ChunkSpec& chunk : c.chunks) last = AddChunk(a, chunk);
    EXPECT_EQ(last, ErrorCode::kMalformedFrame) << c.what;
    EXPECT_EQ(bodies, 0) << c.what;
  }
}

TEST(MessageReaderTest, GoodMessagesBeforeABadFrameAreDelivered) {
  std::vector<uint8_t> wire = EncodeOutbound(Heartbeat{1, 1}, {}, 1)->Flatten();
  const FrameHeaderBytes bad = Header(10, MessageType::kHello, 0, kProtocolVersion + 1);
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
