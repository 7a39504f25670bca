// libFuzzer entry point for the receive path: frame parsing, chunk reassembly and message decoding
// (MessageReader), plus every message body decoder on the raw input. Besides "no crash, no
// sanitizer report", it checks properties and aborts when one breaks:
//   - feeding the input in two pieces gives the same messages and the same error as feeding it
//     whole (the decoder is incremental);
//   - every decoded message re-encodes to bytes that decode and re-encode to the same bytes.
// Built as a fuzzer with clang (-fsanitize=fuzzer,address,undefined) and, with any compiler, into
// protocol_fuzz_replay, which ctest runs over the seed corpus.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <vector>

#include "protocol/frame.h"
#include "protocol/message_codec.h"
#include "protocol/message_reader.h"

namespace {

using namespace tributary;

void Require(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "fuzz property broken: %s\n", what);
    std::abort();
  }
}

ProtocolLimits FuzzLimits() {
  ProtocolLimits l;
  l.max_frame_payload = 64 << 10;
  l.max_message_bytes = 1 << 20;
  l.chunk_data_bytes = 32 << 10;
  return l;
}

void CheckRoundTrip(const Message& m, const ProtocolLimits& limits) {
  Result<std::vector<uint8_t>> body = EncodeMessageBody(m);
  Require(body.ok(), "a decoded message re-encodes");
  Result<Message> again = DecodeMessageBody(TypeOf(m), *body);
  Require(again.ok(), "a re-encoded body decodes");
  Result<std::vector<uint8_t>> body2 = EncodeMessageBody(*again);
  Require(body2.ok() && *body2 == *body, "encode(decode(encode(m))) == encode(m)");
  // And through frames (chunked when large).
  Result<OutboundMessage> out = EncodeOutbound(m, limits, 1);
  Require(out.ok(), "a decoded message frames");
  MessageReader reader(limits);
  std::vector<Message> got;
  Require(reader.Feed(out->Flatten(), &got).ok() && got.size() == 1, "framed message reads back");
  Result<std::vector<uint8_t>> body3 = EncodeMessageBody(got[0]);
  Require(body3.ok() && *body3 == *body, "framed round trip keeps the bytes");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const ProtocolLimits limits = FuzzLimits();
  const std::span<const uint8_t> input(data, size);

  MessageReader whole(limits);
  std::vector<Message> whole_messages;
  const Status whole_status = whole.Feed(input, &whole_messages);

  const size_t split = size == 0 ? 0 : data[size / 2] % (size + 1);
  MessageReader pieces(limits);
  std::vector<Message> piece_messages;
  Status piece_status = pieces.Feed(input.first(split), &piece_messages);
  if (piece_status.ok()) piece_status = pieces.Feed(input.subspan(split), &piece_messages);
  Require(whole_status == piece_status, "split feeding gives the same status");
  Require(whole_messages.size() == piece_messages.size(), "split feeding gives the same messages");

  for (const Message& m : whole_messages) CheckRoundTrip(m, limits);

  for (uint8_t t = kMinMessageType; t <= kMaxMessageType; ++t) {
    Result<Message> m = DecodeMessageBody(static_cast<MessageType>(t), input);
    if (m.ok()) CheckRoundTrip(*m, limits);
  }
  return 0;
}
