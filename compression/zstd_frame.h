// The optional lossless stage: the whole inner payload as one zstd frame.
//
// ZstdCompress writes a single frame that declares its content size. ZstdDecompress accepts only
// such a frame: it reads the declared size first and refuses, before allocating anything, a frame
// that does not declare one, declares more than `max_bytes` (a decompression bomb), is followed by
// trailing bytes, or does not decompress to exactly the declared size. Decompression writes into a
// buffer of the declared size and can never write past it.
//
// Thread-safe (each call uses its own zstd context).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "tributary/result.h"

namespace tributary {

Result<std::vector<uint8_t>> ZstdCompress(std::span<const uint8_t> in, int level);
Result<std::vector<uint8_t>> ZstdDecompress(std::span<const uint8_t> frame, size_t max_bytes);

}  // namespace tributary
