// The simulator's passage of messages through the real wire format, and its wall clock.
//
// ThroughWire(m) is `m` as a peer receives it: encoded into frames the way the transport sends
// it (EncodeOutbound), then decoded by the hostile-input decoder (DecodeMessageBodySharing), so
// every simulated update and download is counted in framed bytes and parsed as deployment parses
// it. Thread-safe.
#pragma once

#include <cstdint>

#include "protocol/frame.h"
#include "protocol/messages.h"

namespace tributary {

// Seconds on a monotonic clock (differences only).
double SimWallNow();
// Header and body bytes of every frame of `m`.
uint64_t FramedBytes(const OutboundMessage& m);
// run.federate = "unfrozen" sends the frozen tensors' values (FrozenPart::values) with a client's
// first task only: a task's framed size without them, which is the same for every client of a
// round or version, and the bytes they add to one client's.
Result<uint64_t> FramedBytesWithoutFrozen(const Message& m);
uint64_t FrozenValueBytes(const Message& m);
// `m` through the wire; `*bytes` gets its framed size. The decoder's error for anything it
// refuses.
Result<Message> ThroughWire(const Message& m, uint64_t stream, uint64_t* bytes);
// The first half of ThroughWire: `m`'s frames reassembled into the body the receiver decodes;
// `*bytes` gets its framed size.
Result<std::vector<uint8_t>> ToWire(const Message& m, uint64_t stream, uint64_t* bytes);
// The second half: a body of type `type` as the coordinator's decoder receives it.
Result<Message> FromWire(MessageType type, std::vector<uint8_t> body);

}  // namespace tributary
