#include "core/lock_file.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string_view>

namespace tributary {
namespace {

std::string ThisProgram() {
#ifdef __GLIBC__
  return program_invocation_short_name;
#else
  return std::string();
#endif
}

std::string HostName() {
  char host[256] = {};
  if (::gethostname(host, sizeof(host) - 1) != 0) return std::string();
  return host;
}

// The record's text fields come from a file anyone may have written: printable ASCII only, short.
std::string Printable(std::string_view s) {
  std::string out;
  for (char c : s.substr(0, 64)) out += (c >= 0x20 && c < 0x7f) ? c : '?';
  return out;
}

std::string UtcTime(int64_t unix_seconds) {
  const std::time_t t = static_cast<std::time_t>(unix_seconds);
  std::tm tm{};
  if (::gmtime_r(&t, &tm) == nullptr) return std::to_string(unix_seconds);
  char text[64];
  if (std::strftime(text, sizeof(text), "%Y-%m-%d %H:%M:%S UTC", &tm) == 0)
    return std::to_string(unix_seconds);
  return text;
}

std::string ReadRecord(int fd) {
  std::string text(LockFile::kMaxRecordBytes, '\0');
  const ssize_t n = ::pread(fd, text.data(), text.size(), 0);
  text.resize(n > 0 ? static_cast<size_t>(n) : 0);
  return text;
}

std::string DescribeRecord(const std::string& text) {
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object() || !j.contains("pid") || !j["pid"].is_number_integer())
    return "a process that has not written its name yet";
  std::string out;
  if (j.contains("program") && j["program"].is_string() && !j["program"].get<std::string>().empty())
    out = Printable(j["program"].get<std::string>()) + ", ";
  out += fmt::format("pid {}", j["pid"].get<int64_t>());
  if (j.contains("host") && j["host"].is_string() && !j["host"].get<std::string>().empty())
    out += " on host " + Printable(j["host"].get<std::string>());
  if (j.contains("since") && j["since"].is_number_integer())
    out += ", since " + UtcTime(j["since"].get<int64_t>());
  return out;
}

}  // namespace

Result<std::unique_ptr<LockFile>> LockFile::Acquire(const std::string& path,
                                                    const Describe& describe) {
  if (path.empty()) return Status::InvalidArgument(describe.subject + ": the lock's path is empty");
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0)
    return Status::IoError(fmt::format("{}: cannot open the lock file {}: {}", describe.subject,
                                       path, std::strerror(errno)));
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    if (err == EWOULDBLOCK) {
      const std::string holder = DescribeRecord(ReadRecord(fd));
      ::close(fd);
      return Status::FailedPrecondition(
          fmt::format("{} is in use by {} ({}; {} is locked){}{}", describe.subject, describe.other,
                      holder, path, describe.advice.empty() ? "" : "; ", describe.advice));
    }
    ::close(fd);
    return Status::IoError(
        fmt::format("{}: cannot lock {}: {}", describe.subject, path, std::strerror(err)));
  }
  // Ours now: whatever a dead holder left in the file is replaced by who we are.
  const nlohmann::json record = {{"pid", static_cast<int64_t>(::getpid())},
                                 {"host", HostName()},
                                 {"program", ThisProgram()},
                                 {"since", static_cast<int64_t>(std::time(nullptr))}};
  const std::string text =
      record.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  // Best effort: the lock holds without its record (a contender then says it has no name yet).
  if (::ftruncate(fd, 0) == 0) {
    const ssize_t written = ::pwrite(fd, text.data(), text.size(), 0);
    (void)written;
  }
  return std::unique_ptr<LockFile>(new LockFile(path, fd));
}

Result<std::unique_ptr<LockFile>> LockFile::AcquireDir(const std::string& dir,
                                                       const Describe& describe) {
  if (dir.empty()) return Status::InvalidArgument(describe.subject + ": the directory is empty");
  std::error_code ec;
  if (std::filesystem::exists(dir, ec) && !std::filesystem::is_directory(dir, ec))
    return Status::InvalidArgument(
        fmt::format("{}: {} exists but is not a directory", describe.subject, dir));
  std::filesystem::create_directories(dir, ec);
  if (ec)
    return Status::IoError(
        fmt::format("{}: cannot create {}: {}", describe.subject, dir, ec.message()));
  return Acquire((std::filesystem::path(dir) / kDirLockName).string(), describe);
}

LockFile::~LockFile() {
  if (fd_ >= 0) ::close(fd_);  // releases the flock
}

std::string LockFile::DescribeHolder(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "a process that has not written its name yet";
  const std::string text = ReadRecord(fd);
  ::close(fd);
  return DescribeRecord(text);
}

}  // namespace tributary
