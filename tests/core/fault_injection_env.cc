#include "tests/core/fault_injection_env.h"

#include <filesystem>

namespace tributary::testing {
namespace {

std::string Normal(const std::string& path) {
  std::string p = std::filesystem::path(path).lexically_normal().string();
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  return p.empty() ? "." : p;
}

std::string Parent(const std::string& path) {
  std::string p = std::filesystem::path(path).parent_path().string();
  return p.empty() ? "." : p;
}

}  // namespace

class FaultInjectionEnv::File final : public WritableFile {
 public:
  File(FaultInjectionEnv& env, std::shared_ptr<Inode> inode, std::string path)
      : env_(env), inode_(std::move(inode)), path_(std::move(path)) {}
  ~File() override {
    if (open_) (void)Close();
  }
  Status Append(std::span<const uint8_t> data) override { return env_.Append(inode_, data, path_); }
  Status Sync() override { return env_.Sync(inode_, path_); }
  Status Close() override {
    if (!open_) return Status::Ok();
    open_ = false;
    return env_.Close(path_);
  }

 private:
  FaultInjectionEnv& env_;
  std::shared_ptr<Inode> inode_;
  std::string path_;
  bool open_ = true;
};

Status FaultInjectionEnv::WritePointLocked(const std::string& what) {
  if (budget_ && *budget_ <= 0) return Status::IoError("simulated crash before " + what);
  if (budget_) --*budget_;
  ++write_points_;
  return Status::Ok();
}

Result<std::vector<uint8_t>> FaultInjectionEnv::ReadFile(const std::string& path,
                                                         uint64_t max_bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = names_.find(Normal(path));
  if (it == names_.end()) return Status::NotFound("no such file: " + path);
  if (it->second->data.size() > max_bytes)
    return Status::OutOfRange(path + " is " + std::to_string(it->second->data.size()) +
                              " bytes, over the cap of " + std::to_string(max_bytes));
  return it->second->data;
}

Result<std::unique_ptr<WritableFile>> FaultInjectionEnv::Open(const std::string& path,
                                                              bool truncate) {
  const std::string p = Normal(path);
  std::lock_guard<std::mutex> lock(mu_);
  if (!dirs_.count(Parent(p))) return Status::NotFound("cannot create " + path + ": no directory");
  TRIB_RETURN_IF_ERROR(WritePointLocked("creating " + path));
  std::shared_ptr<Inode>& inode = names_[p];
  if (!inode) {
    inode = std::make_shared<Inode>();
  } else if (truncate) {
    inode->data.clear();
    inode->synced.clear();  // truncation is durable at once (the pessimistic case)
  }
  return std::unique_ptr<WritableFile>(new File(*this, inode, p));
}

Result<std::unique_ptr<WritableFile>> FaultInjectionEnv::NewWritableFile(const std::string& path) {
  return Open(path, true);
}

Result<std::unique_ptr<WritableFile>> FaultInjectionEnv::NewAppendableFile(
    const std::string& path) {
  return Open(path, false);
}

Status FaultInjectionEnv::Append(const std::shared_ptr<Inode>& inode, std::span<const uint8_t> data,
                                 const std::string& path) {
  std::lock_guard<std::mutex> lock(mu_);
  TRIB_RETURN_IF_ERROR(WritePointLocked("appending to " + path));
  inode->data.insert(inode->data.end(), data.begin(), data.end());
  return Status::Ok();
}

Status FaultInjectionEnv::Sync(const std::shared_ptr<Inode>& inode, const std::string& path) {
  std::lock_guard<std::mutex> lock(mu_);
  TRIB_RETURN_IF_ERROR(WritePointLocked("syncing " + path));
  inode->synced = inode->data;
  return Status::Ok();
}

Status FaultInjectionEnv::Close(const std::string& path) {
  std::lock_guard<std::mutex> lock(mu_);
  return WritePointLocked("closing " + path);
}

Status FaultInjectionEnv::RenameFile(const std::string& from, const std::string& to) {
  const std::string f = Normal(from), t = Normal(to);
  std::lock_guard<std::mutex> lock(mu_);
  auto it = names_.find(f);
  if (it == names_.end()) return Status::NotFound("cannot rename " + from + ": no such file");
  TRIB_RETURN_IF_ERROR(WritePointLocked("renaming " + from + " to " + to));
  names_[t] = it->second;
  names_.erase(f);
  return Status::Ok();
}

Status FaultInjectionEnv::RemoveFile(const std::string& path) {
  const std::string p = Normal(path);
  std::lock_guard<std::mutex> lock(mu_);
  if (!names_.count(p)) return Status::NotFound("cannot remove " + path + ": no such file");
  TRIB_RETURN_IF_ERROR(WritePointLocked("removing " + path));
  names_.erase(p);
  return Status::Ok();
}

Status FaultInjectionEnv::SyncDir(const std::string& dir) {
  const std::string d = Normal(dir);
  std::lock_guard<std::mutex> lock(mu_);
  TRIB_RETURN_IF_ERROR(WritePointLocked("syncing directory " + dir));
  // The directory's durable entries become its live ones.
  for (auto it = durable_.begin(); it != durable_.end();)
    it = Parent(it->first) == d ? durable_.erase(it) : std::next(it);
  for (const auto& [name, inode] : names_)
    if (Parent(name) == d) durable_[name] = inode;
  return Status::Ok();
}

Status FaultInjectionEnv::CreateDirs(const std::string& dir) {
  std::lock_guard<std::mutex> lock(mu_);
  TRIB_RETURN_IF_ERROR(WritePointLocked("creating directory " + dir));
  for (std::filesystem::path p = Normal(dir); !p.empty() && p != p.root_path(); p = p.parent_path())
    dirs_.insert(p.string());
  dirs_.insert(".");
  return Status::Ok();
}

bool FaultInjectionEnv::FileExists(const std::string& path) {
  std::lock_guard<std::mutex> lock(mu_);
  const std::string p = Normal(path);
  return names_.count(p) > 0 || dirs_.count(p) > 0;
}

void FaultInjectionEnv::FailAfter(int64_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  budget_ = n;
}

int64_t FaultInjectionEnv::write_points() const {
  std::lock_guard<std::mutex> lock(mu_);
  return write_points_;
}

void FaultInjectionEnv::Crash() {
  std::lock_guard<std::mutex> lock(mu_);
  names_.clear();
  for (const auto& [name, inode] : durable_) {
    inode->data = inode->synced;
    names_[name] = inode;
  }
  budget_.reset();
}

std::vector<std::string> FaultInjectionEnv::Files() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> out;
  for (const auto& [name, inode] : names_) out.push_back(name);
  return out;
}

}  // namespace tributary::testing
