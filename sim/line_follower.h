// LineFollower: reads a file that another process appends lines to (an event log), a poll at a
// time, and hands back each complete line once.
//
//   LineFollower events(path);
//   for (const std::string& line : events.ReadNew()) Handle(line);
//
// A line is complete at its '\n': a last line still being written (no newline yet) is held back
// and handed over whole by a later ReadNew, so a reader that polls while the writer is in the
// middle of a line neither loses nor splits it. Each call reads only what was appended since the
// last one. A missing file reads as no lines (the writer has not created it yet); a file that
// shrinks (truncated or replaced) is read again from its start. Lines are returned without their
// '\n'. One thread at a time.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tributary {

class LineFollower {
 public:
  explicit LineFollower(std::string path) : path_(std::move(path)) {}

  std::vector<std::string> ReadNew();

  const std::string& path() const { return path_; }

 private:
  std::string path_;
  uint64_t offset_ = 0;  // bytes handed over as complete lines
};

}  // namespace tributary
