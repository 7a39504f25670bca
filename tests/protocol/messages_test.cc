// Message bodies: round trips for every type, cereal format compatibility, and bounded decoding of
// hostile bodies (size tags over the bytes left or over a field cap, truncation, trailing bytes).
#include <gtest/gtest.h>
#include <cereal/archives/binary.hpp>
#include <cereal/types/map.hpp>
#include <cereal/types/string.hpp>
#include <cereal/types/vector.hpp>

#include <cstring>
#include <limits>
#include <sstream>

#include "protocol/message_codec.h"
#include "protocol/messages.h"
#include "protocol/task_failed_text.h"

namespace tributary {
namespace {

std::vector<Message> SampleMessages() {
  Hello hello;
  hello.capabilities = {"cuda:0 NVIDIA H200", {"dense", "topk", "q8"}, 6000, 0, {}};
  DeclareLayout(hello.capabilities,
                {{"encoder/0.W", "F32", {8, 4}}, {"head:b", "F32", {3}}, {"scalar", "F32", {}}});
  hello.software_version = "0.1.0";
  Welcome welcome{kProtocolVersion, "edge-7", "0.1.0", 5000};
  TaskAssignment task;
  task.round = 12;
  task.task_id = 3;  // the attempt's number (version 11)
  task.model_version = 11;
  task.fit = {2, 64, 0.01f, 0.9f, 1e-4f, 0.1f, 100, 0xfeedULL, {}};  // {}: FitConfig::stop
  task.codec.spec = "topk(0.01)+q8";
  task.deadline_ms = 30000;
  task.model = {0x1234abcdULL, {1.5f, -2.0f, 0.0f, 3.25f}};
  task.control = {0.25f, -0.5f, 0.0f, 1.0f};  // SCAFFOLD's server control variate (version 4)
  task.split_cut = 3;                         // split learning (version 7)
  task.split_codec.spec = "q8";
  task.split_head = 8;  // the U-shaped split (version 9)
  // run.federate = "unfrozen" (version 10): the federated tensors, the frozen rest's hash and
  // values.
  task.frozen = {{1, 3}, 0xf00dULL, {0.125f, -4.0f}};
  EvaluateTask eval{3, 2, 128, 1000, 5000, {{0, 2}, 0x5eedULL, {0.75f}}, {77, {0.5f, 0.25f}}};
  UpdateSubmission update;
  update.round = 12;
  update.task_id = 3;
  update.model_version = 11;
  update.num_examples = 600;
  update.metrics = {{"train_loss", 0.42}, {"train_accuracy", 0.9}};
  update.update = {"dense", 0x1234abcdULL, 4, {1, 2, 3, 4, 5, 6, 7, 8}};
  update.control_delta = {-0.125f, 2.0f, 0.0f, 3.5f};  // and the client's control delta
  EvaluateResult result{3, 2, 1000, 0.31, 0.88, {{"f1", 0.8}}};
  const SecAggKeysMsg keys{12,
                           "edge-7",
                           std::vector<uint8_t>(32, 1),
                           std::vector<uint8_t>(32, 2),
                           "-----BEGIN CERTIFICATE-----\n...",
                           std::vector<uint8_t>(70, 3)};
  const SecAggKeysMsg bare{12, "edge-9", std::vector<uint8_t>(32, 4), std::vector<uint8_t>(32, 5),
                           "", {}};
  const SecAggSealedShareMsg share{"edge-7", "edge-1", std::vector<uint8_t>(116, 6)};
  // The aggregation tier's (protocol version 5).
  AggregatorWelcome agg_welcome;
  agg_welcome.aggregator_id = "agg-eu-1";
  agg_welcome.software_version = "0.1.0";
  agg_welcome.heartbeat_interval_ms = 5000;
  agg_welcome.run_config = "run.codec = \"dense\"\n";
  agg_welcome.layout = hello.capabilities.layout;
  agg_welcome.layout_fingerprint = hello.capabilities.layout_fingerprint;
  GroupMembership membership;
  ClientCapabilities member_caps = hello.capabilities;
  member_caps.layout.clear();
  membership.joined = {{"edge-7", member_caps}, {"edge-8", member_caps}};
  membership.left = {"edge-2"};
  GroupTask group_task;
  group_task.members = {{"edge-7", 11}, {"edge-8", 12}};
  group_task.task = task;
  GroupResult group_result;
  group_result.round = 12;
  group_result.task_id = 3;
  group_result.model_version = 11;
  group_result.records = {{"edge-7", 600, 600, 4096, {{"train_loss", 0.4}}, 0, "", ""},
                          {"edge-8", 9999, 0, 16, {}, 7, "num_examples above Hello", "too many"}};
  group_result.partial = std::vector<uint8_t>{1, 0, 0, 0, 9, 8, 7};
  return {
      hello,
      welcome,
      task,
      eval,
      update,
      result,
      Heartbeat{9, 1700000000000},
      Error{static_cast<uint32_t>(ErrorCode::kRevoked), "client id edge-3 is revoked"},
      Goodbye{"pace steering: come back later", 0, 60'000, 30'000},
      keys,
      SecAggRosterMsg{12, {keys, bare}},
      SecAggSharesMsg{12, {share}},
      SecAggInboxMsg{12, {"edge-1", "edge-7"}, {share}},
      SecAggMaskedInputMsg{12, 31, 3, std::vector<uint8_t>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}},
      SecAggUnmaskRequestMsg{12, {"edge-1", "edge-7"}, {"edge-9"}},
      SecAggUnmaskResponseMsg{12, {{"edge-1", 1, 8, {1, 2, 3, 4, 5}}}},
      SecAggStartMsg{12, "run-7", 4097, 31, 1.0f, 8, 65536, 100, 84, 43, 3},
      AggregatorHello{kProtocolVersion, "0.1.0"},
      agg_welcome,
      membership,
      group_task,
      group_result,
      SplitActivations{12, 3, 3, {1, 9, 0}, {"q8", 77, 3 * 6272, std::vector<uint8_t>{4, 5, 6}}},
      SplitGradient{12, 3, 6.25, 2, {"", 77, 3, std::vector<uint8_t>(12, 1)}},
      TaskFailed{12, 2, TaskFailed::kFit, 13, "trainer.fit failed: CUDA out of memory"}};
}

TEST(MessagesTest, EveryTypeRoundTrips) {
  const std::vector<Message> messages = SampleMessages();
  ASSERT_EQ(messages.size(), size_t{kMaxMessageType});
  for (const Message& m : messages) {
    Result<std::vector<uint8_t>> body = EncodeMessageBody(m);
    ASSERT_TRUE(body.ok()) << body.status();
    Result<Message> back = DecodeMessageBody(TypeOf(m), *body);
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(*back, m) << MessageTypeName(TypeOf(m));
  }
}

// The tier's secure aggregation fields: a group's session parameters in its task, and its sum (or
// its session's failure) in its result.
TEST(MessagesTest, SecureGroupTasksAndResultsRoundTrip) {
  const std::vector<Message> samples = SampleMessages();
  const GroupTask& group_task =
      std::get<GroupTask>(samples[static_cast<size_t>(MessageType::kGroupTask) - 1]);
  GroupTask secure_task = group_task;
  secure_task.secagg = SecAggStartMsg{12, "run-1", 101, 31, 1.0f, 8, 65536, 100, 84, 43, 3};
  GroupResult secure_result;
  secure_result.round = 12;
  secure_result.model_version = 11;
  secure_result.records = {{"edge-7", 0, 0, 0, {}, 0, "", ""}};
  secure_result.secagg_bits = 31;
  secure_result.secagg_length = 2;
  secure_result.partial = std::vector<uint8_t>{1, 2, 3, 4, 5, 6, 7, 8};
  GroupResult failed_result = secure_result;
  failed_result.partial = SharedBytes();
  failed_result.secagg_failure = "secure aggregation: 2 clients advertised keys; 3 are needed";
  for (const Message& m : std::vector<Message>{secure_task, secure_result, failed_result}) {
    Result<std::vector<uint8_t>> body = EncodeMessageBody(m);
    ASSERT_TRUE(body.ok()) << body.status();
    Result<Message> back = DecodeMessageBody(TypeOf(m), *body);
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(*back, m) << MessageTypeName(TypeOf(m));
  }
}

TEST(MessagesTest, TypeOfMatchesWireNumbering) {
  EXPECT_EQ(TypeOf(Message(Hello{})), MessageType::kHello);
  EXPECT_EQ(TypeOf(Message(UpdateSubmission{})), MessageType::kUpdateSubmission);
  EXPECT_EQ(TypeOf(Message(Goodbye{})), MessageType::kGoodbye);
  EXPECT_EQ(MessageTypeName(MessageType::kTaskAssignment), "TaskAssignment");
  EXPECT_EQ(TypeOf(Message(SecAggKeysMsg{})), MessageType::kSecAggKeys);
  EXPECT_EQ(TypeOf(Message(SecAggUnmaskResponseMsg{})), MessageType::kSecAggUnmaskResponse);
  EXPECT_EQ(MessageTypeName(MessageType::kSecAggMaskedInput), "SecAggMaskedInput");
  EXPECT_EQ(MessageTypeName(static_cast<MessageType>(42)), "Unknown(42)");
  EXPECT_EQ(TypeOf(Message(AggregatorHello{})), MessageType::kAggregatorHello);
  EXPECT_EQ(TypeOf(Message(GroupResult{})), MessageType::kGroupResult);
  EXPECT_EQ(MessageTypeName(MessageType::kGroupTask), "GroupTask");
  EXPECT_EQ(TypeOf(Message(SplitGradient{})), MessageType::kSplitGradient);
  EXPECT_EQ(MessageTypeName(MessageType::kSplitActivations), "SplitActivations");
  EXPECT_TRUE(IsBulkMessage(MessageType::kSplitActivations));
  EXPECT_EQ(TypeOf(Message(TaskFailed{})), MessageType::kTaskFailed);
  EXPECT_EQ(MessageTypeName(MessageType::kTaskFailed), "TaskFailed");
  EXPECT_FALSE(IsBulkMessage(MessageType::kTaskFailed));
  EXPECT_EQ(ErrorCodeName(ErrorCode::kTaskFailed), "TASK_FAILED");
  EXPECT_EQ(DescribeTaskFailed(TaskFailed{3, 1, TaskFailed::kFit, 13, "no GPU"}),
            "fit task of round 3: INTERNAL: no GPU");
  const std::string logged =
      DescribeTaskFailed(TaskFailed{2, 0, TaskFailed::kEvaluate, 13, std::string(70'000, 'x')});
  EXPECT_EQ(logged.size(),
            std::string("evaluate task of round 2: INTERNAL: ").size() + kMaxLoggedReasonBytes + 3);
}

// The wire format is cereal's binary format: a body written with cereal's stock std::string /
// std::vector / std::map serializers is byte-identical to ours.
TEST(MessagesTest, BodyIsCerealBinaryFormat) {
  UpdateSubmission u;
  u.round = 5;
  u.task_id = 2;  // protocol version 11
  u.model_version = 4;
  u.num_examples = 32;
  u.metrics = {{"a", 1.0}, {"bb", 2.5}};
  u.control_delta = std::vector<float>{0.5f, -1.0f};  // SCAFFOLD's (protocol version 4)
  u.update = {"dense", 99, 2, {9, 8, 7}};
  std::ostringstream os;
  {
    cereal::BinaryOutputArchive ar(os);
    ar(u.round, u.task_id, u.model_version, u.num_examples, u.metrics,
       std::vector<float>(u.control_delta.begin(), u.control_delta.end()), u.update.codec,
       u.update.layout_fingerprint, u.update.num_floats, u.update.bytes.ToVector());
  }
  const std::string stock = os.str();
  Result<std::vector<uint8_t>> ours = EncodeMessageBody(u);
  ASSERT_TRUE(ours.ok());
  ASSERT_EQ(ours->size(), stock.size());
  EXPECT_EQ(std::memcmp(ours->data(), stock.data(), stock.size()), 0);
}

std::vector<uint8_t> U64(uint64_t v) {
  std::vector<uint8_t> out(8);
  std::memcpy(out.data(), &v, 8);
  return out;
}

void Append(std::vector<uint8_t>& out, const std::vector<uint8_t>& more) {
  out.insert(out.end(), more.begin(), more.end());
}

// A Goodbye body whose reason claims 2^62 bytes with only 5 present: an error, not an allocation.
TEST(MessagesTest, StringSizeTagLargerThanBytesLeftIsDecodeError) {
  std::vector<uint8_t> body = U64(uint64_t{1} << 62);
  Append(body, {'h', 'e', 'l', 'l', 'o'});
  Result<Message> m = DecodeMessageBody(MessageType::kGoodbye, body);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(ProtocolErrorCodeOf(m.status()), ErrorCode::kMalformedMessage);
  EXPECT_NE(m.status().message().find("goodbye.reason"), std::string::npos) << m.status();
}

// A ModelPayload whose float vector claims 1000 floats but carries 3: the size tag is checked
// against the bytes left (and names the field) before the vector is resized.
TEST(MessagesTest, VectorSizeTagLargerThanBytesLeftIsDecodeError) {
  EvaluateTask t;
  t.model.values = std::vector<float>{1, 2, 3};
  std::vector<uint8_t> body = *EncodeMessageBody(t);
  // The body ends with the float count (8-byte size tag) and then the 3 floats.
  const size_t tag_at = body.size() - 3 * sizeof(float) - 8;
  uint64_t count = 0;
  std::memcpy(&count, body.data() + tag_at, 8);
  ASSERT_EQ(count, 3u);
  const uint64_t huge = std::numeric_limits<uint64_t>::max() / 2;
  for (uint64_t bad : {uint64_t{4}, uint64_t{1000}, huge}) {
    std::memcpy(body.data() + tag_at, &bad, 8);
    Result<Message> m = DecodeMessageBody(MessageType::kEvaluateTask, body);
    ASSERT_FALSE(m.ok()) << bad;
    EXPECT_EQ(ProtocolErrorCodeOf(m.status()), ErrorCode::kMalformedMessage);
    EXPECT_NE(m.status().message().find("model.values: size " + std::to_string(bad)),
              std::string::npos)
        << m.status();
    EXPECT_NE(m.status().message().find("EvaluateTask"), std::string::npos) << m.status();
  }
}

TEST(MessagesTest, ListCountOverSchemaCapIsDecodeErrorEvenWhenBytesWouldFit) {
  Hello h;
  h.capabilities.codecs.assign(kMaxCodecs, "x");
  ASSERT_TRUE(EncodeMessageBody(h).ok());
  h.capabilities.codecs.push_back("one too many");
  Result<std::vector<uint8_t>> enc = EncodeMessageBody(h);
  ASSERT_FALSE(enc.ok());  // the sender refuses to send what the peer would refuse
  EXPECT_NE(enc.status().message().find("capabilities.codecs: size 65 exceeds the cap of 64"),
            std::string::npos)
      << enc.status();

  // Hand-build the over-cap body: version, device "", 65 empty codec names, num_examples, version.
  std::vector<uint8_t> body = {1, 0, 0, 0};
  Append(body, U64(0));
  Append(body, U64(kMaxCodecs + 1));
  for (uint64_t i = 0; i <= kMaxCodecs; ++i) Append(body, U64(0));
  Append(body, U64(10));  // num_examples
  Append(body, U64(0));   // layout_fingerprint
  Append(body, U64(0));   // no tensors
  Append(body, U64(0));
  Result<Message> m = DecodeMessageBody(MessageType::kHello, body);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("capabilities.codecs: size 65 exceeds the cap of 64"),
            std::string::npos)
      << m.status();
}

// The declared layout's tensor count and each tensor's rank are checked before anything is
// allocated: against the schema caps and against the bytes that remain.
TEST(MessagesTest, LayoutCountsAreCheckedBeforeAllocating) {
  auto hello_with_layout = [](uint64_t tensors, const std::vector<uint8_t>& rest) {
    std::vector<uint8_t> body = {2, 0, 0, 0};
    Append(body, U64(0));  // device ""
    Append(body, U64(0));  // no codecs
    Append(body, U64(1));  // num_examples
    Append(body, U64(7));  // layout_fingerprint
    Append(body, U64(tensors));
    Append(body, rest);
    return DecodeMessageBody(MessageType::kHello, body);
  };
  Result<Message> over_cap = hello_with_layout(kMaxTensors + 1, {});
  ASSERT_FALSE(over_cap.ok());
  EXPECT_NE(over_cap.status().message().find("capabilities.layout: size 65537 exceeds the cap"),
            std::string::npos)
      << over_cap.status();
  Result<Message> over_bytes = hello_with_layout(1000, std::vector<uint8_t>(48, 0));
  ASSERT_FALSE(over_bytes.ok());
  EXPECT_NE(over_bytes.status().message().find("capabilities.layout: size 1000 needs at least 24 "
                                               "bytes each but only 48 bytes remain"),
            std::string::npos)
      << over_bytes.status();
  // One tensor named "a", dtype "F32", rank 17.
  std::vector<uint8_t> tensor = U64(1);
  tensor.push_back('a');
  Append(tensor, U64(3));
  Append(tensor, {'F', '3', '2'});
  Append(tensor, U64(kMaxTensorRank + 1));
  Result<Message> rank = hello_with_layout(1, tensor);
  ASSERT_FALSE(rank.ok());
  EXPECT_NE(rank.status().message().find("layout.shape: size 17 exceeds the cap of 16"),
            std::string::npos)
      << rank.status();
}

TEST(MessagesTest, StringOverCapIsRejected) {
  Error e{1, std::string(kMaxTextBytes + 1, 'x')};
  EXPECT_FALSE(EncodeMessageBody(e).ok());
  std::vector<uint8_t> body = {1, 0, 0, 0};
  Append(body, U64(kMaxTextBytes + 1));
  body.resize(body.size() + kMaxTextBytes + 1, 'x');
  Result<Message> m = DecodeMessageBody(MessageType::kError, body);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("error.message: size 4097 exceeds the cap of 4096"),
            std::string::npos)
      << m.status();
}

TEST(MessagesTest, EveryTruncationIsAnErrorNotACrash) {
  for (const Message& msg : SampleMessages()) {
    const std::vector<uint8_t> body = *EncodeMessageBody(msg);
    for (size_t n = 0; n < body.size(); ++n) {
      Result<Message> m = DecodeMessageBody(TypeOf(msg), std::span(body.data(), n));
      ASSERT_FALSE(m.ok()) << MessageTypeName(TypeOf(msg)) << " truncated to " << n;
      EXPECT_EQ(ProtocolErrorCodeOf(m.status()), ErrorCode::kMalformedMessage);
    }
  }
}

TEST(MessagesTest, TrailingBytesAreAnError) {
  std::vector<uint8_t> body = *EncodeMessageBody(Heartbeat{1, 2});
  body.push_back(0);
  Result<Message> m = DecodeMessageBody(MessageType::kHeartbeat, body);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("1 trailing bytes"), std::string::npos) << m.status();
}

TEST(MessagesTest, DuplicateMetricKeyIsAnError) {
  // EvaluateResult: round, version, num_examples, loss, accuracy, metrics{"a":1, "a":2}.
  std::vector<uint8_t> body;
  for (int i = 0; i < 5; ++i) Append(body, U64(0));
  Append(body, U64(2));
  for (int i = 0; i < 2; ++i) {
    Append(body, U64(1));
    body.push_back('a');
    Append(body, U64(0));
  }
  Result<Message> m = DecodeMessageBody(MessageType::kEvaluateResult, body);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("metrics: duplicate key"), std::string::npos) << m.status();
}

