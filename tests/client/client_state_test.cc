#include "client/client_state.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

#include "core/file_util.h"
#include "tests/client/temp_dir.h"
#include "tributary/safetensors.h"

namespace tributary {
namespace {

using testing::TempDir;

void WriteText(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

TEST(ClientStateTest, OpenCreatesTheDirAndStartsEmpty) {
  TempDir tmp;
  const std::string dir = tmp.file("a/b/state");
  auto st = ClientState::Open(dir);
  ASSERT_TRUE(st.ok()) << st.status();
  EXPECT_TRUE(std::filesystem::is_directory(dir));
  EXPECT_EQ((*st)->data(), ClientStateData{});
  EXPECT_FALSE(std::filesystem::exists((*st)->state_file()));
}

TEST(ClientStateTest, SaveThenReopenReadsItBack) {
  TempDir tmp;
  ClientStateData d{"edge-001", 12, 11, 9};
  {
    auto st = ClientState::Open(tmp.path());
    ASSERT_TRUE(st.ok());
    ASSERT_TRUE((*st)->Save(d).ok());
    EXPECT_EQ((*st)->data(), d);
  }
  auto again = ClientState::Open(tmp.path());
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ((*again)->data(), d);
  // No temporary files are left behind by the atomic write.
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(tmp.path())) {
    (void)e;
    ++files;
  }
  EXPECT_EQ(files, 2);  // LOCK and client_state.json
}

TEST(ClientStateTest, ASecondOpenOfTheSameDirIsRefused) {
  TempDir tmp;
  auto first = ClientState::Open(tmp.path());
  ASSERT_TRUE(first.ok());
  auto second = ClientState::Open(tmp.path());
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(second.status().message().find("in use by another client"), std::string::npos);
  first->reset();
  EXPECT_TRUE(ClientState::Open(tmp.path()).ok());
}

TEST(ClientStateTest, CorruptStateFilesAreNamed) {
  TempDir tmp;
  const std::string file = tmp.file(ClientState::kStateFileName);
  const std::pair<const char*, const char*> cases[] = {
      {"not json", "is not a JSON object"},
      {"[1, 2]", "is not a JSON object"},
      {R"({"format": 2})", "\"format\" must be 1"},
      {R"({"format": 1, "client_id": 7})", "\"client_id\" must be a string"},
      {R"({"format": 1, "last_round": -3})", "\"last_round\" must be a non-negative integer"},
      {R"({"format": 1, "tasks_completed": "x"})", "\"tasks_completed\""},
  };
  for (const auto& [text, why] : cases) {
    WriteText(file, text);
    auto st = ClientState::Open(tmp.path());
    ASSERT_FALSE(st.ok()) << text;
    EXPECT_EQ(st.status().code(), StatusCode::kCorruption) << text;
    EXPECT_NE(st.status().message().find(file), std::string::npos) << st.status();
    EXPECT_NE(st.status().message().find(why), std::string::npos) << st.status();
  }
}

TEST(ClientStateTest, APathThatIsAFileIsRefused) {
  TempDir tmp;
  WriteText(tmp.file("plain"), "x");
  auto st = ClientState::Open(tmp.file("plain"));
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.status().message().find(tmp.file("plain")), std::string::npos) << st.status();
  EXPECT_FALSE(ClientState::Open("").ok());
}

ModelWeights SmallModel() {
  ModelWeights w = *ModelWeights::Create({{"fc.weight", {2, 3}}, {"fc.bias", {3}}});
  // Values that a lossy or text round trip would change: signed zero, a denormal, extremes, a NaN
  // with a payload.
  uint32_t nan_bits = 0x7fc01234u;
  float nan;
  std::memcpy(&nan, &nan_bits, sizeof(nan));
  const float values[] = {-0.0f,
                          std::numeric_limits<float>::denorm_min(),
                          std::numeric_limits<float>::max(),
                          -std::numeric_limits<float>::infinity(),
                          0.1f,
                          -1.0f / 3.0f,
                          nan,
                          1e-30f,
                          7.0f};
  std::memcpy(w.data().data(), values, sizeof(values));
  return w;
}

std::vector<uint8_t> ReadBytes(const std::string& path) {
  return *ReadFileBytes(path, uint64_t{1} << 30);
}

void WriteBytes(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()),
             static_cast<std::streamsize>(bytes.size()));
}

