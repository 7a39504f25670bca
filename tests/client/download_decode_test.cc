// TaskExecutor with a compressed download (ModelPayload::encoding = "q8"): the model is validated,
// decoded into the trainer's layout and trained from; the delta is against the decoded model; a
// malformed or unsupported encoding is a PROTOCOL_VIOLATION naming the problem.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>

#include "client/task_executor.h"
#include "compression/codec.h"
#include "compression/update_sink.h"
#include "protocol/wire.h"
#include "tests/client/fake_trainer.h"

namespace tributary {
namespace {

using testing::FakeTrainer;

const std::vector<float> kGlobal = {0.5f, -1.25f, 2.0f, 0.1f, -0.3f, 0.7f, 1.9f, -2.0f, 0.05f};

std::vector<uint8_t> Q8(const std::vector<float>& x) { return *(*MakeCodec("q8"))->Encode(x); }

std::vector<float> Decode(const std::string& spec, std::span<const uint8_t> bytes) {
  auto codec = *MakeCodec(spec);
  EXPECT_TRUE(codec->Validate(bytes, 9).ok());
  std::vector<float> out(9, 0.0f);
  BufferSink sink(out);
  codec->DecodeInto(bytes, sink, 1.0f);
  return out;
}

TaskAssignment Task(std::vector<uint8_t> encoded, std::string encoding = "q8") {
  TaskAssignment t;
  t.round = 3;
  t.model_version = 2;
  t.fit.lr = 0.1f;
  t.codec.spec = "dense";
  t.model.layout_fingerprint = FakeTrainer::Layout().fingerprint();
  t.model.encoding = std::move(encoding);
  t.model.encoded = SharedBytes(std::move(encoded));
  return t;
}

TEST(DownloadDecodeTest, TrainsFromTheDecodedModelAndSendsTheDeltaAgainstIt) {
  const std::vector<uint8_t> bytes = Q8(kGlobal);
  ASSERT_EQ(bytes.size(), 9u + 4u);  // 9 one-byte codes + one float scale
  const std::vector<float> decoded = Decode("q8", bytes);
  TaskExecutor exec(std::make_shared<FakeTrainer>());
  Result<UpdateSubmission> u = exec.Fit(Task(bytes));
  ASSERT_TRUE(u.ok()) << u.status();
  // The fake trainer adds 0.1 * (i + 1) to the model it was given (the decoded one), so the delta
  // is exactly that, with no quantization error in it.
  const std::vector<float> delta = Decode("dense", u->update.bytes.span());
  for (size_t i = 0; i < 9; ++i) {
    const float trained = decoded[i] + 0.1f * static_cast<float>(i + 1);
    EXPECT_FLOAT_EQ(delta[i], trained - decoded[i]) << i;
    EXPECT_NEAR(delta[i], 0.1f * static_cast<float>(i + 1), 1e-6) << i;
    // The decoded model is within one q8 step (2 * max|x| / 255) of the coordinator's.
    EXPECT_NEAR(decoded[i], kGlobal[i], 2 * 2.0 / 255) << i;
  }

  // Evaluate decodes the same way: the fake's loss is the sum of the weights it got.
  EvaluateTask e;
  e.model = Task(bytes).model;
  Result<EvaluateResult> r = exec.Evaluate(e);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_NEAR(r->loss, std::accumulate(decoded.begin(), decoded.end(), 0.0), 1e-5);
}

void ExpectViolation(const TaskAssignment& t, const std::string& needle) {
  TaskExecutor exec(std::make_shared<FakeTrainer>());
  Result<UpdateSubmission> u = exec.Fit(t);
  ASSERT_FALSE(u.ok()) << needle;
  EXPECT_EQ(ProtocolErrorCodeOf(u.status()), ErrorCode::kProtocolViolation) << u.status();
  EXPECT_NE(u.status().message().find(needle), std::string::npos) << u.status();
}

TEST(DownloadDecodeTest, AnyDownloadCodecIsDecodedNotOnlyQ8) {
  for (const char* spec : {"q8+zstd", "zstd"}) {
    const std::vector<uint8_t> bytes = *(*MakeCodec(spec))->Encode(kGlobal);
    const std::vector<float> decoded = Decode(spec, bytes);
    TaskExecutor exec(std::make_shared<FakeTrainer>());
    Result<UpdateSubmission> u = exec.Fit(Task(bytes, spec));
    ASSERT_TRUE(u.ok()) << spec << ": " << u.status();
    const std::vector<float> delta = Decode("dense", u->update.bytes.span());
    for (size_t i = 0; i < 9; ++i)
      EXPECT_NEAR(delta[i], 0.1f * static_cast<float>(i + 1), 1e-6) << spec << " " << i;
    if (std::string(spec) == "zstd") {
      EXPECT_EQ(decoded, kGlobal) << "zstd alone is lossless";
    }
  }
}

// A split-learning task (protocol version 7) needs a device part's trainer and the server's
// gradients: this executor refuses it by name rather than train the whole model.
TEST(DownloadDecodeTest, ASplitLearningTaskIsRefusedByName) {
  TaskAssignment t = Task(Q8(kGlobal));
  t.split_cut = 3;
  t.split_codec.spec = "dense";
  ExpectViolation(t,
                  "task for round 3: a split-learning task (cut before layer 3); this client "
                  "trains whole models");
}

TEST(DownloadDecodeTest, MalformedEncodedModelsAreProtocolViolations) {
  std::vector<uint8_t> bytes = Q8(kGlobal);
  // Too short and too long for this client's 9 floats.
  ExpectViolation(Task(std::vector<uint8_t>(bytes.begin(), bytes.end() - 1)),
                  "the q8-encoded model (12 bytes) is not a valid encoding of this client's 9 "
                  "floats");
  std::vector<uint8_t> longer = bytes;
  longer.push_back(0);
  ExpectViolation(Task(longer), "(14 bytes) is not a valid encoding");
  // A non-finite or negative scale (the first 4 bytes).
  for (float scale :
       {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(), -1.0f}) {
    std::vector<uint8_t> bad = bytes;
    std::memcpy(bad.data(), &scale, 4);
    ExpectViolation(Task(bad), "is not a valid encoding");
  }
  // An encoding that is not a download codec, and a layout mismatch.
  ExpectViolation(Task(bytes, "topk(0.5)"), "encoding 'topk(0.5)' is not a download codec");
  TaskAssignment other = Task(bytes);
  other.model.layout_fingerprint ^= 1;
  ExpectViolation(other, "layout fingerprint");
}

}  // namespace
}  // namespace tributary
