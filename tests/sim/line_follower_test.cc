// LineFollower (sim/line_follower.h): the event log of a deployed run is read while the
// coordinator writes it, so a line read in the middle of its write must wait for its newline, and
// every line is handed over exactly once.
#include "sim/line_follower.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "tests/client/temp_dir.h"

namespace tributary {
namespace {

using Lines = std::vector<std::string>;

void Append(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary | std::ios::app) << text;
}

TEST(LineFollowerTest, AMissingFileHasNoLinesYet) {
  testing::TempDir dir;
  LineFollower f(dir.file("events.jsonl"));
  EXPECT_EQ(f.ReadNew(), Lines{});
  Append(f.path(), "{\"a\":1}\n");
  EXPECT_EQ(f.ReadNew(), Lines{"{\"a\":1}"});
}

TEST(LineFollowerTest, AHalfWrittenLineWaitsForItsNewlineAndComesOnce) {
  testing::TempDir dir;
  LineFollower f(dir.file("events.jsonl"));
  Append(f.path(), "first\nsec");
  EXPECT_EQ(f.ReadNew(), Lines{"first"});
  EXPECT_EQ(f.ReadNew(), Lines{});  // "sec" is not a line yet
  Append(f.path(), "ond\nthi");
  EXPECT_EQ(f.ReadNew(), Lines{"second"});
  Append(f.path(), "rd\n\nfourth\n");
  EXPECT_EQ(f.ReadNew(), (Lines{"third", "", "fourth"}));
  EXPECT_EQ(f.ReadNew(), Lines{});
}

TEST(LineFollowerTest, AFileThatShrankIsReadFromItsStart) {
  testing::TempDir dir;
  LineFollower f(dir.file("events.jsonl"));
  Append(f.path(), "one line that is long\n");
  EXPECT_EQ(f.ReadNew(), Lines{"one line that is long"});
  std::ofstream(f.path(), std::ios::binary | std::ios::trunc) << "new\n";
  EXPECT_EQ(f.ReadNew(), Lines{"new"});
}

}  // namespace
}  // namespace tributary
