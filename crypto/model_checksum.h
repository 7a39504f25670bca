// ModelChecksum: the SHA-256 that Tributary stores in the metadata of the model files it writes
// and checks when it reads them back (the coordinator's checkpoints, the client's saved global
// model).
//
// It covers the file's format name, its metadata (sorted by key, without `checksum_key` itself),
// every tensor's name and shape in order, and the tensors' data: what the file holds, in a form
// that does not depend on how the safetensors header happens to be written. 64 lowercase hex
// digits.
#pragma once

#include <string>
#include <string_view>

#include "tributary/model_weights.h"
#include "tributary/safetensors.h"
#include "tributary/status.h"

namespace tributary {

std::string ModelChecksum(std::string_view format, const SafetensorsMetadata& metadata,
                          std::string_view checksum_key, const ModelWeights& weights);

// OK when metadata[checksum_key] is the ModelChecksum of what was read from `file`; otherwise
// Corruption naming the file ("checksum mismatch: the file was changed or damaged after it was
// written") with the first digits of both digests.
Status VerifyModelChecksum(std::string_view file, std::string_view format,
                           const SafetensorsMetadata& metadata, std::string_view checksum_key,
                           const ModelWeights& weights);

}  // namespace tributary
