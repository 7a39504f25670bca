#include "core/safetensors_metadata.h"

#include <fmt/format.h>

#include <string>

#include "core/parse_number.h"

namespace tributary {

Result<uint64_t> MetadataU64(const SafetensorsMetadata& meta, std::string_view key,
                             std::string_view file) {
  auto it = meta.find(std::string(key));
  if (it == meta.end())
    return Status::Corruption(fmt::format("{}: the metadata lacks '{}'", file, key));
  const std::string& text = it->second;
  const std::optional<uint64_t> v = ParseWhole<uint64_t>(text);
  if (!v)
    return Status::Corruption(fmt::format("{}: the metadata's '{}' is not a number: '{}'", file,
                                          key, text.substr(0, 64)));
  return *v;
}

}  // namespace tributary