// An encoded model payload: fingerprint, encoding, then the encoded bytes in place of the floats
// (and nothing of the other form).
TEST(MessagesTest, EncodedModelPayloadRoundTripsAndCarriesOnlyItsBytes) {
  EvaluateTask t;
  t.model.layout_fingerprint = 7;
  t.model.encoding = "q8";
  t.model.encoded = SharedBytes({10, 20, 30, 40, 50});
  std::vector<uint8_t> body = *EncodeMessageBody(t);
  // The body ends with: fingerprint, encoding "q8" (tag + 2), bytes (tag + 5).
  ASSERT_GE(body.size(), 8u + 10u + 13u);
  std::vector<uint8_t> tail(body.end() - 13, body.end());
  EXPECT_EQ(tail, (std::vector<uint8_t>{5, 0, 0, 0, 0, 0, 0, 0, 10, 20, 30, 40, 50}));
  EXPECT_EQ(t.model.data_bytes(), 5u);
  Result<Message> back = DecodeMessageBody(MessageType::kEvaluateTask, body);
  ASSERT_TRUE(back.ok()) << back.status();
  const ModelPayload& m = std::get<EvaluateTask>(*back).model;
  EXPECT_EQ(m, t.model);
  EXPECT_TRUE(m.is_encoded());
  EXPECT_TRUE(m.values.empty());

  // Sending both forms at once is refused when encoding.
  t.model.values = {1.0f};
  Result<std::vector<uint8_t>> both = EncodeMessageBody(t);
  ASSERT_FALSE(both.ok());
  EXPECT_NE(both.status().message().find("both raw values and encoded bytes"), std::string::npos)
      << both.status();
}

