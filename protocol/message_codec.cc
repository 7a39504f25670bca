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

// A streambuf that appends to a byte container, so cereal writes straight into the body buffer.
template <class Append>
class AppendSink : public std::streambuf {
 public:
  explicit AppendSink(Append append) : append_(std::move(append)) {}

 protected:
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    append_(s, static_cast<size_t>(n));
    return n;
  }
  int_type overflow(int_type c) override {
    if (!traits_type::eq_int_type(c, traits_type::eof())) {
      const char ch = traits_type::to_char_type(c);
      append_(&ch, 1);
    }
    return traits_type::not_eof(c);
  }

 private:
  Append append_;
};

template <class Append>
Status Encode(const Message& message, Append append) {
  try {
    AppendSink<Append> sink(std::move(append));
    std::ostream os(&sink);
    cereal::BinaryOutputArchive ar(os);
    std::visit([&ar](const auto& m) { ar(m); }, message);
  } catch (const wire::WireException& e) {
    return ProtocolError(e.code(),
                         "encoding " + MessageTypeName(TypeOf(message)) + ": " + e.what());
  } catch (const std::exception& e) {
    return Status::Internal("encoding " + MessageTypeName(TypeOf(message)) + ": " + e.what());
  }
  return Status::Ok();
}

template <class T>
void DecodeAs(std::span<const uint8_t> body, const std::shared_ptr<const void>& owner,
              Message* out) {
  if (!std::holds_alternative<T>(*out)) out->emplace<T>();
  wire::BoundedInputArchive ar(body);
  if (owner) ar.set_owner(owner);
  ar(std::get<T>(*out));
  if (ar.remaining() != 0) {
    throw wire::WireException(ErrorCode::kMalformedMessage,
                              std::to_string(ar.remaining()) + " trailing bytes after the message");
  }
}

}  // namespace

Status EncodeMessageBodyInto(const Message& message, std::vector<uint8_t>* out) {
  out->clear();
  return Encode(message, [out](const char* p, size_t n) {
    const auto* b = reinterpret_cast<const uint8_t*>(p);
    if (n >= (size_t{2} << 20) && out->size() + n > out->capacity()) {
      out->reserve(out->size() + n);  // one allocation for a large field, on huge pages
      AdviseHugePages(out->data() + out->size(), n);
    }
    out->insert(out->end(), b, b + n);
  });
}

uint64_t EncodedBodyBytes(const Message& message) {
  uint64_t n = 0;
  return Encode(message, [&n](const char*, size_t k) { n += k; }).ok() ? n : 0;
}

Status EncodeMessageBodyTo(const Message& message, ByteBuffer* out) {
  return Encode(message, [out](const char* p, size_t n) { out->Append(p, n); });
}

Status EncodeMessageBodySharingPayload(const Message& message, ByteBuffer* out,
                                       std::shared_ptr<const void>* tail_owner,
                                       std::span<const uint8_t>* tail) {
  tail_owner->reset();
  *tail = {};
  const ModelPayload* payload = nullptr;
  if (const auto* t = std::get_if<TaskAssignment>(&message)) payload = &t->model;
  if (const auto* e = std::get_if<EvaluateTask>(&message)) payload = &e->model;
  if (const auto* g = std::get_if<GroupTask>(&message)) payload = &g->task.model;
  std::shared_ptr<const void> owner;
  std::span<const uint8_t> data;
  if (const auto* u = std::get_if<UpdateSubmission>(&message)) {
    owner = u->update.bytes.shared();
    data = u->update.bytes.span();
  } else if (const auto* r = std::get_if<GroupResult>(&message)) {
    owner = r->partial.shared();
    data = r->partial.span();
  } else if (payload != nullptr && payload->is_encoded()) {
    owner = payload->encoded.shared();
    data = payload->encoded.span();
  } else if (payload != nullptr) {
    owner = payload->values.shared();
    data = std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(payload->values.data()),
                                    payload->values.size() * sizeof(float));
  }
  if (data.empty()) {
    out->Clear();
    return EncodeMessageBodyTo(message, out);
  }
  // cereal writes the payload's data (floats or encoded bytes, or an update's bytes) with one sputn
  // of exactly their bytes (CappedSharedFloats' / CappedSharedBytes' save); that write is left out
  // and becomes the tail. The payload (the update) is the message's last field and its data the
  // last bytes, so nothing follows; if a schema change ever made something follow, encode
  // plainly instead.
  out->Clear();
  const auto* first = reinterpret_cast<const char*>(data.data());
  bool skipped = false, wrote_after = false;
  TRIB_RETURN_IF_ERROR(Encode(message, [&](const char* p, size_t n) {
    if (!skipped && p == first && n == data.size()) {
      skipped = true;
      return;
    }
    if (skipped) wrote_after = true;
    out->Append(p, n);
  }));
  if (skipped && !wrote_after) {
    *tail_owner = std::move(owner);
    *tail = data;
    return Status::Ok();
  }
  out->Clear();
  return EncodeMessageBodyTo(message, out);
}

