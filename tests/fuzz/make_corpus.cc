// Writes the seed corpus for protocol_fuzz into the directory given as argv[1]: valid streams of
// every message type (plain and chunked), and the classic bad inputs (bad magic, unknown version,
// 2^40 length, unknown type, bad flags, broken chunk sequences, lying size tags, truncations).
// Run once by hand (protocol_fuzz_make_corpus tests/fuzz/corpus); the output is committed.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "core/file_util.h"
#include "protocol/frame.h"
#include "protocol/message_codec.h"

namespace {

using namespace tributary;
using Bytes = std::vector<uint8_t>;

ProtocolLimits SmallChunks() {  // same caps as the fuzz target, with chunks small enough to seed
  ProtocolLimits l;
  l.max_frame_payload = 64 << 10;
  l.max_message_bytes = 1 << 20;
  l.chunk_data_bytes = 256;
  return l;
}

Bytes Frames(const Message& m, const ProtocolLimits& limits = SmallChunks()) {
  return EncodeOutbound(m, limits, 7)->Flatten();
}

Bytes Header(uint32_t magic, uint16_t version, uint8_t type, uint8_t flags, uint64_t length) {
  Bytes b(kFrameHeaderBytes);
  std::memcpy(b.data(), &magic, 4);
  std::memcpy(b.data() + 4, &version, 2);
  b[6] = type;
  b[7] = flags;
  std::memcpy(b.data() + 8, &length, 8);
  return b;
}

Bytes Cat(std::initializer_list<Bytes> parts) {
  Bytes out;
  for (const Bytes& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <corpus dir>\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  int written = 0;
  auto put = [&](const std::string& name, const Bytes& bytes) {
    const Status s = WriteFileAtomic(dir + "/" + name, bytes);
    if (!s.ok()) {
      std::fprintf(stderr, "%s\n", s.ToString().c_str());
      std::exit(1);
    }
    ++written;
  };

  Hello hello;
  hello.capabilities = {"cpu", {"dense", "topk", "q8"}, 600, 0, {}};
  DeclareLayout(hello.capabilities, {{"fc.weight", "F32", {10, 4}}, {"fc.bias", "F32", {10}}});
  hello.software_version = "0.1.0";
  TaskAssignment task;
  task.round = 3;
  task.codec.spec = "topk(0.01)+q8";
  task.model.layout_fingerprint = 0xabcdef;
  task.model.values.mutable_values().assign(300, 0.25f);  // > 256 bytes: chunked
  TaskAssignment task_q8 = task;  // a quantized download: the payload travels encoded
  task_q8.model.values = SharedFloats();
  task_q8.model.encoding = "q8";
  task_q8.model.encoded = SharedBytes(Bytes(400, 9));
  UpdateSubmission update;
  update.round = 3;
  update.num_examples = 600;
  update.metrics = {{"train_loss", 0.4}, {"train_accuracy", 0.9}};
  update.update = {"dense", 0xabcdef, 100, Bytes(400, 7)};
  // SCAFFOLD (protocol version 4): the task carries the server's control variate, the update the
  // client's control delta.
  TaskAssignment task_scaffold = task;
  task_scaffold.control = SharedFloats(std::vector<float>(300, 0.5f));
  UpdateSubmission update_scaffold = update;
  update_scaffold.control_delta = SharedFloats(std::vector<float>(100, -0.25f));
  const SecAggKeysMsg secagg_keys{4, "edge-1", Bytes(32, 1), Bytes(32, 2), "PEM", Bytes(64, 3)};
  const SecAggKeysMsg secagg_bare{4, "edge-2", Bytes(32, 4), Bytes(32, 5), "", {}};
  const SecAggSealedShareMsg secagg_share{"edge-1", "edge-2", Bytes(116, 6)};
  // The aggregation tier (protocol version 5).
  GroupTask group_task;
  group_task.members = {{"edge-1", 11}, {"edge-2", 12}};
  group_task.task = task;
  GroupResult group_result;
  group_result.round = 3;
  group_result.records = {{"edge-1", 600, 600, 400, {{"train_loss", 0.4}}, 0, "", ""},
                          {"edge-2", 5, 0, 16, {}, 7, "num_examples", "too few"}};
  group_result.partial = SharedBytes(Bytes(300, 4));
  GroupTask secure_group_task = group_task;
  secure_group_task.secagg = SecAggStartMsg{3, "run-1", 101, 31, 1.0f, 8, 65536, 100, 84, 43, 3};
  GroupResult secure_group_result;
  secure_group_result.round = 3;
  secure_group_result.records = {{"edge-1", 0, 0, 0, {}, 0, "", ""}};
  secure_group_result.secagg_bits = 31;
  secure_group_result.secagg_length = 3;
  secure_group_result.partial = SharedBytes(Bytes(12, 5));
  GroupMembership membership;
  membership.joined = {{"edge-1", hello.capabilities}};
  membership.left = {"edge-3"};
  // Split learning (protocol version 7).
  TaskAssignment task_split = task;
  task_split.split_cut = 3;
  task_split.split_codec.spec = "q8";
  const SplitActivations split_acts{3, 0, 3, {1, 4, 9}, {"q8", 0xabcdef, 3 * 12, Bytes(60, 3)}};
  const SplitGradient split_grad{3, 0, 4.5, 2, {"dense", 0xabcdef, 6, Bytes(24, 0)}};
  // The U-shaped split (protocol version 9): a head's cut, and batches without labels.
  TaskAssignment task_u = task_split;
  task_u.split_head = 7;
  const SplitActivations split_middle{3, 0, 2, {}, {"q8", 0xabcdef, 2 * 5, Bytes(20, 1)}};
  // run.federate = "unfrozen" (protocol version 10): the federated tensors and the frozen rest.
  TaskAssignment task_frozen = task;
  task_frozen.frozen = {{1}, 0xfeedULL, std::vector<float>(12, 0.5f)};
  const std::vector<std::pair<std::string, Message>> valid = {
      {"hello", hello},
      {"task_frozen_chunked", task_frozen},
      {"evaluate_task_frozen", EvaluateTask{3, 2, 64, 100, 1000, {{0, 2}, 7, {}}, {5, {1, 2}}}},
      {"task_split_chunked", task_split},
      {"split_activations", split_acts},
      {"split_gradient", split_grad},
      {"task_failed", TaskFailed{3, 1, TaskFailed::kFit, 13, "trainer.fit failed"}},
      {"task_split_u_chunked", task_u},
      {"split_activations_u", split_middle},
      {"aggregator_hello", AggregatorHello{kProtocolVersion, "0.1.0"}},
      {"group_membership", membership},
      {"group_task_chunked", group_task},
      {"group_result_chunked", group_result},
      {"group_task_secure_chunked", secure_group_task},
      {"group_result_secure", secure_group_result},
      {"welcome", Welcome{1, "edge-1", "0.1.0", 5000}},
      {"task_chunked", task},
      {"task_q8_chunked", task_q8},
      {"evaluate_task", EvaluateTask{3, 2, 64, 100, 1000, {}, {0xabcdef, {1, 2, 3}}}},
      {"update_chunked", update},
      {"task_scaffold_chunked", task_scaffold},
      {"update_scaffold_chunked", update_scaffold},
      {"evaluate_result", EvaluateResult{3, 2, 100, 0.3, 0.8, {{"f1", 0.7}}}},
      {"heartbeat", Heartbeat{1, 1700000000000}},
      {"error", Error{3, "FRAME_TOO_LARGE: frame payload length 1099511627776 exceeds the cap"}},
      {"goodbye", Goodbye{"done"}},
      {"goodbye_come_back", Goodbye{"pace steering", 0, 60'000, 30'000}},
      {"secagg_keys", secagg_keys},
      {"secagg_roster", SecAggRosterMsg{4, {secagg_keys, secagg_bare}}},
      {"secagg_shares", SecAggSharesMsg{4, {secagg_share}}},
      {"secagg_inbox", SecAggInboxMsg{4, {"edge-1", "edge-2"}, {secagg_share}}},
      {"secagg_masked_input", SecAggMaskedInputMsg{4, 31, 5, Bytes(20, 9)}},
      {"secagg_unmask_request", SecAggUnmaskRequestMsg{4, {"edge-1"}, {"edge-2"}}},
      {"secagg_start", SecAggStartMsg{4, "run-1", 101, 31, 1.0f, 8, 65536, 100, 84, 43, 3}},
      {"secagg_unmask_response", SecAggUnmaskResponseMsg{4, {{"edge-2", 2, 1, {1, 2, 3, 4, 5}}}}},
  };
  Bytes all;
  for (const auto& [name, m] : valid) {
    const Bytes frames = Frames(m);
    put("valid_" + name, frames);
    all.insert(all.end(), frames.begin(), frames.end());
    put("body_" + name, *EncodeMessageBody(m));  // exercises the body decoders directly
  }
  put("valid_stream_all_types", all);

  // A heartbeat between the chunks of a transfer.
  const OutboundMessage chunked = *EncodeOutbound(task, SmallChunks(), 9);
  Bytes interleaved;
  for (size_t i = 0; i < chunked.frames.size(); ++i) {
    const Bytes f = chunked.FrameBytes(i);
    interleaved.insert(interleaved.end(), f.begin(), f.end());
    if (i == 0) {
      const Bytes hb = Frames(Heartbeat{2, 3});
      interleaved.insert(interleaved.end(), hb.begin(), hb.end());
    }
  }
  put("valid_interleaved_heartbeat", interleaved);

  const std::string http = "GET / HTTP/1.1\r\nHost: coordinator\r\n\r\n";
  put("bad_magic_http", Bytes(http.begin(), http.end()));
  put("bad_version", Cat({Header(kFrameMagic, 1, 7, 0, 16), Bytes(16, 0)}));  // a version-1 peer
  put("length_2_pow_40", Header(kFrameMagic, kProtocolVersion, 5, 0, uint64_t{1} << 40));
  put("length_max", Header(kFrameMagic, kProtocolVersion, 5, 0, ~uint64_t{0}));
  put("unknown_type", Cat({Header(kFrameMagic, kProtocolVersion, 200, 0, 0)}));
  put("bad_flags", Cat({Header(kFrameMagic, kProtocolVersion, 7, 0x80, 16), Bytes(16, 0)}));
  Bytes chunk_hdr(kChunkHeaderBytes);
  EncodeChunkHeader({1, 0, uint64_t{1} << 40}, chunk_hdr.data());
  put("chunk_total_too_large",
      Cat({Header(kFrameMagic, kProtocolVersion, 5, kFrameFlagChunk, kChunkHeaderBytes + 4),
           chunk_hdr, Bytes(4, 1)}));
  EncodeChunkHeader({1, 100, 1000}, chunk_hdr.data());
  put("chunk_wrong_offset",
      Cat({Header(kFrameMagic, kProtocolVersion, 5, kFrameFlagChunk, kChunkHeaderBytes + 4),
           chunk_hdr, Bytes(4, 1)}));

  // A ModelPayload whose float count claims far more than the bytes present.
  EvaluateTask small{1, 1, 1, 1, 1, {}, {5, {1, 2, 3}}};
  Bytes body = *EncodeMessageBody(small);
  const uint64_t lie = uint64_t{1} << 50;
  std::memcpy(body.data() + body.size() - 12 - 8, &lie, 8);
  put("vector_size_tag_lie", Cat({Header(kFrameMagic, kProtocolVersion, 4, 0, body.size()), body}));
  Bytes hello_body = *EncodeMessageBody(hello);
  const uint64_t huge_string = uint64_t{1} << 62;
  std::memcpy(hello_body.data() + 4, &huge_string, 8);  // capabilities.device length
  put("string_size_tag_lie",
      Cat({Header(kFrameMagic, kProtocolVersion, 1, 0, hello_body.size()), hello_body}));
  // A Hello whose declared layout claims 2^40 tensors.
  Hello few;
  few.capabilities = {"cpu", {"dense"}, 1, 0, {}};
  DeclareLayout(few.capabilities, {{"w", "F32", {2}}});
  Bytes few_body = *EncodeMessageBody(few);
  const uint64_t many = uint64_t{1} << 40;
  // The tensor count follows version (4), device (8 + 3), codecs (8 + 8 + 5), num_examples (8)
  // and the fingerprint (8).
  std::memcpy(few_body.data() + 4 + 11 + 21 + 8 + 8, &many, 8);
  put("layout_count_lie",
      Cat({Header(kFrameMagic, kProtocolVersion, 1, 0, few_body.size()), few_body}));

  // An update whose control delta claims 2^50 floats: its count follows round, model_version,
  // num_examples (3 x 8) and the metrics map.
  UpdateSubmission lying = update_scaffold;
  lying.metrics.clear();
  Bytes lying_body = *EncodeMessageBody(lying);
  std::memcpy(lying_body.data() + 24 + 8, &lie, 8);
  put("control_delta_size_lie",
      Cat({Header(kFrameMagic, kProtocolVersion, 5, 0, lying_body.size()), lying_body}));

  const Bytes task_frames = Frames(task);
  put("truncated_mid_header", Bytes(task_frames.begin(), task_frames.begin() + 9));
  put("truncated_mid_chunk", Bytes(task_frames.begin(), task_frames.begin() + 300));
  std::printf("wrote %d seed inputs to %s\n", written, dir.c_str());
  return 0;
}
