// Message bodies: a Message <-> the cereal binary bytes that follow a frame header.
//
// EncodeMessageBody enforces the same schema caps that decoding does, so a peer never receives a
// message it would refuse. DecodeMessageBody treats its input as hostile: every size is checked
// against the bytes that remain and the field's cap before anything is allocated, trailing bytes
// are an error, and no exception escapes. Errors are ProtocolError(kMalformedMessage, ...) naming
// the message type and the field, e.g.
//   "MALFORMED_MESSAGE: Hello: capabilities.codecs: size 1000000 exceeds the cap of 64".
// Both functions are thread-safe (no shared state).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "protocol/byte_buffer.h"
#include "protocol/messages.h"
#include "tributary/result.h"

namespace tributary {

Result<std::vector<uint8_t>> EncodeMessageBody(const Message& message);

Result<Message> DecodeMessageBody(MessageType type, std::span<const uint8_t> body);

// The bytes EncodeMessageBody would make of `message`, counted without making them (a payload is
// one count, not a copy): about the memory a received message holds. 0 when it cannot be encoded.
uint64_t EncodedBodyBytes(const Message& message);

// Steady-state variants that reuse memory: a process that encodes or decodes one large update after
// another keeps its buffers' capacity instead of allocating (and page-faulting) 40 MB per message.
// EncodeMessageBodyInto replaces *out's contents. DecodeMessageBodyInto decodes into *out in place
// when it already holds a message of `type` (vectors and strings keep their capacity), otherwise
// into a fresh one. On error *out holds an unspecified (but valid) message.
Status EncodeMessageBodyInto(const Message& message, std::vector<uint8_t>* out);
// Appends the body to *out (a ByteBuffer grows without copying and uses huge pages; frame.h).
Status EncodeMessageBodyTo(const Message& message, ByteBuffer* out);
Status DecodeMessageBodyInto(MessageType type, std::span<const uint8_t> body, Message* out);
// Like DecodeMessageBodyInto, for a body inside memory that `owner` keeps alive and nobody writes
// (a reassembled message buffer): SharedBytes fields (an update's bytes, an encoded model) then
// point into the body instead of being copied. A null owner copies, as DecodeMessageBodyInto.
Status DecodeMessageBodySharing(MessageType type, const std::shared_ptr<const void>& owner,
                                std::span<const uint8_t> body, Message* out);

// Replaces *out's contents with the body, except that a TaskAssignment's or EvaluateTask's model
// data (the raw floats or the encoded bytes: the body's last bytes), or an UpdateSubmission's
// update bytes (also its last bytes), are not copied: *tail is set to
// them and *tail_owner to the payload's shared buffer that keeps them alive, and the body is *out
// followed by *tail. Other messages, and an empty payload, leave *tail empty, *tail_owner null and
// *out holding the whole body.
Status EncodeMessageBodySharingPayload(const Message& message, ByteBuffer* out,
                                       std::shared_ptr<const void>* tail_owner,
                                       std::span<const uint8_t>* tail);

}  // namespace tributary
