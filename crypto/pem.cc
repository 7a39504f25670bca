#include "crypto/pem.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "crypto/openssl_util.h"

namespace tributary {
namespace {

using crypto_internal::CheckKeyMatchesCert;
using crypto_internal::EvpPkeyPtr;
using crypto_internal::ParseCertificate;
using crypto_internal::ParsePrivateKey;
using crypto_internal::ReadPemFile;
using crypto_internal::X509Ptr;

Status ErrnoStatus(const std::string& what, const std::string& path) {
  return Status::IoError(what + " " + path + ": " + std::strerror(errno));
}

bool PathExists(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

Status FsyncParentDir(const std::string& path) {
  std::filesystem::path dir = std::filesystem::path(path).parent_path();
  if (dir.empty()) dir = ".";
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus("cannot open directory", dir.string());
  int rc = ::fsync(fd);
  ::close(fd);
  if (rc != 0) return ErrnoStatus("cannot fsync directory", dir.string());
  return Status::Ok();
}

// Writes `bytes` to a temporary file created with `mode`, then moves it to `path`: rename() when
// overwriting, link() otherwise, so an existing file is never replaced by accident (EEXIST).
Status WriteFileWithMode(const std::string& path, const std::string& bytes, mode_t mode,
                         bool overwrite) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  ::unlink(tmp.c_str());  // a leftover from a crashed run of this pid; ours to remove
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
  if (fd < 0) return ErrnoStatus("cannot create", tmp);
  Status status;
  size_t done = 0;
  while (done < bytes.size() && status.ok()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      status = ErrnoStatus("cannot write", tmp);
    } else {
      done += static_cast<size_t>(n);
    }
  }
  if (status.ok() && ::fsync(fd) != 0) status = ErrnoStatus("cannot fsync", tmp);
  ::close(fd);
  if (status.ok()) {
    if (overwrite) {
      if (::rename(tmp.c_str(), path.c_str()) != 0)
        status = ErrnoStatus("cannot rename onto", path);
    } else if (::link(tmp.c_str(), path.c_str()) != 0) {
      status =
          errno == EEXIST
              ? Status::FailedPrecondition(path + " already exists; pass --force to replace it")
              : ErrnoStatus("cannot create", path);
    }
  }
  ::unlink(tmp.c_str());  // after rename this is a no-op; after link it drops the extra name
  if (!status.ok()) return status;
  return FsyncParentDir(path);
}

}  // namespace

Result<PemPair> LoadPemPair(const std::string& cert_path, const std::string& key_path) {
  PemPair pair;
  TRIB_ASSIGN_OR_RETURN(pair.cert_pem, ReadPemFile(cert_path));
  TRIB_ASSIGN_OR_RETURN(pair.key_pem, ReadPemFile(key_path));
  TRIB_ASSIGN_OR_RETURN(X509Ptr cert, ParseCertificate(pair.cert_pem, cert_path));
  TRIB_ASSIGN_OR_RETURN(EvpPkeyPtr key, ParsePrivateKey(pair.key_pem, key_path));
  TRIB_RETURN_IF_ERROR(CheckKeyMatchesCert(cert.get(), cert_path, key.get(), key_path));
  return pair;
}

Status WritePemPair(const PemPair& pair, const std::string& cert_path, const std::string& key_path,
                    bool overwrite) {
  if (!overwrite) {
    for (const std::string* p : {&cert_path, &key_path}) {
      if (PathExists(*p))
        return Status::FailedPrecondition(*p + " already exists; pass --force to replace it");
    }
  }
  // The key goes first: a crash in between leaves a key without a certificate, which is harmless,
  // rather than a certificate whose key is lost.
  TRIB_RETURN_IF_ERROR(WriteFileWithMode(key_path, pair.key_pem, 0600, overwrite));
  return WriteFileWithMode(cert_path, pair.cert_pem, 0644, overwrite);
}

}  // namespace tributary
