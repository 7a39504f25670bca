// Codec: turns a client's model delta into bytes for the wire, and bytes back into an aggregate.
//
// The client encodes `new weights - global weights`. The coordinator first Validate()s the bytes
// completely (sizes, index ranges, finiteness, value bounds) — they come from an untrusted peer —
// and only then DecodeInto() the strategy's UpdateSink, scaled by the client's weight, so sparse or
// quantized updates never need a dense temporary and a bad update never half-lands in an
// aggregate.
//
// A codec object holds only its configuration; per-client state (error-feedback residuals) is
// passed in. Encode/Validate/DecodeInto are const and thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "compression/update_sink.h"
#include "tributary/result.h"

namespace tributary {

// What validation learned about an update.
struct UpdateStats {
  double max_abs = 0.0;  // largest |value| the update decodes to
  size_t values = 0;     // values carried (nonzeros for sparse codecs)
};

class Codec {
 public:
  virtual ~Codec() = default;
  // The canonical spec string, e.g. "dense".
  virtual std::string_view spec() const = 0;
  virtual Result<std::vector<uint8_t>> Encode(std::span<const float> delta) const = 0;
  // Corruption (naming the problem) when `bytes` is not a valid encoding of num_floats values, or
  // decodes to a NaN or Inf.
  virtual Result<UpdateStats> Validate(std::span<const uint8_t> bytes, size_t num_floats) const = 0;
  // Writes scale * update into `sink`. Only for bytes that passed Validate() with this num_floats.
  virtual void DecodeInto(std::span<const uint8_t> bytes, UpdateSink& sink, float scale) const = 0;
};

// The codec named by `spec`. Known today: "dense" (raw little-endian float32).
Result<std::unique_ptr<Codec>> MakeCodec(std::string_view spec);
// The spec names this build can encode, for Hello's capabilities.
std::vector<std::string> SupportedCodecs();

}  // namespace tributary