TEST(ClientStateTest, TheGlobalModelRoundTripsBitwiseWithItsRoundAndVersion) {
  TempDir tmp;
  const ModelWeights w = SmallModel();
  {
    auto st = ClientState::Open(tmp.path());
    ASSERT_TRUE(st.ok());
    EXPECT_EQ((*st)->LoadGlobalModel(w.ZerosLike()).status().code(), StatusCode::kNotFound);
    ASSERT_TRUE((*st)->SaveGlobalModel(w, 12, 11).ok());
  }
  auto st = ClientState::Open(tmp.path());
  ASSERT_TRUE(st.ok());
  Result<SavedGlobalModel> saved = (*st)->LoadGlobalModel(w.ZerosLike());
  ASSERT_TRUE(saved.ok()) << saved.status();
  EXPECT_TRUE(saved->weights == w);  // layout and every bit, the NaN's payload included
  EXPECT_EQ(saved->round, 12u);
  EXPECT_EQ(saved->model_version, 11u);
  // A plain safetensors file, for any reader.
  SafetensorsMetadata meta;
  Result<ModelWeights> plain = LoadSafetensors((*st)->global_model_file(), &meta);
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_TRUE(*plain == w);
  EXPECT_EQ(meta["round"], "12");
  EXPECT_EQ(meta["model_version"], "11");
  EXPECT_EQ(meta["sha256"].size(), 64u);
  // A newer one replaces it, and no temporary file stays behind.
  ModelWeights w2 = w;
  w2.data()[8] = 8.0f;
  ASSERT_TRUE((*st)->SaveGlobalModel(w2, 13, 12).ok());
  saved = (*st)->LoadGlobalModel(w.ZerosLike());
  ASSERT_TRUE(saved.ok()) << saved.status();
  EXPECT_TRUE(saved->weights == w2);
  EXPECT_EQ(saved->round, 13u);
  EXPECT_FALSE(std::filesystem::exists((*st)->global_model_file() + ".tmp"));
}

TEST(ClientStateTest, AnyFlippedByteOfTheSavedGlobalModelIsCorruptionNamingTheFile) {
  TempDir tmp;
  auto st = ClientState::Open(tmp.path());
  ASSERT_TRUE(st.ok());
  const ModelWeights w = SmallModel();
  ASSERT_TRUE((*st)->SaveGlobalModel(w, 3, 2).ok());
  const std::string file = (*st)->global_model_file();
  const std::vector<uint8_t> good = ReadBytes(file);
  // Every byte: the length, the JSON header (names, shapes, offsets, metadata, padding), the data.
  for (size_t i = 0; i < good.size(); ++i) {
    std::vector<uint8_t> bad = good;
    bad[i] ^= 0x01;
    WriteBytes(file, bad);
    Result<SavedGlobalModel> r = (*st)->LoadGlobalModel(w.ZerosLike());
    ASSERT_FALSE(r.ok()) << "byte " << i << " of " << good.size();
    EXPECT_EQ(r.status().code(), StatusCode::kCorruption) << "byte " << i << ": " << r.status();
    EXPECT_NE(r.status().message().find(file), std::string::npos) << r.status();
  }
  // A flip in the data is caught by the checksum, and says so.
  std::vector<uint8_t> bad = good;
  bad.back() ^= 0x80;
  WriteBytes(file, bad);
  Status s = (*st)->LoadGlobalModel(w.ZerosLike()).status();
  EXPECT_NE(s.message().find("checksum mismatch"), std::string::npos) << s;
  // A truncated file too.
  bad = good;
  bad.resize(good.size() - 4);
  WriteBytes(file, bad);
  EXPECT_EQ((*st)->LoadGlobalModel(w.ZerosLike()).status().code(), StatusCode::kCorruption);
  WriteBytes(file, good);
  EXPECT_TRUE((*st)->LoadGlobalModel(w.ZerosLike()).ok());
}

TEST(ClientStateTest, ASavedGlobalModelOfAnotherLayoutIsRefused) {
  TempDir tmp;
  auto st = ClientState::Open(tmp.path());
  ASSERT_TRUE(st.ok());
  const ModelWeights layout = SmallModel().ZerosLike();
  const std::string file = (*st)->global_model_file();

  // Same size, another name: named on both sides.
  ModelWeights renamed = *ModelWeights::Create({{"fc.w", {2, 3}}, {"fc.bias", {3}}});
  ASSERT_TRUE((*st)->SaveGlobalModel(renamed, 1, 1).ok());
  Status s = (*st)->LoadGlobalModel(layout).status();
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s;
  EXPECT_NE(s.message().find(file), std::string::npos) << s;
  EXPECT_NE(s.message().find("'fc.weight'"), std::string::npos) << s;
  EXPECT_NE(s.message().find("'fc.w'"), std::string::npos) << s;

  // Smaller.
  ASSERT_TRUE((*st)->SaveGlobalModel(*ModelWeights::Create({{"fc.bias", {3}}}), 1, 1).ok());
  s = (*st)->LoadGlobalModel(layout).status();
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s;
  EXPECT_NE(s.message().find("another layout"), std::string::npos) << s;

  // Larger than this layout's file can be: refused by its size, before it is read.
  ASSERT_TRUE((*st)->SaveGlobalModel(*ModelWeights::Create({{"fc.weight", {2, 3000}}}), 1, 1).ok());
  s = (*st)->LoadGlobalModel(layout).status();
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s;
  EXPECT_NE(s.message().find(file + " is larger than a saved model of the trainer's layout (9 "
                                    "floats)"),
            std::string::npos)
      << s;
}

}  // namespace
}  // namespace tributary
