// Export and import of ModelWeights in the safetensors format
// (https://huggingface.co/docs/safetensors), so Python and PyTorch users can load a Tributary model
// with `safetensors.torch.load_file`.
//
// Format: an 8-byte little-endian header length N, N bytes of JSON header, then the raw data.
// Tributary writes only F32 tensors, in layout order, contiguous. The parser treats its input as
// untrusted: the header length is checked against the bytes present and a cap before anything is
// allocated, every tensor's offsets must lie inside the data and match its dtype and shape, tensors
// must not overlap, and they must cover the data exactly. Any violation is a Corruption status that
// names the problem (and the file, for LoadSafetensors).
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "tributary/model_weights.h"

namespace tributary {

using SafetensorsMetadata = std::map<std::string, std::string>;

// The largest JSON header accepted (the format's own reference limit is 100 MB).
inline constexpr uint64_t kMaxSafetensorsHeaderBytes = 100ull << 20;

std::vector<uint8_t> SerializeSafetensors(const ModelWeights& weights,
                                          const SafetensorsMetadata& metadata = {});
// Parses bytes produced by any safetensors writer, as long as every tensor is F32.
// Tensors are laid out in order of their data offsets. `metadata` may be null.
Result<ModelWeights> ParseSafetensors(std::span<const uint8_t> bytes,
                                      SafetensorsMetadata* metadata = nullptr);

// Writes atomically: a temporary file in the same directory, fsync, rename, fsync of the directory.
Status SaveSafetensors(const ModelWeights& weights, const std::string& path,
                       const SafetensorsMetadata& metadata = {});
Result<ModelWeights> LoadSafetensors(const std::string& path,
                                     SafetensorsMetadata* metadata = nullptr);

}  // namespace tributary
