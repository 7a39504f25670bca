// Conversions between secure aggregation's protocol structs (secagg_messages.h here) and its wire
// messages (protocol/secagg_messages.h), and the bit packing of masked inputs.
//
// FromWire checks what the wire format cannot: key lengths (32 bytes), share kinds, and that a
// packed input holds exactly `length` values of `bits` bits with zero padding; errors are
// InvalidArgument naming the field. The roster a client receives carries certificates and
// signatures only for its neighbours (RosterFor): the others' keys are needed only to derive the
// neighbour graph, which every party computes from all of them.
#pragma once

#include <span>
#include <vector>

#include "privacy/secagg/neighbour_graph.h"
#include "privacy/secagg/secagg_messages.h"
#include "protocol/secagg_messages.h"

namespace tributary {

// `values` (each below 2^bits, 1 <= bits <= 64) packed little-endian, bits per value.
std::vector<uint8_t> PackBits(std::span<const uint64_t> values, int bits);
Result<std::vector<uint64_t>> UnpackBits(std::span<const uint8_t> packed, uint64_t length,
                                         int bits);

SecAggKeysMsg ToWire(const SecAggKeys& keys, uint64_t round);
Result<SecAggKeys> FromWire(const SecAggKeysMsg& msg);

// The roster as `recipient` (its index) receives it: every client's keys, certificates and
// signatures of its neighbours only.
SecAggRosterMsg RosterFor(const SecAggRoster& roster, const NeighbourGraph& graph, size_t recipient,
                          uint64_t round);
Result<SecAggRoster> FromWire(const SecAggRosterMsg& msg);

SecAggSharesMsg ToWire(const SecAggShares& shares, uint64_t round);
// `from` is the sender as the connection authenticated it; every share must say so.
Result<SecAggShares> FromWire(const SecAggSharesMsg& msg, const std::string& from);

SecAggInboxMsg ToWire(const SecAggInbox& inbox, uint64_t round);
SecAggInbox FromWire(const SecAggInboxMsg& msg);

SecAggMaskedInputMsg ToWire(const SecAggMaskedInput& input, uint64_t round, int bits);
Result<SecAggMaskedInput> FromWire(const SecAggMaskedInputMsg& msg, const std::string& from,
                                   int bits);

SecAggUnmaskRequestMsg ToWire(const SecAggUnmaskRequest& request, uint64_t round);
SecAggUnmaskRequest FromWire(const SecAggUnmaskRequestMsg& msg);

SecAggUnmaskResponseMsg ToWire(const SecAggUnmaskResponse& response, uint64_t round);
Result<SecAggUnmaskResponse> FromWire(const SecAggUnmaskResponseMsg& msg, const std::string& from);

}  // namespace tributary
