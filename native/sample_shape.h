// The shape check the native training API's C and C++ entry points share (internal): a sample's
// height, width and channels, each checked before any size is computed from them.
#pragma once

#include <cstdint>
#include <string>

#include "tributary/result.h"

namespace tributary {

// height * width * channels, each in [1, 2^20] (so the product fits 64 bits); otherwise
// InvalidArgument led by `set` ("train", "eval").
inline Result<uint64_t> CheckedSampleSize(int64_t height, int64_t width, int64_t channels,
                                          const std::string& set) {
  constexpr int64_t kMax = int64_t{1} << 20;
  if (height < 1 || width < 1 || channels < 1 || height > kMax || width > kMax || channels > kMax)
    return Status::InvalidArgument(set +
                                   ": height, width and channels must each be in [1, 2^20], "
                                   "got " +
                                   std::to_string(height) + " x " + std::to_string(width) + " x " +
                                   std::to_string(channels));
  return static_cast<uint64_t>(height) * static_cast<uint64_t>(width) *
         static_cast<uint64_t>(channels);
}

}  // namespace tributary