// An encoded payload whose byte count claims more than arrived (or more than the cap) is refused
// from the size tag, before anything is allocated; a truncated one likewise.
TEST(MessagesTest, EncodedPayloadSizeTagIsCheckedBeforeAllocating) {
  TaskAssignment t;
  t.model.layout_fingerprint = 7;
  t.model.encoding = "q8";
  t.model.encoded = SharedBytes(std::vector<uint8_t>(100, 0x5a));
  std::vector<uint8_t> body = *EncodeMessageBody(t);
  const size_t tag_at = body.size() - 100 - 8;
  uint64_t count = 0;
  std::memcpy(&count, body.data() + tag_at, 8);
  ASSERT_EQ(count, 100u);
  for (uint64_t bad : {uint64_t{101}, uint64_t{1} << 40, kMaxPayloadBytes + 1,
                       std::numeric_limits<uint64_t>::max()}) {
    std::vector<uint8_t> b = body;
    std::memcpy(b.data() + tag_at, &bad, 8);
    Result<Message> m = DecodeMessageBody(MessageType::kTaskAssignment, b);
    ASSERT_FALSE(m.ok()) << bad;
    EXPECT_EQ(ProtocolErrorCodeOf(m.status()), ErrorCode::kMalformedMessage);
    EXPECT_NE(m.status().message().find("model.encoded: size " + std::to_string(bad)),
              std::string::npos)
        << m.status();
  }
  // Over the cap says so even though the count alone is checked.
  std::vector<uint8_t> b = body;
  const uint64_t over = kMaxPayloadBytes + 1;
  std::memcpy(b.data() + tag_at, &over, 8);
  EXPECT_NE(DecodeMessageBody(MessageType::kTaskAssignment, b)
                .status()
                .message()
                .find("exceeds the cap of " + std::to_string(kMaxPayloadBytes)),
            std::string::npos);
  // Truncated anywhere in the encoded bytes.
  for (size_t cut : {size_t{1}, size_t{50}, size_t{100}}) {
    Result<Message> m = DecodeMessageBody(MessageType::kTaskAssignment,
                                          std::span<const uint8_t>(body.data(), body.size() - cut));
    ASSERT_FALSE(m.ok()) << cut;
    EXPECT_NE(m.status().message().find("model.encoded"), std::string::npos) << m.status();
  }
}

