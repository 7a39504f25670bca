// StdioCapture: while it lives, whatever the process writes to file descriptors 1 and 2 (stdout
// and stderr, from any thread, through any library) lands in a temporary file instead; Finish()
// puts both descriptors back and returns what was written.
//
// Not for use around gtest assertions: a failure message printed during the capture would be
// captured too. Not thread-safe itself (one capture at a time, driven from one thread).
#pragma once

#include <unistd.h>

#include <cstdio>
#include <string>

#include "core/check.h"

namespace tributary::testing {

class StdioCapture {
 public:
  StdioCapture() : file_(std::tmpfile()) {
    TRIB_CHECK(file_ != nullptr, "tmpfile");
    std::fflush(stdout);
    std::fflush(stderr);
    saved_out_ = ::dup(1);
    saved_err_ = ::dup(2);
    TRIB_CHECK(saved_out_ >= 0 && saved_err_ >= 0, "dup");
    TRIB_CHECK(::dup2(::fileno(file_), 1) >= 0 && ::dup2(::fileno(file_), 2) >= 0, "dup2");
  }
  ~StdioCapture() {
    (void)Finish();
    std::fclose(file_);
  }
  StdioCapture(const StdioCapture&) = delete;
  StdioCapture& operator=(const StdioCapture&) = delete;

  // Restores stdout and stderr (once) and returns everything written to them meanwhile.
  std::string Finish() {
    if (saved_out_ >= 0) {
      std::fflush(stdout);
      std::fflush(stderr);
      ::dup2(saved_out_, 1);
      ::dup2(saved_err_, 2);
      ::close(saved_out_);
      ::close(saved_err_);
      saved_out_ = saved_err_ = -1;
    }
    std::string text;
    std::rewind(file_);
    char buffer[4096];
    for (size_t n; (n = std::fread(buffer, 1, sizeof(buffer), file_)) > 0;) text.append(buffer, n);
    return text;
  }

 private:
  std::FILE* file_;
  int saved_out_ = -1;
  int saved_err_ = -1;
};

}  // namespace tributary::testing
