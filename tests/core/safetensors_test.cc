#include "tributary/safetensors.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <string>

namespace tributary {
namespace {

std::vector<uint8_t> Raw(const std::string& header, size_t data_bytes) {
  std::vector<uint8_t> out(8 + header.size() + data_bytes, 0);
  uint64_t n = header.size();
  std::memcpy(out.data(), &n, 8);
  std::memcpy(out.data() + 8, header.data(), header.size());
  return out;
}

ModelWeights Sample() {
  auto w = *ModelWeights::Create({{"fc1.weight", {3, 2}}, {"fc1.bias", {2}}, {"scale", {}}});
  for (size_t i = 0; i < w.size(); ++i) w.data()[i] = 0.5f * static_cast<float>(i) - 1.0f;
  return w;
}

TEST(SafetensorsTest, RoundTripsInMemory) {
  ModelWeights w = Sample();
  SafetensorsMetadata meta{{"model", "mlp"}, {"round", "3"}};
  std::vector<uint8_t> bytes = SerializeSafetensors(w, meta);
  EXPECT_EQ((bytes.size() - w.size_bytes()) % 8, 0u);  // data is 8-byte aligned
  SafetensorsMetadata got;
  auto back = ParseSafetensors(bytes, &got);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, w);
  EXPECT_EQ(back->fingerprint(), w.fingerprint());
  EXPECT_EQ(got, meta);
}

TEST(SafetensorsTest, RoundTripsThroughFile) {
  ModelWeights w = Sample();
  auto path = (std::filesystem::temp_directory_path() /
               ("trib_st_" + std::to_string(::getpid()) + ".safetensors"))
                  .string();
  ASSERT_TRUE(SaveSafetensors(w, path).ok());
  auto back = LoadSafetensors(path);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, w);
  std::filesystem::remove(path);
  auto missing = LoadSafetensors(path);
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find(path), std::string::npos);
}

TEST(SafetensorsTest, OrdersTensorsByOffset) {
  auto bytes = Raw(
      R"({"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]},"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})",
      8);
  auto w = ParseSafetensors(bytes);
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_EQ(w->tensors()[0].name, "a");
  EXPECT_EQ(w->tensors()[1].name, "b");
}

struct BadCase {
  const char* what;
  std::vector<uint8_t> bytes;
  const char* expect;
};

TEST(SafetensorsTest, RejectsMalformedInput) {
  std::vector<uint8_t> huge_len(16, 0);
  huge_len[5] = 0x01;  // 2^40
  std::vector<BadCase> cases = {
      {"short", {1, 2, 3}, "too short"},
      {"header length 2^40", huge_len, "exceeds the cap"},
      {"header past end", Raw("{}", 0), ""},
      {"not json", Raw("{not json", 0), "not a JSON object"},
      {"wrong dtype", Raw(R"({"a":{"dtype":"F16","shape":[2],"data_offsets":[0,4]}})", 4),
       "only F32"},
      {"shape/bytes mismatch", Raw(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8),
       "shape needs 12"},
      {"offsets outside", Raw(R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", 8),
       "outside the data"},
      {"overlap",
       Raw(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
           8),
       "overlaps"},
      {"gap", Raw(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", 8), "gap"},
      {"trailing data", Raw(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", 8),
       "cover 4 of 8"},
      {"negative dim", Raw(R"({"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", 4),
       "negative"},
      {"giant shape",
       Raw(R"({"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,4]}})", 4),
       "larger than the data"},
      {"missing field", Raw(R"({"a":{"dtype":"F32","shape":[1]}})", 4), "lacks"},
  };
  // The header-past-end case: claim a longer header than present.
  cases[2].bytes[0] = 200;
  for (const auto& c : cases) {
    auto r = ParseSafetensors(c.bytes);
    ASSERT_FALSE(r.ok()) << c.what;
    EXPECT_EQ(r.status().code(), StatusCode::kCorruption) << c.what;
    EXPECT_NE(r.status().message().find(c.expect), std::string::npos)
        << c.what << ": " << r.status();
  }
}

}  // namespace
}  // namespace tributary