// SCAFFOLD's control delta (protocol version 4) is checked like any float list: a count past the
// bytes that arrived is refused from its size tag, naming the field, before anything is
// allocated.
TEST(MessagesTest, ControlDeltaSizeTagIsCheckedBeforeAllocating) {
  UpdateSubmission u;
  u.round = 1;
  u.control_delta = std::vector<float>(10, 0.5f);
  u.update = {"dense", 7, 1, {1, 2, 3, 4}};
  std::vector<uint8_t> body = *EncodeMessageBody(u);
  // round, task_id, model_version, num_examples (4 x 8), an empty metrics map (8): then the count.
  const size_t tag_at = 40;
  uint64_t count = 0;
  std::memcpy(&count, body.data() + tag_at, 8);
  ASSERT_EQ(count, 10u);
  for (uint64_t bad : {uint64_t{1} << 40, std::numeric_limits<uint64_t>::max()}) {
    std::vector<uint8_t> b = body;
    std::memcpy(b.data() + tag_at, &bad, 8);
    Result<Message> m = DecodeMessageBody(MessageType::kUpdateSubmission, b);
    ASSERT_FALSE(m.ok()) << bad;
    EXPECT_EQ(ProtocolErrorCodeOf(m.status()), ErrorCode::kMalformedMessage);
    EXPECT_NE(m.status().message().find("update.control_delta: size " + std::to_string(bad)),
              std::string::npos)
        << m.status();
  }
}

