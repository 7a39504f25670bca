// Numbers in a safetensors file's metadata (include/tributary/safetensors.h). The metadata is text
// from a file, so untrusted: a number is decimal digits only (std::stoull would take "-1" as
// 2^64 - 1, and leading spaces or a '+'), and anything else is a Corruption naming the file, the
// key and at most 64 characters of the text.
//
//   TRIB_ASSIGN_OR_RETURN(uint64_t v, MetadataU64(meta, "model_version", path));
#pragma once

#include <cstdint>
#include <string_view>

#include "tributary/result.h"
#include "tributary/safetensors.h"

namespace tributary {

// Corruption "<file>: the metadata lacks '<key>'" or "<file>: the metadata's '<key>' is not a
// number: '<text>'".
Result<uint64_t> MetadataU64(const SafetensorsMetadata& meta, std::string_view key,
                             std::string_view file);

}  // namespace tributary
