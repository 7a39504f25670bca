// The caps of the wire schema (bytes for strings, entries for lists and maps), shared by the
// messages of messages.h and secagg_messages.h. Decoding never allocates past them.
#pragma once

#include <cstdint>

namespace tributary {

// Schema caps (bytes for strings, entries for lists and maps).
inline constexpr uint64_t kMaxNameBytes = 256;    // ids, device names, versions, codec names, keys
inline constexpr uint64_t kMaxTextBytes = 4096;   // error and goodbye text
inline constexpr uint64_t kMaxCodecs = 64;        // codecs a client lists in Hello
inline constexpr uint64_t kMaxMetrics = 1024;     // entries of a metrics map
inline constexpr uint64_t kMaxTensors = 1 << 16;  // tensors in a declared model layout
inline constexpr uint64_t kMaxTensorRank = 16;    // dimensions of one tensor
inline constexpr uint64_t kMaxTensorNameBytes = 1024;
inline constexpr uint64_t kMaxPayloadFloats = uint64_t{1}
                                              << 40;  // ~4 TiB; ProtocolLimits binds first
inline constexpr uint64_t kMaxPayloadBytes = uint64_t{1} << 42;
// Samples in one split-learning batch (a SplitActivations' labels); the run's batch size binds
// first.
inline constexpr uint64_t kMaxSplitBatch = uint64_t{1} << 16;

}  // namespace tributary