TEST(MessagesTest, FrozenPartCountsAreCheckedBeforeAllocating) {
  EvaluateTask e{1, 1, 32, 0, 100, {{0, 2}, 9, {1.0f, 2.0f, 3.0f}}, {5, {1.0f}}};
  std::vector<uint8_t> body = *EncodeMessageBody(e);
  // round, model_version (2 x 8), batch_size (4), max_examples, deadline_ms (2 x 8): then the
  // federated tensors' count, their 2 x 4 bytes, the hash (8) and the values' count.
  const size_t federated_at = 36, values_at = federated_at + 8 + 8 + 8;
  uint64_t count = 0;
  std::memcpy(&count, body.data() + federated_at, 8);
  ASSERT_EQ(count, 2u);
  std::memcpy(&count, body.data() + values_at, 8);
  ASSERT_EQ(count, 3u);
  for (auto [at, field] : {std::pair<size_t, const char*>{federated_at, "frozen.federated"},
                           std::pair<size_t, const char*>{values_at, "frozen.values"}}) {
    for (uint64_t bad : {uint64_t{1} << 40, std::numeric_limits<uint64_t>::max()}) {
      std::vector<uint8_t> b = body;
      std::memcpy(b.data() + at, &bad, 8);
      Result<Message> m = DecodeMessageBody(MessageType::kEvaluateTask, b);
      ASSERT_FALSE(m.ok()) << field << " " << bad;
      EXPECT_EQ(ProtocolErrorCodeOf(m.status()), ErrorCode::kMalformedMessage);
      EXPECT_NE(m.status().message().find(std::string(field) + ": size " + std::to_string(bad)),
                std::string::npos)
          << m.status();
    }
  }
  Result<Message> back = DecodeMessageBody(MessageType::kEvaluateTask, body);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(std::get<EvaluateTask>(*back), e);
}

