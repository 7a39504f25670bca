#include "compression/dense_codec.h"

#include <cmath>
#include <cstring>

namespace tributary {
namespace {

// Decoding reads the payload in blocks through a small aligned buffer: the bytes of an update need
// not be float-aligned, and the block stays in L1 between the copy and the fold.
constexpr size_t kBlock = 4096;

}  // namespace

Result<std::vector<uint8_t>> DenseCodec::Encode(std::span<const float> delta, CodecState*,
                                                uint64_t) const {
  // Non-finite values are the coordinator's to reject (Validate names the index); a dense update
  // is sent as it is.
  // Constructed from the bytes (little-endian hosts), not zero-filled first and then copied.
  const auto* bytes = reinterpret_cast<const uint8_t*>(delta.data());
  return std::vector<uint8_t>(bytes, bytes + delta.size() * sizeof(float));
}

Result<UpdateStats> DenseCodec::Validate(std::span<const uint8_t> bytes, size_t num_floats) const {
  if (bytes.size() != num_floats * sizeof(float))
    return Status::Corruption("dense update has " + std::to_string(bytes.size()) +
                              " bytes; a model of " + std::to_string(num_floats) +
                              " floats needs " + std::to_string(num_floats * 4));
  UpdateStats st;
  st.values = num_floats;
  float block[kBlock];
  for (size_t i = 0; i < num_floats; i += kBlock) {
    const size_t n = std::min(kBlock, num_floats - i);
    std::memcpy(block, bytes.data() + i * sizeof(float), n * sizeof(float));
    float mx = 0.0f;
    bool finite = true;
    for (size_t j = 0; j < n; ++j) {
      finite &= std::isfinite(block[j]);
      mx = std::max(mx, std::fabs(block[j]));
    }
    if (!finite) {
      for (size_t j = 0; j < n; ++j)
        if (!std::isfinite(block[j]))
          return Status::Corruption("dense update holds a non-finite value (" +
                                    std::to_string(block[j]) + ") at index " +
                                    std::to_string(i + j));
    }
    st.max_abs = std::max<double>(st.max_abs, mx);
  }
  return st;
}

void DenseCodec::DecodeInto(std::span<const uint8_t> bytes, UpdateSink& sink, float scale) const {
  const size_t num_floats = bytes.size() / sizeof(float);
  alignas(64) float block[kBlock];
  for (size_t i = 0; i < num_floats; i += kBlock) {
    const size_t n = std::min(kBlock, num_floats - i);
    std::memcpy(block, bytes.data() + i * sizeof(float), n * sizeof(float));
    sink.AddDense(i, std::span<const float>(block, n), scale);
  }
}

}  // namespace tributary