Result<std::vector<uint8_t>> EncodeMessageBody(const Message& message) {
  std::vector<uint8_t> out;
  TRIB_RETURN_IF_ERROR(EncodeMessageBodyInto(message, &out));
  return out;
}

Status DecodeMessageBodyInto(MessageType type, std::span<const uint8_t> body, Message* out) {
  return DecodeMessageBodySharing(type, nullptr, body, out);
}

Status DecodeMessageBodySharing(MessageType type, const std::shared_ptr<const void>& owner,
                                std::span<const uint8_t> body, Message* out) {
  try {
    switch (type) {
      case MessageType::kHello:
        DecodeAs<Hello>(body, owner, out);
        return Status::Ok();
      case MessageType::kWelcome:
        DecodeAs<Welcome>(body, owner, out);
        return Status::Ok();
      case MessageType::kTaskAssignment:
        DecodeAs<TaskAssignment>(body, owner, out);
        return Status::Ok();
      case MessageType::kEvaluateTask:
        DecodeAs<EvaluateTask>(body, owner, out);
        return Status::Ok();
      case MessageType::kUpdateSubmission:
        DecodeAs<UpdateSubmission>(body, owner, out);
        return Status::Ok();
      case MessageType::kEvaluateResult:
        DecodeAs<EvaluateResult>(body, owner, out);
        return Status::Ok();
      case MessageType::kHeartbeat:
        DecodeAs<Heartbeat>(body, owner, out);
        return Status::Ok();
      case MessageType::kError:
        DecodeAs<Error>(body, owner, out);
        return Status::Ok();
      case MessageType::kGoodbye:
        DecodeAs<Goodbye>(body, owner, out);
        return Status::Ok();
      case MessageType::kSecAggKeys:
        DecodeAs<SecAggKeysMsg>(body, owner, out);
        return Status::Ok();
      case MessageType::kSecAggRoster:
        DecodeAs<SecAggRosterMsg>(body, owner, out);
        return Status::Ok();
      case MessageType::kSecAggShares:
        DecodeAs<SecAggSharesMsg>(body, owner, out);
        return Status::Ok();
      case MessageType::kSecAggInbox:
        DecodeAs<SecAggInboxMsg>(body, owner, out);
        return Status::Ok();
      case MessageType::kSecAggMaskedInput:
        DecodeAs<SecAggMaskedInputMsg>(body, owner, out);
        return Status::Ok();
      case MessageType::kSecAggUnmaskRequest:
        DecodeAs<SecAggUnmaskRequestMsg>(body, owner, out);
        return Status::Ok();
      case MessageType::kSecAggUnmaskResponse:
        DecodeAs<SecAggUnmaskResponseMsg>(body, owner, out);
        return Status::Ok();
      case MessageType::kSecAggStart:
        DecodeAs<SecAggStartMsg>(body, owner, out);
        return Status::Ok();
      case MessageType::kAggregatorHello:
        DecodeAs<AggregatorHello>(body, owner, out);
        return Status::Ok();
      case MessageType::kAggregatorWelcome:
        DecodeAs<AggregatorWelcome>(body, owner, out);
        return Status::Ok();
      case MessageType::kGroupMembership:
        DecodeAs<GroupMembership>(body, owner, out);
        return Status::Ok();
      case MessageType::kGroupTask:
        DecodeAs<GroupTask>(body, owner, out);
        return Status::Ok();
      case MessageType::kGroupResult:
        DecodeAs<GroupResult>(body, owner, out);
        return Status::Ok();
      case MessageType::kSplitActivations:
        DecodeAs<SplitActivations>(body, owner, out);
        return Status::Ok();
      case MessageType::kSplitGradient:
        DecodeAs<SplitGradient>(body, owner, out);
        return Status::Ok();
      case MessageType::kTaskFailed:
        DecodeAs<TaskFailed>(body, owner, out);
        return Status::Ok();
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

Result<Message> DecodeMessageBody(MessageType type, std::span<const uint8_t> body) {
  Message out;
  TRIB_RETURN_IF_ERROR(DecodeMessageBodyInto(type, body, &out));
  return out;
}

}  // namespace tributary