TEST(MessagesTest, LargeFloatPayloadRoundTripsBitExact) {
  UpdateSubmission u;
  u.update.num_floats = 1 << 20;
  std::vector<uint8_t> data(u.update.num_floats * 4);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i * 31);
  u.update.bytes = std::move(data);
  Result<std::vector<uint8_t>> body = EncodeMessageBody(u);
  ASSERT_TRUE(body.ok());
  EXPECT_GT(body->size(), size_t{4} << 20);
  Result<Message> back = DecodeMessageBody(MessageType::kUpdateSubmission, *body);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(std::get<UpdateSubmission>(*back), u);
}

// Secure aggregation's lists and keys are capped like the rest: a public key of 33 bytes, or a
// roster that claims more entries than its bytes could hold, fails before anything is allocated.
TEST(MessagesTest, SecAggKeysAndListsAreCapped) {
  const SecAggKeysMsg keys{1,  "edge-1", std::vector<uint8_t>(32, 1), std::vector<uint8_t>(32, 2),
                           "", {}};
  std::vector<uint8_t> body_keys = *EncodeMessageBody(keys);
  ASSERT_EQ(body_keys[8 + 8 + 6], 32);  // after round and "edge-1": enc_public's size tag
  body_keys[8 + 8 + 6] = 33;
  body_keys.insert(body_keys.begin() + 8 + 8 + 6 + 8, 0);
  Result<Message> long_key = DecodeMessageBody(MessageType::kSecAggKeys, body_keys);
  ASSERT_FALSE(long_key.ok());
  EXPECT_NE(long_key.status().message().find("secagg.enc_public"), std::string::npos)
      << long_key.status();
  // round, then a roster count of 2^20 with nothing after it.
  std::vector<uint8_t> body(16, 0);
  body[8 + 2] = 0x10;
  Result<Message> roster = DecodeMessageBody(MessageType::kSecAggRoster, body);
  ASSERT_FALSE(roster.ok());
  EXPECT_NE(roster.status().message().find("secagg.roster"), std::string::npos) << roster.status();
  // The masked input is a bulk message (it may use max_message_bytes); keys are control messages.
  ProtocolLimits limits;
  EXPECT_EQ(limits.CapFor(MessageType::kSecAggMaskedInput), limits.max_message_bytes);
  EXPECT_EQ(limits.CapFor(MessageType::kSecAggRoster), limits.max_message_bytes);
  EXPECT_EQ(limits.CapFor(MessageType::kSecAggKeys), limits.max_control_message_bytes);
  EXPECT_EQ(limits.CapFor(MessageType::kSecAggUnmaskResponse), limits.max_control_message_bytes);
}

