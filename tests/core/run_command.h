// RunCommand: runs a program the build made (a tool such as tributary-certs or tributary-dp) from a
// test, through /bin/sh and bounded by coreutils `timeout` so that a hang fails the test instead of
// stalling it. Every argument is single-quoted for the shell. In a cross build the program runs
// under the tests' emulator (emulator.h).
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <string>
#include <vector>

#include "tests/core/emulator.h"

namespace tributary::testing {

struct CommandResult {
  int exit_code = -1;  // -1 when the program did not exit normally
  std::string out;     // stdout, and stderr too when they were merged
  std::string err;     // stderr when kept apart
};

inline std::string ShellQuote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'')
      out += "'\\''";
    else
      out += c;
  }
  return out + "'";
}

// `program` with `args`; stderr goes into `out` with merge_stderr, else into `err` (through a file
// in `scratch_dir`).
inline CommandResult RunCommand(const std::string& program, const std::vector<std::string>& args,
                                bool merge_stderr, const std::string& scratch_dir = "/tmp") {
  std::string cmd = "timeout 60 ";
  for (const std::string& word : EmulatorPrefix()) cmd += ShellQuote(word) + " ";
  cmd += ShellQuote(program);
  for (const std::string& a : args) {
    cmd += ' ';
    cmd += ShellQuote(a);
  }
  const std::string err_path = scratch_dir + "/run_command_stderr." + std::to_string(::getpid());
  cmd += merge_stderr ? std::string(" 2>&1") : " 2>" + ShellQuote(err_path);
  CommandResult r;
  FILE* pipe = ::popen(cmd.c_str(), "r");
  EXPECT_NE(pipe, nullptr) << cmd;
  if (pipe == nullptr) return r;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), pipe)) > 0) r.out.append(buf, n);
  const int status = ::pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (!merge_stderr) {
    if (FILE* f = std::fopen(err_path.c_str(), "r")) {
      while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0) r.err.append(buf, n);
      std::fclose(f);
    }
    std::remove(err_path.c_str());
  }
  return r;
}

}  // namespace tributary::testing
