#include "protocol/message_codec.h"

#include <cereal/archives/binary.hpp>

#include <bit>
#include <ostream>
#include <streambuf>
#include <utility>

namespace tributary {
namespace {

// cereal's BinaryOutputArchive writes host byte order; the wire is little-endian.
static_assert(std::endian::native == std::endian::little,
              "the Tributary wire format is little-endian; big-endian hosts are not supported");

// A streambuf that appends to a byte vector, so cereal writes straight into the body buffer.
class VectorSink : public std::streambuf {
 public:
  explicit VectorSink(std::vector<uint8_t>& out) : out_(out) {}

 protected:
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    out_.insert(out_.end(), reinterpret_cast<const uint8_t*>(s),
                reinterpret_cast<const uint8_t*>(s) + n);
    return n;
  }
  int_type overflow(int_type c) override {
    if (!traits_type::eq_int_type(c, traits_type::eof())) {
      out_.push_back(static_cast<uint8_t>(traits_type::to_char_type(c)));
    }
    return traits_type::not_eof(c);
  }

 private:
  std::vector<uint8_t>& out_;
};

template <class T>
Result<Message> DecodeAs(std::span<const uint8_t> body) {
  T value;
  wire::BoundedInputArchive ar(body);
  ar(value);
  if (ar.remaining() != 0) {
    throw wire::WireException(ErrorCode::kMalformedMessage,
                              std::to_string(ar.remaining()) + " trailing bytes after the message");
  }
  return Message(std::move(value));
}

}  // namespace

Result<std::vector<uint8_t>> EncodeMessageBody(const Message& message) {
  std::vector<uint8_t> out;
  try {
    VectorSink sink(out);
    std::ostream os(&sink);
    cereal::BinaryOutputArchive ar(os);
    std::visit([&ar](const auto& m) { ar(m); }, message);
  } catch (const wire::WireException& e) {
    return ProtocolError(e.code(),
                         "encoding " + MessageTypeName(TypeOf(message)) + ": " + e.what());
  } catch (const std::exception& e) {
    return Status::Internal("encoding " + MessageTypeName(TypeOf(message)) + ": " + e.what());
  }
  return out;
}

Result<Message> DecodeMessageBody(MessageType type, std::span<const uint8_t> body) {
  try {
    switch (type) {
      case MessageType::kHello:
        return DecodeAs<Hello>(body);
      case MessageType::kWelcome:
        return DecodeAs<Welcome>(body);
      case MessageType::kTaskAssignment:
        return DecodeAs<TaskAssignment>(body);
      case MessageType::kEvaluateTask:
        return DecodeAs<EvaluateTask>(body);
      case MessageType::kUpdateSubmission:
        return DecodeAs<UpdateSubmission>(body);
      case MessageType::kEvaluateResult:
        return DecodeAs<EvaluateResult>(body);
      case MessageType::kHeartbeat:
        return DecodeAs<Heartbeat>(body);
      case MessageType::kError:
        return DecodeAs<Error>(body);
      case MessageType::kGoodbye:
        return DecodeAs<Goodbye>(body);
    }
  } catch (const wire::WireException& e) {
    return ProtocolError(e.code(), MessageTypeName(type) + ": " + e.what());
  } catch (const std::exception& e) {
    // Only allocation failure can land here; the archive throws nothing else.
    return ProtocolError(ErrorCode::kMalformedMessage, MessageTypeName(type) + ": " + e.what());
  }
  return ProtocolError(ErrorCode::kUnknownMessageType,
                       "no message has type " + std::to_string(static_cast<int>(type)));
}

}  // namespace tributary
