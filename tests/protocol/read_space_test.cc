// MessageReader's zero-copy receive path (ReadSpace / CommitRead), which FramedConnection uses for
// chunk data: it must decode exactly what Feed decodes, never expose space past the current
// chunk (so memory still grows only with the bytes received), and refuse bad commits.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

#include "protocol/frame.h"
#include "protocol/message_codec.h"
#include "protocol/message_reader.h"

namespace tributary {
namespace {

ProtocolLimits SmallChunks() {
  ProtocolLimits limits;
  limits.chunk_data_bytes = 64 * 1024;
  limits.max_frame_payload = 128 * 1024;
  return limits;
}

UpdateSubmission Update(size_t bytes) {
  UpdateSubmission u;
  u.round = 3;
  u.num_examples = 17;
  u.update.codec = "dense";
  u.update.num_floats = bytes / 4;
  std::vector<uint8_t> data(bytes);
  for (size_t i = 0; i < bytes; ++i) data[i] = static_cast<uint8_t>(i * 7 + 1);
  u.update.bytes = std::move(data);
  return u;
}

// Drives `reader` like a connection: chunk data goes through ReadSpace/CommitRead in pieces of at
// most `direct_piece`, everything else through Feed in pieces of at most `feed_piece`.
Status Drive(MessageReader& reader, std::span<const uint8_t> bytes, size_t direct_piece,
             size_t feed_piece, std::vector<Message>* got, size_t* direct_bytes) {
  size_t pos = 0;
  while (pos < bytes.size()) {
    const std::span<uint8_t> space = reader.ReadSpace();
    if (!space.empty()) {
      const size_t n = std::min({space.size(), direct_piece, bytes.size() - pos});
      std::memcpy(space.data(), bytes.data() + pos, n);
      TRIB_RETURN_IF_ERROR(reader.CommitRead(n, got));
      *direct_bytes += n;
      pos += n;
    } else {
      const size_t n = std::min(feed_piece, bytes.size() - pos);
      TRIB_RETURN_IF_ERROR(reader.Feed(bytes.subspan(pos, n), got));
      pos += n;
    }
  }
  return Status::Ok();
}

TEST(ReadSpaceTest, ChunkedMessagesDecodeLikeFeed) {
  const ProtocolLimits limits = SmallChunks();
  const UpdateSubmission sent = Update(300 * 1024 + 5);  // 5 chunks, the last one short
  Result<OutboundMessage> out = EncodeOutbound(sent, limits, 9);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ASSERT_EQ(out->frames.size(), 5u);
  std::vector<uint8_t> stream = out->Flatten();
  // A Heartbeat after it, and the same transfer again: the reader goes back to Feed for headers.
  Result<OutboundMessage> beat = EncodeOutbound(Heartbeat{3, 1}, limits, 0);
  ASSERT_TRUE(beat.ok());
  const std::vector<uint8_t> beat_bytes = beat->Flatten();
  stream.insert(stream.end(), beat_bytes.begin(), beat_bytes.end());
  const std::vector<uint8_t> again = out->Flatten();
  stream.insert(stream.end(), again.begin(), again.end());

  for (const auto& [direct_piece, feed_piece] :
       {std::pair<size_t, size_t>{1 << 20, 64}, {1000, 7}, {1, 40}}) {
    MessageReader reader(limits);
    std::vector<Message> got;
    size_t direct_bytes = 0;
    const Status s = Drive(reader, stream, direct_piece, feed_piece, &got, &direct_bytes);
    ASSERT_TRUE(s.ok()) << s.ToString();
    ASSERT_EQ(got.size(), 3u);
    EXPECT_EQ(std::get<UpdateSubmission>(got[0]), sent);
    EXPECT_EQ(std::get<Heartbeat>(got[1]).sequence, 3u);
    EXPECT_EQ(std::get<UpdateSubmission>(got[2]), sent);
    // Most body bytes went in place (Feed only carries what shares a piece with a header).
    EXPECT_GT(direct_bytes, out->body_size()) << direct_piece << "/" << feed_piece;
    EXPECT_FALSE(reader.mid_frame());
    EXPECT_FALSE(reader.mid_message());
    EXPECT_TRUE(reader.ReadSpace().empty());
  }
}

TEST(ReadSpaceTest, SpaceEndsWithTheCurrentChunkWhateverTheAnnouncedTotal) {
  ProtocolLimits limits;  // 1 GiB message cap
  // A chunk frame announcing a 512 MiB transfer that carries 1,000 data bytes.
  FrameHeader h;
  h.type = MessageType::kUpdateSubmission;
  h.flags = kFrameFlagChunk;
  h.payload_length = kChunkHeaderBytes + 1000;
  const FrameHeaderBytes hb = EncodeFrameHeader(h);
  std::vector<uint8_t> head(hb.begin(), hb.end());
  head.resize(kFrameHeaderBytes + kChunkHeaderBytes);
  EncodeChunkHeader({1, 0, uint64_t{512} << 20}, head.data() + kFrameHeaderBytes);

  MessageReader reader(limits);
  std::vector<Message> got;
  EXPECT_TRUE(reader.ReadSpace().empty());  // nothing expected yet
  ASSERT_TRUE(reader.Feed(std::span(head).first(30), &got).ok());
  EXPECT_TRUE(reader.ReadSpace().empty());  // the chunk header is not complete
  ASSERT_TRUE(reader.Feed(std::span(head).subspan(30), &got).ok());
  ASSERT_EQ(reader.ReadSpace().size(), 1000u);
  ASSERT_TRUE(reader.CommitRead(400, &got).ok());
  EXPECT_EQ(reader.ReadSpace().size(), 600u);
  EXPECT_TRUE(reader.mid_frame());
  ASSERT_TRUE(reader.CommitRead(600, &got).ok());
  EXPECT_FALSE(reader.mid_frame());  // the frame ended; the transfer did not
  EXPECT_TRUE(reader.mid_message());
  EXPECT_TRUE(reader.ReadSpace().empty());
  EXPECT_TRUE(got.empty());
}

TEST(ReadSpaceTest, CommitsPastTheSpaceAreRefusedAndSticky) {
  MessageReader reader(SmallChunks());
  std::vector<Message> got;
  const Status s = reader.CommitRead(1, &got);  // no chunk data expected
  EXPECT_EQ(s.code(), StatusCode::kInternal) << s.ToString();
  // The reader is failed from now on.
  const Result<OutboundMessage> beat = EncodeOutbound(Heartbeat{1, 0}, SmallChunks(), 0);
  ASSERT_TRUE(beat.ok());
  EXPECT_FALSE(reader.Feed(beat->Flatten(), &got).ok());
  EXPECT_TRUE(got.empty());
  EXPECT_TRUE(reader.ReadSpace().empty());
}

}  // namespace
}  // namespace tributary
