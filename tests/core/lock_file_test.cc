// LockFile (core/lock_file.h): one holder at a time, the error names the holder's pid and host,
// and a holder that died (SIGKILL) leaves nothing that blocks the next.
#include "core/lock_file.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/history/temp_dir.h"

namespace tributary {
namespace {

using testing::TempDir;

const LockFile::Describe kDescribe{"output.checkpoint_dir X", "another coordinator",
                                   "give each run its own"};

std::string Host() {
  char host[256] = {};
  ::gethostname(host, sizeof(host) - 1);
  return host;
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(LockFileTest, ASecondHolderIsRefusedWithTheFirstOnesPidAndHost) {
  TempDir tmp;
  const std::string dir = tmp.path("out/nested");  // made with its parents
  Result<std::unique_ptr<LockFile>> first = LockFile::AcquireDir(dir, kDescribe);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ((*first)->path(), dir + "/LOCK");
  EXPECT_TRUE(std::filesystem::is_regular_file(dir + "/LOCK"));
  // The record names this process.
  const std::string record = ReadAll(dir + "/LOCK");
  EXPECT_NE(record.find("\"pid\":" + std::to_string(::getpid())), std::string::npos) << record;

  // Another LockFile, in this process too, is refused: the lock is the open file description's.
  Result<std::unique_ptr<LockFile>> second = LockFile::AcquireDir(dir, kDescribe);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kFailedPrecondition);
  const std::string message = second.status().message();
  std::printf("refused: %s\n", message.c_str());
  EXPECT_EQ(message.rfind("output.checkpoint_dir X is in use by another coordinator (", 0), 0u)
      << message;
  EXPECT_NE(message.find("pid " + std::to_string(::getpid())), std::string::npos) << message;
  EXPECT_NE(message.find("on host " + Host()), std::string::npos) << message;
  EXPECT_NE(message.find(dir + "/LOCK is locked); give each run its own"), std::string::npos)
      << message;
  EXPECT_EQ(LockFile::DescribeHolder(dir + "/LOCK").rfind("core_test, pid ", 0), 0u)
      << LockFile::DescribeHolder(dir + "/LOCK");

  // Released by the destructor: the next holder gets it.
  first->reset();
  Result<std::unique_ptr<LockFile>> third = LockFile::AcquireDir(dir, kDescribe);
  EXPECT_TRUE(third.ok()) << third.status().ToString();
}

TEST(LockFileTest, AHolderKilledWithSigkillDoesNotBlockTheNext) {
  TempDir tmp;
  const std::string path = tmp.path("file.lock");
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(ready[0]);
    Result<std::unique_ptr<LockFile>> held = LockFile::Acquire(path, kDescribe);
    const char c = held.ok() ? 'y' : 'n';
    if (::write(ready[1], &c, 1) != 1) ::_exit(3);
    while (true) ::pause();  // until SIGKILL
  }
  ::close(ready[1]);
  char c = 0;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  ::close(ready[0]);
  ASSERT_EQ(c, 'y');

  Result<std::unique_ptr<LockFile>> while_alive = LockFile::Acquire(path, kDescribe);
  ASSERT_FALSE(while_alive.ok());
  EXPECT_NE(while_alive.status().message().find("pid " + std::to_string(child) + " on host"),
            std::string::npos)
      << while_alive.status().message();

  ASSERT_EQ(::kill(child, SIGKILL), 0);
  int wstatus = 0;
  ASSERT_EQ(::waitpid(child, &wstatus, 0), child);
  ASSERT_TRUE(WIFSIGNALED(wstatus));
  // The dead holder's record is still in the file, but the kernel released its lock.
  EXPECT_NE(ReadAll(path).find("\"pid\":" + std::to_string(child)), std::string::npos);
  const auto start = std::chrono::steady_clock::now();
  Result<std::unique_ptr<LockFile>> after = LockFile::Acquire(path, kDescribe);
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(after.ok()) << after.status().ToString();
  std::printf("acquired %.2f ms after the holder (pid %d) was killed\n", ms,
              static_cast<int>(child));
  EXPECT_LT(ms, 1000.0);
  // ...and the record is ours now, the dead one's replaced in full.
  const std::string record = ReadAll(path);
  EXPECT_NE(record.find("\"pid\":" + std::to_string(::getpid())), std::string::npos) << record;
  EXPECT_EQ(record.find("\"pid\":" + std::to_string(child)), std::string::npos) << record;
}

TEST(LockFileTest, AHolderWithoutARecordIsStillRefused) {
  TempDir tmp;
  const std::string path = tmp.path("LOCK");
  // Someone else's lock (flock(1), a script): garbage in the file, or nothing.
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::write(fd, "\x01garbage", 8), 8);
  ASSERT_EQ(::flock(fd, LOCK_EX | LOCK_NB), 0);
  Result<std::unique_ptr<LockFile>> refused = LockFile::Acquire(path, kDescribe);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("a process that has not written its name yet"),
            std::string::npos)
      << refused.status().message();
  ::close(fd);
  EXPECT_TRUE(LockFile::Acquire(path, kDescribe).ok());
}

TEST(LockFileTest, ADirectoryThatIsAFileIsAnError) {
  TempDir tmp;
  const std::string file = tmp.path("plain");
  std::ofstream(file) << "x";
  Result<std::unique_ptr<LockFile>> lock = LockFile::AcquireDir(file, kDescribe);
  ASSERT_FALSE(lock.ok());
  EXPECT_NE(lock.status().message().find("not a directory"), std::string::npos)
      << lock.status().message();
}

}  // namespace
}  // namespace tributary
