#include "core/file_util.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace tributary {
namespace {

Status ErrnoStatus(const std::string& what, const std::string& path) {
  return Status::IoError(what + " " + path + ": " + std::strerror(errno));
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

}  // namespace

Result<std::vector<uint8_t>> ReadFileBytes(const std::string& path, uint64_t max_bytes) {
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
    if (n == 0) break;  // file shrank while reading
    done += static_cast<size_t>(n);
  }
  out.resize(done);
  return out;
}

Status WriteFileAtomic(const std::string& path, std::span<const uint8_t> bytes) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    Fd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    if (fd.get() < 0) return ErrnoStatus("cannot create", tmp);
    size_t done = 0;
    while (done < bytes.size()) {
      ssize_t n = ::write(fd.get(), bytes.data() + done, bytes.size() - done);
      if (n < 0) {
        if (errno == EINTR) continue;
        Status s = ErrnoStatus("cannot write", tmp);
        ::unlink(tmp.c_str());
        return s;
      }
      done += static_cast<size_t>(n);
    }
    if (::fsync(fd.get()) != 0) {
      Status s = ErrnoStatus("cannot fsync", tmp);
      ::unlink(tmp.c_str());
      return s;
    }
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    Status s = ErrnoStatus("cannot rename onto", path);
    ::unlink(tmp.c_str());
    return s;
  }
  std::filesystem::path dir = std::filesystem::path(path).parent_path();
  if (dir.empty()) dir = ".";
  Fd dfd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dfd.get() < 0 || ::fsync(dfd.get()) != 0)
    return ErrnoStatus("cannot fsync directory", dir.string());
  return Status::Ok();
}

Status WriteFileAtomic(const std::string& path, std::string_view text) {
  return WriteFileAtomic(
      path, std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(text.data()), text.size()));
}

}  // namespace tributary
