// ReadTextFile(path): a test's whole-file read, "" when the file cannot be opened (the assertion
// on its content then fails and names what was expected).
#pragma once

#include <fstream>
#include <sstream>
#include <string>

namespace tributary::testing {

inline std::string ReadTextFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace tributary::testing
