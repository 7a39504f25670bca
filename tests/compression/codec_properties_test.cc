// What callers ask a codec instead of comparing spec strings: whether its encoding is raw floats
// (EncodeShared then hands the caller's buffer over), and whether it can carry a global model.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "compression/codec.h"

namespace tributary {
namespace {

TEST(CodecPropertiesTest, OnlyLosslessOrEightBitPipelinesWithoutResidualsCanCarryAModel) {
  for (const char* spec : {"dense", "q8", "q8+zstd", "zstd", "q8(chunk=64)"}) {
    auto c = MakeDownloadCodec(spec);
    EXPECT_TRUE(c.ok()) << spec << ": " << c.status();
  }
  for (const char* spec : {"topk(0.1)", "randk(0.5)", "q4", "q1", "sign", "topk(0.1)+q8"}) {
    auto c = MakeDownloadCodec(spec);
    ASSERT_FALSE(c.ok()) << spec;
    EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(c.status().message().find("cannot carry a global model"), std::string::npos)
        << c.status();
  }
  EXPECT_TRUE((*MakeCodec("dense"))->raw_floats());
  EXPECT_FALSE((*MakeCodec("zstd"))->raw_floats());
  EXPECT_FALSE((*MakeCodec("q8"))->raw_floats());
}

TEST(CodecPropertiesTest, EncodeSharedHandsRawFloatsOverAndEncodesTheRest) {
  auto owner = std::make_shared<std::vector<float>>(1000);
  for (size_t i = 0; i < owner->size(); ++i) (*owner)[i] = 0.001f * static_cast<float>(i);
  const std::span<const float> delta(*owner);

  auto dense = *MakeCodec("dense");
  Result<SharedBytes> shared = dense->EncodeShared(owner, delta, nullptr, 0);
  ASSERT_TRUE(shared.ok());
  EXPECT_EQ(shared->data(), reinterpret_cast<const uint8_t*>(owner->data())) << "not copied";
  EXPECT_EQ(shared->shared(), owner) << "the buffer's owner is kept alive";
  EXPECT_EQ(shared->ToVector(), *dense->Encode(delta));

  auto q8 = *MakeCodec("q8");
  Result<SharedBytes> encoded = q8->EncodeShared(owner, delta, nullptr, 7);
  ASSERT_TRUE(encoded.ok());
  EXPECT_NE(encoded->shared(), owner);
  EXPECT_EQ(encoded->ToVector(), *q8->Encode(delta, nullptr, 7));
}

}  // namespace
}  // namespace tributary
