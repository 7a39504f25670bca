#include "core/safetensors_metadata.h"

#include <fmt/format.h>

#include <charconv>
#include <string>

namespace tributary {

Result<uint64_t> MetadataU64(const SafetensorsMetadata& meta, std::string_view key,
                             std::string_view file) {
  auto it = meta.find(std::string(key));
  if (it == meta.end())
    return Status::Corruption(fmt::format("{}: the metadata lacks '{}'", file, key));
  const std::string& text = it->second;
  uint64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size())
    return Status::Corruption(fmt::format("{}: the metadata's '{}' is not a number: '{}'", file,
                                          key, text.substr(0, 64)));
  return v;
}

}  // namespace tributary
