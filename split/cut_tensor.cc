#include "split/cut_tensor.h"

#include <string>

#include "compression/update_sink.h"
#include "protocol/wire.h"

namespace tributary {

Result<EncodedUpdate> EncodeCutTensor(const Codec& codec, std::span<const float> values,
                                      uint64_t fingerprint, uint64_t seed) {
  TRIB_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, codec.Encode(values, nullptr, seed));
  EncodedUpdate t;
  t.codec = std::string(codec.spec());
  t.layout_fingerprint = fingerprint;
  t.num_floats = values.size();
  t.bytes = SharedBytes(std::move(bytes));
  return t;
}

Result<std::vector<float>> DecodeCutTensor(const Codec& codec, const EncodedUpdate& t,
                                           uint64_t fingerprint, size_t expected,
                                           std::string_view what) {
  const std::string w(what);
  if (t.codec != codec.spec())
    return ProtocolError(ErrorCode::kProtocolViolation, w + " is encoded with '" + t.codec +
                                                            "'; this run's split codec is '" +
                                                            std::string(codec.spec()) + "'");
  if (t.layout_fingerprint != fingerprint)
    return ProtocolError(ErrorCode::kProtocolViolation,
                         w + " is tagged with another model's layout fingerprint");
  if (t.num_floats != expected)
    return ProtocolError(ErrorCode::kProtocolViolation,
                         w + " holds " + std::to_string(t.num_floats) + " values; " +
                             std::to_string(expected) + " were expected");
  if (Result<UpdateStats> ok = codec.Validate(t.bytes, expected); !ok.ok())
    return ProtocolError(ErrorCode::kMalformedMessage, w + ": " + ok.status().message());
  std::vector<float> out(expected, 0.0f);
  BufferSink sink(out);
  codec.DecodeInto(t.bytes, sink, 1.0f);
  return out;
}

}  // namespace tributary
