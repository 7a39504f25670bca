// Wire vocabulary shared by framing, message decoding and the transports: the frame magic and
// protocol version, message types, error codes, and the caps that bound what a peer can make us
// allocate.
//
// Protocol errors travel inside a Status whose message starts with the wire error code's name, e.g.
// "FRAME_TOO_LARGE: frame payload length 1099511627776 exceeds the cap of 4194304 bytes".
// ProtocolError() builds one and ProtocolErrorCodeOf() reads the code back, so the code that sends
// an Error message to the peer does not have to guess it. All functions here are thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "tributary/status.h"

namespace tributary {

// The first four bytes of every frame: "TRIB" in ASCII, read as a little-endian uint32.
inline constexpr uint32_t kFrameMagic = 0x42495254;
// The protocol version this build speaks. A frame with another version is rejected with an error
// that names both versions.
// Version 3: SecAggStartMsg carries max_dropout (secure aggregation's default degree).
// Version 4: TaskAssignment carries SCAFFOLD's control variate, UpdateSubmission its control delta.
// Version 5: the aggregation tier's messages (types 18-22).
// Version 6: Goodbye carries pace steering's come-back window; GroupTask and GroupResult secure
// aggregation per group.
// Version 7: split learning (TaskAssignment's split_cut and split_codec; types 23-24).
// Version 8: FitConfig carries the local optimizer (optimizer, beta1, beta2, eps).
// Version 9: the U-shaped split (TaskAssignment's split_head; SplitActivations' samples, either
// way).
// Version 10: TaskAssignment and EvaluateTask carry FrozenPart (run.federate = "unfrozen").
// Version 11: TaskAssignment carries task_id, which UpdateSubmission and GroupResult echo (an
// answer to an earlier task is told from one to the current task).
// Version 12: TaskFailed (type 25): a client tells the coordinator (or its aggregator) that it
// could not do a task, so that the round stops waiting for it.
inline constexpr uint16_t kProtocolVersion = 12;
// Every frame starts with this fixed-size header (see frame.h for the layout).
inline constexpr size_t kFrameHeaderBytes = 16;
// A chunk frame's payload starts with this header: transfer id, offset, total size (3 x uint64).
inline constexpr size_t kChunkHeaderBytes = 24;

enum class MessageType : uint8_t {
  kHello = 1,
  kWelcome = 2,
  kTaskAssignment = 3,
  kEvaluateTask = 4,
  kUpdateSubmission = 5,
  kEvaluateResult = 6,
  kHeartbeat = 7,
  kError = 8,
  kGoodbye = 9,
  // Secure aggregation (secagg_messages.h).
  kSecAggKeys = 10,
  kSecAggRoster = 11,
  kSecAggShares = 12,
  kSecAggInbox = 13,
  kSecAggMaskedInput = 14,
  kSecAggUnmaskRequest = 15,
  kSecAggUnmaskResponse = 16,
  kSecAggStart = 17,
  // The aggregation tier (messages.h, docs/tier.md; protocol version 5).
  kAggregatorHello = 18,
  kAggregatorWelcome = 19,
  kGroupMembership = 20,
  kGroupTask = 21,
  kGroupResult = 22,
  // Split learning (messages.h, docs/split.md; protocol version 7).
  kSplitActivations = 23,
  kSplitGradient = 24,
  // A task the client could not do (messages.h; protocol version 12).
  kTaskFailed = 25,
};
inline constexpr uint8_t kMinMessageType = 1;
inline constexpr uint8_t kMaxMessageType = 25;

// TaskAssignment, EvaluateTask and UpdateSubmission carry a model or an update.
bool CarriesModel(MessageType type);
// Messages whose size grows with the model or the number of clients: the model carriers, secure
// aggregation's masked input, roster and inbox, the tier's membership, task and result, and split
// learning's activations and gradients. Every other message is a control message.
bool IsBulkMessage(MessageType type);

// "Hello", "TaskAssignment", ...; "Unknown(<n>)" for values outside the enum.
std::string MessageTypeName(MessageType type);
// The enum value for a wire byte, or nullopt when no message type has that number.
std::optional<MessageType> MessageTypeFromWire(uint8_t value);

// The code carried by an Error message. Values are stable on the wire; a peer may send a code this
// build does not know, so Error keeps the raw uint32.
enum class ErrorCode : uint32_t {
  kUnspecified = 0,
  kBadMagic = 1,            // the frame does not start with kFrameMagic
  kUnsupportedVersion = 2,  // the frame's protocol version is not kProtocolVersion
  kFrameTooLarge = 3,       // a frame's payload length exceeds ProtocolLimits::max_frame_payload
  kMessageTooLarge = 4,     // a chunked message's total exceeds ProtocolLimits::max_message_bytes
  kUnknownMessageType = 5,  // the frame's type byte names no message
  kMalformedFrame = 6,      // bad flags, bad chunk header, chunks out of order
  kMalformedMessage = 7,    // the message body does not decode (truncated, over a field cap, ...)
  kTimeout = 8,             // a handshake, frame read or write took too long
  kUnauthenticated = 9,     // no usable client certificate
  kRevoked = 10,            // the client id is on the deny list
  kProtocolViolation = 11,  // a well-formed message that is not valid at this point
  kShuttingDown = 12,       // the peer is closing
  kInternal = 13,           // a bug on the sending side
  kLayoutMismatch = 14,     // the client's model layout is not the run's (Hello is refused)
  kRunFailed = 15,          // Goodbye: the run ended failed (the reason says why)
  kSuperseded = 16,         // Goodbye: a newer connection with this client id replaced this one
  kTaskFailed = 17,  // a tier's GroupRecord: the client reported its task failed (TaskFailed)
};

// "FRAME_TOO_LARGE", ...; "UNKNOWN_ERROR_<n>" for codes this build does not know.
std::string ErrorCodeName(uint32_t code);
// "<NAME>: <message>" for an Error received, the name once: a message that already starts with
// it (a ProtocolError's text, sent as it was) is returned as it is.
std::string DescribeError(uint32_t code, std::string_view message);
inline std::string ErrorCodeName(ErrorCode code) {
  return ErrorCodeName(static_cast<uint32_t>(code));
}

// A Status for a protocol error: its message is "<ERROR_CODE_NAME>: <detail>" and its StatusCode
// follows the error (kFrameTooLarge -> ResourceExhausted, kBadMagic -> Corruption, ...).
Status ProtocolError(ErrorCode code, std::string_view detail);
// The wire code at the start of a ProtocolError() message; kInternal when `s` did not come from
// ProtocolError (and kUnspecified for OK).
ErrorCode ProtocolErrorCodeOf(const Status& s);
// Whether a connection closed for `why` was closed for its peer's bad input (a wrong magic or
// version, a frame or message too large, malformed or of an unknown type, or one that stalled):
// the security event the coordinator and the aggregator log, naming the peer.
bool ClosedForBadInput(const Status& why);

// The caps one side of a connection enforces on what it receives (and, for symmetry, on what it
// sends). Every length and count from the peer is checked against these before anything is
// allocated.
struct ProtocolLimits {
  // The largest frame payload accepted. A header announcing more is FRAME_TOO_LARGE as soon as its
  // 16 bytes are read.
  uint64_t max_frame_payload = uint64_t{4} << 20;
  // The largest message, after reassembling its chunks. 64-bit: messages over 2 GiB are fine when
  // configured. Memory for a chunked message grows with the bytes actually received.
  uint64_t max_message_bytes = uint64_t{1} << 30;
  // Messages whose encoded body is larger than this are sent as chunks of (at most) this many data
  // bytes. Must leave room for the 24-byte chunk header within max_frame_payload.
  uint64_t chunk_data_bytes = uint64_t{1} << 20;
  // The largest control message (Hello, Welcome, EvaluateResult, Heartbeat, Error, Goodbye, and
  // secure aggregation's keys, shares and unmasking): a peer cannot make us hold max_message_bytes
  // with a Hello. A bulk message (IsBulkMessage) may use max_message_bytes.
  uint64_t max_control_message_bytes = uint64_t{1} << 20;

  // The cap on a received message of this type.
  uint64_t CapFor(MessageType type) const;

  // InvalidArgument naming the field when the caps are inconsistent (zero, or chunks that would not
  // fit in a frame).
  Status Validate() const;
};

}  // namespace tributary
