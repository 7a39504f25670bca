#include "tributary/model_weights.h"

#include <gtest/gtest.h>

namespace tributary {
namespace {

TEST(ModelWeightsTest, LayoutIsContiguous) {
  auto w = ModelWeights::Create({{"a", {2, 3}}, {"b", {4}}, {"c", {}}});
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_EQ(w->size(), 6u + 4u + 1u);
  EXPECT_EQ(w->tensors()[1].offset, 6u);
  EXPECT_EQ(w->tensors()[2].numel, 1u);
  w->tensor(1)[0] = 5.0f;
  EXPECT_EQ(w->data()[6], 5.0f);
  ASSERT_NE(w->find("b"), nullptr);
  EXPECT_EQ(w->find("zz"), nullptr);
}

TEST(ModelWeightsTest, FingerprintDetectsLayoutChanges) {
  auto a = *ModelWeights::Create({{"w", {2, 3}}, {"b", {3}}});
  auto same = *ModelWeights::Create({{"w", {2, 3}}, {"b", {3}}});
  auto reshaped = *ModelWeights::Create({{"w", {3, 2}}, {"b", {3}}});
  auto renamed = *ModelWeights::Create({{"w", {2, 3}}, {"bias", {3}}});
  auto reordered = *ModelWeights::Create({{"b", {3}}, {"w", {2, 3}}});
  EXPECT_EQ(a.fingerprint(), same.fingerprint());
  EXPECT_NE(a.fingerprint(), reshaped.fingerprint());
  EXPECT_NE(a.fingerprint(), renamed.fingerprint());
  EXPECT_NE(a.fingerprint(), reordered.fingerprint());
  EXPECT_TRUE(a.same_layout(same));
  EXPECT_FALSE(a.same_layout(reshaped));
}

TEST(ModelWeightsTest, EqualityIsBitwise) {
  auto a = *ModelWeights::Create({{"w", {4}}});
  ModelWeights b = a;
  EXPECT_EQ(a, b);
  b.data()[2] = 1e-30f;
  EXPECT_FALSE(a == b);
  EXPECT_NE(a.content_hash(), b.content_hash());
  ModelWeights z = b.ZerosLike();
  EXPECT_EQ(z, a);
}

TEST(ModelWeightsTest, RejectsBadLayouts) {
  EXPECT_EQ(ModelWeights::Create({{"", {1}}}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ModelWeights::Create({{"a", {1}}, {"a", {2}}}).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(ModelWeights::Create({{"a", {-1}}}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ModelWeights::Create({{"a", {1 << 20, 1 << 20}}}, 1 << 30).status().code(),
            StatusCode::kOutOfRange);
}

}  // namespace
}  // namespace tributary
