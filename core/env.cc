#include "core/env.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace tributary {
namespace {

Status ErrnoStatus(const std::string& what, const std::string& path, int err = errno) {
  if (err == ENOENT) return Status::NotFound(what + " " + path + ": " + std::strerror(err));
  return Status::IoError(what + " " + path + ": " + std::strerror(err));
}

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  int release() {
    int f = fd_;
    fd_ = -1;
    return f;
  }

 private:
  int fd_;
};

class PosixWritableFile final : public WritableFile {
 public:
  PosixWritableFile(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  ~PosixWritableFile() override { (void)Close(); }

  Status Append(std::span<const uint8_t> data) override {
    if (fd_.get() < 0) return Status::FailedPrecondition("append to closed file " + path_);
    size_t done = 0;
    while (done < data.size()) {
      ssize_t n = ::write(fd_.get(), data.data() + done, data.size() - done);
      if (n < 0) {
        if (errno == EINTR) continue;
        return ErrnoStatus("cannot write", path_);
      }
      done += static_cast<size_t>(n);
    }
    return Status::Ok();
  }
  Status Sync() override {
    if (fd_.get() < 0) return Status::FailedPrecondition("sync of closed file " + path_);
    if (::fsync(fd_.get()) != 0) return ErrnoStatus("cannot fsync", path_);
    return Status::Ok();
  }
  Status Close() override {
    const int fd = fd_.release();
    if (fd >= 0 && ::close(fd) != 0) return ErrnoStatus("cannot close", path_);
    return Status::Ok();
  }

 private:
  std::string path_;
  Fd fd_;
};

class PosixEnv final : public Env {
 public:
  Result<std::vector<uint8_t>> ReadFile(const std::string& path, uint64_t max_bytes) override {
    Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (fd.get() < 0) {
      if (errno == ENOENT) return Status::NotFound("no such file: " + path);
      return ErrnoStatus("cannot open", path);
    }
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) return ErrnoStatus("cannot stat", path);
    if (!S_ISREG(st.st_mode)) return Status::InvalidArgument("not a regular file: " + path);
    if (static_cast<uint64_t>(st.st_size) > max_bytes)
      return Status::OutOfRange(path + " is " + std::to_string(st.st_size) +
                                " bytes, over the cap of " + std::to_string(max_bytes));
    std::vector<uint8_t> out(static_cast<size_t>(st.st_size));
    size_t done = 0;
    while (done < out.size()) {
      ssize_t n = ::read(fd.get(), out.data() + done, out.size() - done);
      if (n < 0) {
        if (errno == EINTR) continue;
        return ErrnoStatus("cannot read", path);
      }
      if (n == 0) break;  // the file shrank while reading
      done += static_cast<size_t>(n);
    }
    out.resize(done);
    return out;
  }

  Result<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path) override {
    return Open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC);
  }
  Result<std::unique_ptr<WritableFile>> NewAppendableFile(const std::string& path) override {
    return Open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC);
  }

  Status RenameFile(const std::string& from, const std::string& to) override {
    if (::rename(from.c_str(), to.c_str()) != 0) return ErrnoStatus("cannot rename onto", to);
    return Status::Ok();
  }
  Status RemoveFile(const std::string& path) override {
    if (::unlink(path.c_str()) != 0) return ErrnoStatus("cannot remove", path);
    return Status::Ok();
  }
  Status SyncDir(const std::string& dir) override {
    const std::string d = dir.empty() ? "." : dir;
    Fd fd(::open(d.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (fd.get() < 0 || ::fsync(fd.get()) != 0) return ErrnoStatus("cannot fsync directory", d);
    return Status::Ok();
  }
  Status CreateDirs(const std::string& dir) override {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) return Status::IoError("cannot create directory " + dir + ": " + ec.message());
    return Status::Ok();
  }
  bool FileExists(const std::string& path) override {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0;
  }

 private:
  static Result<std::unique_ptr<WritableFile>> Open(const std::string& path, int flags) {
    const int fd = ::open(path.c_str(), flags, 0644);
    if (fd < 0) return ErrnoStatus("cannot create", path);
    return std::unique_ptr<WritableFile>(new PosixWritableFile(path, fd));
  }
};

}  // namespace

Env* Env::Default() {
  static PosixEnv env;
  return &env;
}

}  // namespace tributary
