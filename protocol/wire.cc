#include "protocol/wire.h"

#include <algorithm>
#include <array>
#include <utility>

namespace tributary {
namespace {

struct ErrorInfo {
  ErrorCode code;
  std::string_view name;
  StatusCode status;
};

constexpr std::array<ErrorInfo, 18> kErrors = {{
    {ErrorCode::kUnspecified, "UNSPECIFIED", StatusCode::kInternal},
    {ErrorCode::kBadMagic, "BAD_MAGIC", StatusCode::kCorruption},
    {ErrorCode::kUnsupportedVersion, "UNSUPPORTED_VERSION", StatusCode::kFailedPrecondition},
    {ErrorCode::kFrameTooLarge, "FRAME_TOO_LARGE", StatusCode::kResourceExhausted},
    {ErrorCode::kMessageTooLarge, "MESSAGE_TOO_LARGE", StatusCode::kResourceExhausted},
    {ErrorCode::kUnknownMessageType, "UNKNOWN_MESSAGE_TYPE", StatusCode::kCorruption},
    {ErrorCode::kMalformedFrame, "MALFORMED_FRAME", StatusCode::kCorruption},
    {ErrorCode::kMalformedMessage, "MALFORMED_MESSAGE", StatusCode::kCorruption},
    {ErrorCode::kTimeout, "TIMEOUT", StatusCode::kDeadlineExceeded},
    {ErrorCode::kUnauthenticated, "UNAUTHENTICATED", StatusCode::kPermissionDenied},
    {ErrorCode::kRevoked, "REVOKED", StatusCode::kPermissionDenied},
    {ErrorCode::kProtocolViolation, "PROTOCOL_VIOLATION", StatusCode::kFailedPrecondition},
    {ErrorCode::kShuttingDown, "SHUTTING_DOWN", StatusCode::kUnavailable},
    {ErrorCode::kInternal, "INTERNAL", StatusCode::kInternal},
    {ErrorCode::kLayoutMismatch, "LAYOUT_MISMATCH", StatusCode::kFailedPrecondition},
    {ErrorCode::kRunFailed, "RUN_FAILED", StatusCode::kAborted},
    {ErrorCode::kSuperseded, "SUPERSEDED", StatusCode::kFailedPrecondition},
    {ErrorCode::kTaskFailed, "TASK_FAILED", StatusCode::kAborted},
}};

const ErrorInfo* FindError(uint32_t code) {
  for (const ErrorInfo& e : kErrors) {
    if (static_cast<uint32_t>(e.code) == code) return &e;
  }
  return nullptr;
}

constexpr std::array<std::string_view, kMaxMessageType + 1> kTypeNames = {"",
                                                                          "Hello",
                                                                          "Welcome",
                                                                          "TaskAssignment",
                                                                          "EvaluateTask",
                                                                          "UpdateSubmission",
                                                                          "EvaluateResult",
                                                                          "Heartbeat",
                                                                          "Error",
                                                                          "Goodbye",
                                                                          "SecAggKeys",
                                                                          "SecAggRoster",
                                                                          "SecAggShares",
                                                                          "SecAggInbox",
                                                                          "SecAggMaskedInput",
                                                                          "SecAggUnmaskRequest",
                                                                          "SecAggUnmaskResponse",
                                                                          "SecAggStart",
                                                                          "AggregatorHello",
                                                                          "AggregatorWelcome",
                                                                          "GroupMembership",
                                                                          "GroupTask",
                                                                          "GroupResult",
                                                                          "SplitActivations",
                                                                          "SplitGradient",
                                                                          "TaskFailed"};

}  // namespace

std::string MessageTypeName(MessageType type) {
  const auto v = static_cast<uint8_t>(type);
  if (v >= kMinMessageType && v <= kMaxMessageType) return std::string(kTypeNames[v]);
  return "Unknown(" + std::to_string(v) + ")";
}

std::optional<MessageType> MessageTypeFromWire(uint8_t value) {
  if (value < kMinMessageType || value > kMaxMessageType) return std::nullopt;
  return static_cast<MessageType>(value);
}

std::string ErrorCodeName(uint32_t code) {
  if (const ErrorInfo* e = FindError(code)) return std::string(e->name);
  return "UNKNOWN_ERROR_" + std::to_string(code);
}

std::string DescribeError(uint32_t code, std::string_view message) {
  const std::string name = ErrorCodeName(code);
  if (message.size() > name.size() + 1 && message.substr(0, name.size()) == name &&
      message.substr(name.size(), 2) == ": ")
    return std::string(message);
  return name + ": " + std::string(message);
}

Status ProtocolError(ErrorCode code, std::string_view detail) {
  const ErrorInfo* e = FindError(static_cast<uint32_t>(code));
  const StatusCode status = e ? e->status : StatusCode::kInternal;
  std::string message = ErrorCodeName(code);
  message += ": ";
  message += detail;
  return Status(status, std::move(message));
}

ErrorCode ProtocolErrorCodeOf(const Status& s) {
  if (s.ok()) return ErrorCode::kUnspecified;
  const std::string& m = s.message();
  for (const ErrorInfo& e : kErrors) {
    if (m.size() > e.name.size() && m.compare(0, e.name.size(), e.name) == 0 &&
        m[e.name.size()] == ':') {
      return e.code;
    }
  }
  return ErrorCode::kInternal;
}

bool ClosedForBadInput(const Status& why) {
  switch (ProtocolErrorCodeOf(why)) {
    case ErrorCode::kBadMagic:
    case ErrorCode::kUnsupportedVersion:
    case ErrorCode::kFrameTooLarge:
    case ErrorCode::kMessageTooLarge:
    case ErrorCode::kUnknownMessageType:
    case ErrorCode::kMalformedFrame:
    case ErrorCode::kMalformedMessage:
    case ErrorCode::kTimeout:
      return true;
    default:
      return false;
  }
}

bool CarriesModel(MessageType type) {
  return type == MessageType::kTaskAssignment || type == MessageType::kEvaluateTask ||
         type == MessageType::kUpdateSubmission;
}

bool IsBulkMessage(MessageType type) {
  return CarriesModel(type) || type == MessageType::kSecAggMaskedInput ||
         type == MessageType::kSecAggRoster || type == MessageType::kSecAggInbox ||
         type == MessageType::kGroupMembership || type == MessageType::kGroupTask ||
         type == MessageType::kGroupResult || type == MessageType::kSplitActivations ||
         type == MessageType::kSplitGradient;
}

uint64_t ProtocolLimits::CapFor(MessageType type) const {
  return IsBulkMessage(type) ? max_message_bytes
                             : std::min(max_message_bytes, max_control_message_bytes);
}

Status ProtocolLimits::Validate() const {
  if (max_frame_payload == 0) return Status::InvalidArgument("max_frame_payload must be > 0");
  if (max_message_bytes == 0) return Status::InvalidArgument("max_message_bytes must be > 0");
  if (max_control_message_bytes == 0)
    return Status::InvalidArgument("max_control_message_bytes must be > 0");
  if (chunk_data_bytes == 0) return Status::InvalidArgument("chunk_data_bytes must be > 0");
  if (chunk_data_bytes > max_frame_payload ||
      max_frame_payload - chunk_data_bytes < kChunkHeaderBytes) {
    return Status::InvalidArgument(
        "chunk_data_bytes (" + std::to_string(chunk_data_bytes) +
        ") plus the 24-byte chunk header must fit in max_frame_payload (" +
        std::to_string(max_frame_payload) + ")");
  }
  return Status::Ok();
}

}  // namespace tributary
