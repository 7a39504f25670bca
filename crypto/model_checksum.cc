#include "crypto/model_checksum.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstdint>
#include <span>

#include "crypto/sha256.h"

namespace tributary {

std::string ModelChecksum(std::string_view format, const SafetensorsMetadata& metadata,
                          std::string_view checksum_key, const ModelWeights& weights) {
  Sha256 h;
  h.Update(format);
  for (const auto& [key, value] : metadata) {
    if (key == checksum_key) continue;
    h.Update(fmt::format("\n{}={}", key, value));
  }
  for (const TensorInfo& t : weights.tensors())
    h.Update(fmt::format("\n{} [{}]", t.name, fmt::join(t.shape, ",")));
  h.Update(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(weights.data().data()),
                                    weights.size_bytes()));
  return h.HexDigest();
}

Status VerifyModelChecksum(std::string_view file, std::string_view format,
                           const SafetensorsMetadata& metadata, std::string_view checksum_key,
                           const ModelWeights& weights) {
  const auto it = metadata.find(std::string(checksum_key));
  const std::string recorded = it == metadata.end() ? "" : it->second;
  const std::string computed = ModelChecksum(format, metadata, checksum_key, weights);
  if (recorded == computed) return Status::Ok();
  return Status::Corruption(fmt::format(
      "{}: checksum mismatch: the file was changed or damaged after it was written (sha256 "
      "recorded {}, computed {})",
      file, recorded.empty() ? "none" : recorded.substr(0, 16) + "...",
      computed.substr(0, 16) + "..."));
}

}  // namespace tributary
