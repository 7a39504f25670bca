#include "sim/sim_wire.h"

#include <chrono>
#include <memory>
#include <vector>

#include "protocol/message_codec.h"

namespace tributary {

double SimWallNow() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

uint64_t FramedBytes(const OutboundMessage& m) {
  uint64_t n = 0;
  for (const auto& f : m.frames) n += f.header_length + f.body_length;
  return n;
}

Result<uint64_t> FramedBytesWithoutFrozen(const Message& m) {
  Message stripped = m;  // shares the payloads
  if (auto* t = std::get_if<TaskAssignment>(&stripped)) t->frozen.values = SharedFloats();
  if (auto* t = std::get_if<EvaluateTask>(&stripped)) t->frozen.values = SharedFloats();
  TRIB_ASSIGN_OR_RETURN(OutboundMessage wire, EncodeOutbound(stripped, ProtocolLimits{}, 1));
  return FramedBytes(wire);
}

uint64_t FrozenValueBytes(const Message& m) {
  if (const auto* t = std::get_if<TaskAssignment>(&m))
    return t->frozen.values.size() * sizeof(float);
  if (const auto* t = std::get_if<EvaluateTask>(&m)) return t->frozen.values.size() * sizeof(float);
  return 0;
}

Result<std::vector<uint8_t>> ToWire(const Message& m, uint64_t stream, uint64_t* bytes) {
  TRIB_ASSIGN_OR_RETURN(OutboundMessage wire, EncodeOutbound(m, ProtocolLimits{}, stream));
  *bytes = FramedBytes(wire);
  return wire.BodyBytes();  // the body as the receiver reassembles it
}

Result<Message> FromWire(MessageType type, std::vector<uint8_t> body) {
  // Handed to the decoder the way MessageReader does: the decoded payloads share the body.
  auto shared = std::make_shared<const std::vector<uint8_t>>(std::move(body));
  Message got;
  TRIB_RETURN_IF_ERROR(DecodeMessageBodySharing(type, shared, *shared, &got));
  return got;
}

Result<Message> ThroughWire(const Message& m, uint64_t stream, uint64_t* bytes) {
  // The frames are freed before the decoding.
  TRIB_ASSIGN_OR_RETURN(std::vector<uint8_t> body, ToWire(m, stream, bytes));
  return FromWire(TypeOf(m), std::move(body));
}

}  // namespace tributary
