#include "crypto/deny_list.h"

#include <mutex>

#include "core/file_util.h"
#include "crypto/client_id.h"

namespace tributary {
namespace {

std::string_view Trim(std::string_view s) {
  constexpr std::string_view kSpace = " \t\r\v\f";
  const size_t begin = s.find_first_not_of(kSpace);
  if (begin == std::string_view::npos) return {};
  const size_t end = s.find_last_not_of(kSpace);
  return s.substr(begin, end - begin + 1);
}

}  // namespace

Result<std::set<std::string, std::less<>>> DenyList::Parse(std::string_view text,
                                                           std::string_view source) {
  std::set<std::string, std::less<>> ids;
  size_t line_no = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    ++line_no;
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    if (size_t hash = line.find('#'); hash != std::string_view::npos) line = line.substr(0, hash);
    line = Trim(line);
    if (line.empty()) continue;
    Status valid = ValidateClientId(line);
    if (!valid.ok())
      return Status::InvalidArgument(std::string(source) + ":" + std::to_string(line_no) + ": " +
                                     valid.message());
    ids.emplace(line);
  }
  return ids;
}

Status DenyList::LoadFile(const std::string& path) {
  TRIB_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, ReadFileBytes(path, kMaxFileBytes));
  std::string_view text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  TRIB_ASSIGN_OR_RETURN(auto ids, Parse(text, path));
  std::unique_lock lock(mu_);
  ids_.swap(ids);
  return Status::Ok();
}

Status DenyList::Add(std::string_view client_id) {
  TRIB_RETURN_IF_ERROR(ValidateClientId(client_id));
  std::unique_lock lock(mu_);
  ids_.emplace(client_id);
  return Status::Ok();
}

bool DenyList::Remove(std::string_view client_id) {
  std::unique_lock lock(mu_);
  auto it = ids_.find(client_id);
  if (it == ids_.end()) return false;
  ids_.erase(it);
  return true;
}

bool DenyList::Contains(std::string_view client_id) const {
  std::shared_lock lock(mu_);
  return ids_.find(client_id) != ids_.end();
}

size_t DenyList::size() const {
  std::shared_lock lock(mu_);
  return ids_.size();
}

std::vector<std::string> DenyList::Ids() const {
  std::shared_lock lock(mu_);
  return {ids_.begin(), ids_.end()};
}

}  // namespace tributary
