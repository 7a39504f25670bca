// SharedFloats: sharing without copying, copy-on-write, and its wire form inside a ModelPayload.
#include "protocol/shared_floats.h"

#include <gtest/gtest.h>

#include <cstring>

#include "protocol/message_codec.h"

namespace tributary {
namespace {

TEST(SharedFloatsTest, MovesTheVectorInWithoutCopying) {
  std::vector<float> v = {1.5f, 2.5f, 3.5f};
  const float* block = v.data();
  SharedFloats s(std::move(v));
  EXPECT_EQ(s.data(), block);  // the same allocation: nothing was copied
  EXPECT_EQ(s.size(), 3u);
  EXPECT_FALSE(s.empty());
  EXPECT_EQ(s[1], 2.5f);
  EXPECT_EQ(s.span().back(), 3.5f);
  float sum = 0;
  for (float x : s) sum += x;
  EXPECT_EQ(sum, 7.5f);
}

TEST(SharedFloatsTest, DefaultIsEmpty) {
  SharedFloats s;
  EXPECT_TRUE(s.empty());
  EXPECT_EQ(s.size(), 0u);
  EXPECT_EQ(s.begin(), s.end());
  EXPECT_EQ(s, SharedFloats(std::vector<float>{}));
  s.mutable_values().push_back(4.0f);  // an empty payload can be written too
  EXPECT_EQ(s.size(), 1u);
}

TEST(SharedFloatsTest, CopiesShareOneVector) {
  SharedFloats a(std::vector<float>(1000, 0.25f));
  SharedFloats b = a;
  SharedFloats c = b;
  EXPECT_EQ(a.data(), b.data());
  EXPECT_EQ(a.data(), c.data());
  EXPECT_EQ(a.shared().use_count(), 3);
  EXPECT_FALSE(a.unique());
}

TEST(SharedFloatsTest, WritingASharedVectorCopiesItFirst) {
  SharedFloats a(std::vector<float>{1, 2, 3});
  SharedFloats b = a;
  const float* shared_block = a.data();
  b.mutable_values()[0] = 9.0f;
  EXPECT_EQ(a[0], 1.0f);  // the other holder does not see the write
  EXPECT_EQ(b[0], 9.0f);
  EXPECT_EQ(a.data(), shared_block);
  EXPECT_NE(b.data(), shared_block);
  EXPECT_TRUE(a.unique());
  EXPECT_TRUE(b.unique());
  // The only holder writes in place.
  a.mutable_values()[2] = 7.0f;
  EXPECT_EQ(a.data(), shared_block);
  EXPECT_EQ(a[2], 7.0f);
}

TEST(SharedFloatsTest, APointerToConstIsCopiedBeforeWriting) {
  auto frozen = std::make_shared<const std::vector<float>>(std::vector<float>{5, 6});
  SharedFloats s(frozen);
  EXPECT_EQ(s.data(), frozen->data());
  frozen.reset();  // s is now the only holder, but it did not create the vector
  EXPECT_FALSE(s.unique());
  const float* before = s.data();
  s.mutable_values()[0] = 1.0f;
  EXPECT_NE(s.data(), before);
  EXPECT_EQ(s, SharedFloats(std::vector<float>{1, 6}));
}

TEST(SharedFloatsTest, EqualityComparesContents) {
  EXPECT_EQ(SharedFloats(std::vector<float>{1, 2}), SharedFloats(std::vector<float>{1, 2}));
  EXPECT_NE(SharedFloats(std::vector<float>{1, 2}), SharedFloats(std::vector<float>{1, 3}));
  EXPECT_NE(SharedFloats(std::vector<float>{1, 2}), SharedFloats(std::vector<float>{1, 2, 3}));
}

TEST(SharedFloatsTest, OverwriteReusesOnlyAnUnsharedVector) {
  SharedFloats a(std::vector<float>(64, 1.0f));
  const float* block = a.data();
  std::vector<float>& mine = a.mutable_values_for_overwrite();
  EXPECT_EQ(mine.data(), block);  // the only holder: same vector, same capacity
  SharedFloats b = a;
  std::vector<float>& fresh = b.mutable_values_for_overwrite();
  EXPECT_TRUE(fresh.empty());  // shared: a fresh vector, the floats are not copied
  EXPECT_EQ(a.size(), 64u);
  EXPECT_EQ(a.data(), block);
}

// The wire form is a CappedVector<float>'s: size tag, then the floats.
TEST(SharedFloatsTest, ModelPayloadRoundTripsThroughTheWire) {
  EvaluateTask t;
  t.round = 3;
  t.model.layout_fingerprint = 0xabc;
  t.model.values = std::vector<float>{0.5f, -1.0f, 2.0f};
  Result<std::vector<uint8_t>> body = EncodeMessageBody(t);
  ASSERT_TRUE(body.ok()) << body.status();
  uint64_t tag = 0;
  std::memcpy(&tag, body->data() + body->size() - 12 - 8, 8);
  EXPECT_EQ(tag, 3u);
  Result<Message> back = DecodeMessageBody(MessageType::kEvaluateTask, *body);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(std::get<EvaluateTask>(*back), t);
}

// DecodeMessageBodyInto reuses a payload vector that only the message holds, and never writes
// into one that another message shares.
TEST(SharedFloatsTest, DecodeIntoReusesOnlyAnUnsharedPayload) {
  EvaluateTask t;
  t.model.values = std::vector<float>(256, 3.0f);
  std::vector<uint8_t> body = *EncodeMessageBody(t);

  Message target = EvaluateTask{};
  std::get<EvaluateTask>(target).model.values = std::vector<float>(1024, 0.0f);
  const float* block = std::get<EvaluateTask>(target).model.values.data();
  ASSERT_TRUE(DecodeMessageBodyInto(MessageType::kEvaluateTask, body, &target).ok());
  EXPECT_EQ(std::get<EvaluateTask>(target).model.values.data(), block);  // reused in place
  EXPECT_EQ(std::get<EvaluateTask>(target), t);

  SharedFloats kept = std::get<EvaluateTask>(target).model.values;  // now shared
  EvaluateTask other;
  other.model.values = std::vector<float>(256, 8.0f);
  ASSERT_TRUE(
      DecodeMessageBodyInto(MessageType::kEvaluateTask, *EncodeMessageBody(other), &target).ok());
  EXPECT_EQ(std::get<EvaluateTask>(target), other);
  EXPECT_NE(std::get<EvaluateTask>(target).model.values.data(), block);
  EXPECT_EQ(kept.data(), block);  // the other holder's floats are untouched
  EXPECT_EQ(kept[0], 3.0f);
}

}  // namespace
}  // namespace tributary