// WireBytes computes each secure aggregation body's size from its fields: it equals the encoding.
TEST(MessagesTest, SecAggWireBytesEqualTheEncodedSize) {
  size_t checked = 0;
  for (const Message& m : SampleMessages()) {
    const uint64_t encoded = EncodeMessageBody(m)->size();
    std::visit(
        [&](const auto& msg) {
          if constexpr (requires { WireBytes(msg); }) {
            EXPECT_EQ(WireBytes(msg), encoded) << MessageTypeName(TypeOf(m));
            ++checked;
          }
        },
        m);
  }
  EXPECT_EQ(checked, 8u);
}

TEST(ProtocolErrorTest, CodeSurvivesTheStatusMessage) {
  Status s = ProtocolError(ErrorCode::kFrameTooLarge, "too big");
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(s.message(), "FRAME_TOO_LARGE: too big");
  EXPECT_EQ(ProtocolErrorCodeOf(s), ErrorCode::kFrameTooLarge);
  EXPECT_EQ(ProtocolErrorCodeOf(s.WithContext("reading")), ErrorCode::kInternal);
  EXPECT_EQ(ProtocolErrorCodeOf(Status::IoError("x")), ErrorCode::kInternal);
  EXPECT_EQ(ErrorCodeName(999), "UNKNOWN_ERROR_999");
  EXPECT_EQ(ErrorCodeName(ErrorCode::kSuperseded), "SUPERSEDED");
  EXPECT_EQ(ProtocolError(ErrorCode::kSuperseded, "x").code(), StatusCode::kFailedPrecondition);
}

// An Error's text names its code once: a message that is a ProtocolError's text already starts
// with it ("INTERNAL: INTERNAL: ..." was logged).
TEST(ProtocolErrorTest, DescribeErrorNamesTheCodeOnce) {
  const uint32_t internal = static_cast<uint32_t>(ErrorCode::kInternal);
  EXPECT_EQ(DescribeError(internal, "INTERNAL: fit failed"), "INTERNAL: fit failed");
  EXPECT_EQ(DescribeError(internal, "fit failed"), "INTERNAL: fit failed");
  EXPECT_EQ(DescribeError(internal, "INTERNALS: x"), "INTERNAL: INTERNALS: x");
  EXPECT_EQ(DescribeError(internal, ""), "INTERNAL: ");
  EXPECT_EQ(DescribeError(999, "odd"), "UNKNOWN_ERROR_999: odd");
}

}  // namespace
}  // namespace tributary
