// The tensors that cross a cut on the wire (split learning, docs/split.md): a batch's activations
// (SplitActivations) and their gradient (SplitGradient), each an EncodedUpdate of floats encoded
// with the run's split codec (compression/codec.h: "dense" sends them as they are, "q8" in about
// a quarter of the bytes, "topk(0.1)+q8" fewer still). Encoding never uses error feedback: a
// residual carried from one batch's activations to the next would add one batch's values to
// another's.
//
// Decoding checks what can be checked before anything is allocated (the codec named is the run's,
// the layout fingerprint, the number of floats the caller expects from the batch and the cut's
// shape), then Codec::Validate (sizes, index ranges, finite values), then decodes.
//
// Thread-safe (pure functions; a Codec is stateless).
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "compression/codec.h"
#include "protocol/messages.h"
#include "tributary/result.h"

namespace tributary {

// `values` encoded with `codec` (seed drives stochastic rounding), tagged with `fingerprint`.
// InvalidArgument when a value is not finite (every codec but "dense" checks it).
Result<EncodedUpdate> EncodeCutTensor(const Codec& codec, std::span<const float> values,
                                      uint64_t fingerprint, uint64_t seed);

// The floats of `t`, which must name `codec`'s spec and `fingerprint` and hold `expected` values;
// a ProtocolError (protocol/wire.h) whose message starts with `what` otherwise:
// PROTOCOL_VIOLATION for another codec, layout or size, MALFORMED_MESSAGE for bytes that are not
// a valid encoding (or decode to a value that is not finite).
Result<std::vector<float>> DecodeCutTensor(const Codec& codec, const EncodedUpdate& t,
                                           uint64_t fingerprint, size_t expected,
                                           std::string_view what);

}  // namespace tributary
