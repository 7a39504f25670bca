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

Result<Message> ThroughWire(const Message& m, uint64_t stream, uint64_t* bytes) {
  TRIB_ASSIGN_OR_RETURN(OutboundMessage wire, EncodeOutbound(m, ProtocolLimits{}, stream));
  *bytes = FramedBytes(wire);
  // The body as the receiver reassembles it, handed to the decoder the way MessageReader does;
  // the frames are freed first.
  auto body = std::make_shared<const std::vector<uint8_t>>(wire.BodyBytes());
  wire = OutboundMessage{};
  Message got;
  TRIB_RETURN_IF_ERROR(DecodeMessageBodySharing(TypeOf(m), body, *body, &got));
  return got;
}

}  // namespace tributary
