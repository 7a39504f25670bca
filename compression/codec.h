// Codec: turns a client's model delta into bytes for the wire, and bytes back into an aggregate.
//
// The client encodes `new weights - global weights`. The coordinator first Validate()s the bytes
// completely (sizes, counts, index ranges, bit padding, finiteness, value bounds, zstd size caps) —
// they come from an untrusted peer — and only then DecodeInto() the strategy's UpdateSink, scaled
// by the client's weight, so sparse or quantized updates never need a dense temporary and a bad
// update never half-lands in an aggregate.
//
// A codec is a pipeline named by a spec string (compression/codec_spec.h), e.g. "dense", "q8",
// "topk(0.01)+q8+zstd"; "dense" is a codec like any other. A codec object holds only its
// configuration; per-client state (the error-feedback residual) is passed in to Encode.
// Encode/Validate/DecodeInto are const and thread-safe (a CodecState is not: one client's state is
// used by one thread at a time).
//
// Properties callers ask instead of comparing spec strings:
//   raw_floats()           the encoding is the values' own little-endian float32 bytes, so a
//                          message may carry them as floats, and EncodeShared hands the caller's
//                          buffer over instead of copying it
//   usable_for_download()  the codec can carry a whole global model to clients: nothing is dropped
//                          (no sparsifier), no residual is kept, and values keep at least 8 bits
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "compression/update_sink.h"
#include "core/shared_bytes.h"
#include "tributary/result.h"

namespace tributary {

// What validation learned about an update.
struct UpdateStats {
  double max_abs = 0.0;  // largest |value| the update decodes to
  size_t values = 0;     // values carried (nonzeros for sparse codecs)
};

// One client's codec state, kept between rounds (the client runtime persists it in its state dir;
// see SerializeCodecState in compression/codec_state.h).
struct CodecState {
  std::string spec;             // canonical spec of the pipeline the residual belongs to
  std::vector<float> residual;  // error-feedback residual: what was accumulated but not yet sent;
                                // empty means all zero
};

class Codec {
 public:
  virtual ~Codec() = default;
  // The canonical spec string, e.g. "dense" or "topk(0.01)+q8+zstd".
  virtual std::string_view spec() const = 0;
  // Whether Encode reads and writes CodecState::residual.
  virtual bool uses_error_feedback() const { return false; }
  virtual bool raw_floats() const { return false; }
  virtual bool usable_for_download() const { return false; }

  // Encodes `delta`. With error feedback and a non-null `state`, encodes delta + state->residual
  // and leaves in state->residual what that sum minus the decoded payload is (so residual +
  // decoded == delta + old residual), and sets state->spec; with a null state it encodes delta
  // alone. `seed` drives the stochastic stages (randk, q8..q1): the same inputs and seed give the
  // same bytes. InvalidArgument when the residual has another size than delta, or (for every
  // pipeline but "dense", which sends values as they are for the coordinator to reject) when delta
  // holds a NaN, an Inf or a value above 1e30 in magnitude; the state is then unchanged (unless
  // delta + residual overflows, which clears the residual).
  virtual Result<std::vector<uint8_t>> Encode(std::span<const float> delta, CodecState* state,
                                              uint64_t seed) const = 0;
  // Stateless encode (no error feedback, seed 0).
  Result<std::vector<uint8_t>> Encode(std::span<const float> delta) const {
    return Encode(delta, nullptr, 0);
  }
  // Encode() for a delta whose buffer the caller gives up: `owner` keeps `delta` alive. A
  // raw_floats() codec returns a view of `delta` sharing `owner` (no copy); the others encode.
  Result<SharedBytes> EncodeShared(std::shared_ptr<const void> owner, std::span<const float> delta,
                                   CodecState* state, uint64_t seed) const;

  // Corruption (naming the problem) when `bytes` is not a valid encoding of num_floats values, or
  // decodes to a NaN or Inf.
  virtual Result<UpdateStats> Validate(std::span<const uint8_t> bytes, size_t num_floats) const = 0;
  // Writes scale * update into `sink` (sink.size() values). Only for bytes that passed Validate()
  // with num_floats == sink.size(). Uses O(1) scratch for uncompressed payloads; a zstd payload is
  // decompressed into one buffer of its (capped) inner size.
  virtual void DecodeInto(std::span<const uint8_t> bytes, UpdateSink& sink, float scale) const = 0;
};

// The codec for `spec` (see codec_spec.h for the grammar); InvalidArgument naming the unknown
// stage or parameter. spec() of the result is the canonical form, which may differ from `spec`.
Result<std::unique_ptr<Codec>> MakeCodec(std::string_view spec);
// MakeCodec for carrying a global model: InvalidArgument saying why when the codec is not
// usable_for_download().
Result<std::unique_ptr<Codec>> MakeDownloadCodec(std::string_view spec);
// The stage names this build can encode, for Hello's capabilities (compare with CanEncodeCodec).
std::vector<std::string> SupportedCodecs();

}  // namespace tributary
