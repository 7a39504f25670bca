#include "sim/line_follower.h"

#include <fstream>
#include <iterator>

namespace tributary {

std::vector<std::string> LineFollower::ReadNew() {
  std::vector<std::string> lines;
  std::ifstream in(path_, std::ios::binary | std::ios::ate);
  if (!in) return lines;
  const std::streamoff size = in.tellg();
  if (size < 0) return lines;
  if (static_cast<uint64_t>(size) < offset_) offset_ = 0;  // truncated or replaced
  in.seekg(static_cast<std::streamoff>(offset_));
  const std::string fresh((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  size_t begin = 0;
  for (size_t nl = fresh.find('\n'); nl != std::string::npos; nl = fresh.find('\n', begin)) {
    lines.emplace_back(fresh, begin, nl - begin);
    begin = nl + 1;
  }
  offset_ += begin;  // a partial last line stays for the next call
  return lines;
}

}  // namespace tributary
