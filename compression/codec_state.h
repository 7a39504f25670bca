// CodecState on disk: the error-feedback residual a client keeps between rounds and restarts.
//
// Format (little-endian): "TRCS", u32 version (1), u32 spec length (<= 256), the spec, u32 count,
// count float32 residual values. Count 0 means an all-zero residual.
//
// ParseCodecState returns Corruption naming the problem for a bad magic or version, a truncated
// file, trailing bytes, a count above `max_floats` (checked before allocating) or a non-finite
// value. Pure and thread-safe.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "compression/codec.h"

namespace tributary {

std::vector<uint8_t> SerializeCodecState(const CodecState& state);
Result<CodecState> ParseCodecState(std::span<const uint8_t> bytes, size_t max_floats);

}  // namespace tributary
