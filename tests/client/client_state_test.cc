#include "client/client_state.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/file_util.h"
#include "tests/client/temp_dir.h"

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

}  // namespace
}  // namespace tributary
