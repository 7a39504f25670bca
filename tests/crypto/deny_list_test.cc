#include "crypto/deny_list.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "crypto_test_util.h"

namespace tributary {
namespace {

using testing::TempDir;
using testing::WriteText;

TEST(DenyListTest, ParsesIdsCommentsAndBlankLines) {
  auto ids = DenyList::Parse(
      "# revoked clients\n\nedge-17\n  edge-42   # retired\r\nedge-17\n\t# indented comment\nlast",
      "deny.txt");
  ASSERT_TRUE(ids.ok()) << ids.status();
  EXPECT_EQ(std::vector<std::string>(ids->begin(), ids->end()),
            (std::vector<std::string>{"edge-17", "edge-42", "last"}));
  auto empty = DenyList::Parse("", "empty");
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());
}

TEST(DenyListTest, BadLineNamesSourceAndLine) {
  auto ids = DenyList::Parse("edge-1\n# ok\nedge 2\n", "deny.txt");
  ASSERT_FALSE(ids.ok());
  EXPECT_EQ(ids.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(ids.status().message().find("deny.txt:3:"), std::string::npos) << ids.status();
}

TEST(DenyListTest, LoadFileReplacesAndFailedLoadKeepsOldSet) {
  TempDir dir;
  DenyList list;
  ASSERT_TRUE(list.Add("manual").ok());
  WriteText(dir / "deny.txt", "a\nb\n");
  ASSERT_TRUE(list.LoadFile(dir / "deny.txt").ok());
  EXPECT_EQ(list.Ids(), (std::vector<std::string>{"a", "b"}));
  EXPECT_FALSE(list.Contains("manual"));

  WriteText(dir / "bad.txt", "c\nbad/id\n");
  Status bad = list.LoadFile(dir / "bad.txt");
  EXPECT_EQ(bad.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.message().find(dir / "bad.txt"), std::string::npos);
  Status missing = list.LoadFile(dir / "missing.txt");
  EXPECT_EQ(missing.code(), StatusCode::kNotFound);
  EXPECT_EQ(list.Ids(), (std::vector<std::string>{"a", "b"}));
}

TEST(DenyListTest, AddRemoveContains) {
  DenyList list;
  EXPECT_EQ(list.size(), 0u);
  EXPECT_TRUE(list.Add("edge-1").ok());
  EXPECT_TRUE(list.Add("edge-1").ok());
  EXPECT_EQ(list.Add("no spaces").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(list.size(), 1u);
  EXPECT_TRUE(list.Contains("edge-1"));
  EXPECT_FALSE(list.Contains("edge-2"));
  EXPECT_TRUE(list.Remove("edge-1"));
  EXPECT_FALSE(list.Remove("edge-1"));
  EXPECT_FALSE(list.Contains("edge-1"));
}

TEST(DenyListTest, ConcurrentReadersSeeWholeSets) {
  TempDir dir;
  WriteText(dir / "one.txt", "a\nb\n");
  WriteText(dir / "two.txt", "c\nd\ne\n");
  DenyList list;
  ASSERT_TRUE(list.LoadFile(dir / "one.txt").ok());
  std::atomic<bool> stop{false};
  std::atomic<int> torn{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < 2; ++t) {
    readers.emplace_back([&] {
      while (!stop.load()) {
        std::vector<std::string> ids = list.Ids();
        // Each snapshot is exactly one of the two files, never a mix.
        if (ids != std::vector<std::string>{"a", "b"} &&
            ids != std::vector<std::string>{"c", "d", "e"})
          torn.fetch_add(1);
      }
    });
  }
  for (int i = 0; i < 200; ++i) {
    EXPECT_TRUE(list.LoadFile(dir / (i % 2 ? "one.txt" : "two.txt")).ok());
  }
  stop.store(true);
  for (std::thread& t : readers) t.join();
  EXPECT_EQ(torn.load(), 0);
  EXPECT_EQ(list.Ids(), (std::vector<std::string>{"a", "b"}));
}

}  // namespace
}  // namespace tributary
