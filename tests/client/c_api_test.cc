// The C API: a client written in C (c_api_client.c) against a fake coordinator over mutual TLS.
#include "tributary/c_api.h"

#include <gtest/gtest.h>

#include <cstring>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "compression/codec.h"
#include "compression/dense_codec.h"
#include "core/log.h"
#include "tests/client/c_api_client.h"
#include "tests/client/tls_fixture.h"
#include "tributary/model_weights.h"

namespace tributary {
namespace {

using namespace tributary::testing;
using namespace std::chrono_literals;

ModelWeights LinearModel() {
  ModelWeights g = *ModelWeights::Create({{"linear.weight", {2, 2}}, {"linear.bias", {2}}});
  for (size_t i = 0; i < g.size(); ++i) g.data()[i] = 0.5f * static_cast<float>(i) - 1.0f;
  return g;
}

ModelPayload Payload(const ModelWeights& g) {
  return ModelPayload{g.fingerprint(), std::vector<float>(g.data().begin(), g.data().end())};
}

TEST(CApiTest, ACClientTrainsEvaluatesAndFinishes) {
  TlsCoordinatorFixture fx;
  const auto f = fx.ClientFiles("c-edge");
  trib_c_outcome outcome;
  auto run = std::async(std::launch::async, [&] {
    return trib_c_run_client(fx.address().c_str(), f.ca.c_str(), f.cert.c_str(), f.key.c_str(),
                             /*fail_evaluate=*/1, &outcome);
  });
  auto session = fx.coordinator().WaitSession(0);
  ASSERT_TRUE(session);
  ASSERT_TRUE(session->hello());
  EXPECT_EQ(session->hello()->capabilities.num_examples, 34u);

  const ModelWeights g = LinearModel();
  TaskAssignment task;
  task.round = 1;
  task.fit.epochs = 2;
  task.fit.lr = 0.5f;
  task.codec.spec = "dense";
  task.model = Payload(g);
  session->Send(task);
  std::optional<UpdateSubmission> up = session->Next<UpdateSubmission>();
  ASSERT_TRUE(up);
  EXPECT_EQ(up->num_examples, 34u);
  EXPECT_DOUBLE_EQ(up->metrics.at("train_loss"), 0.125);
  EXPECT_DOUBLE_EQ(up->metrics.at("train_accuracy"), 0.875);
  std::vector<float> delta(up->update.num_floats);
  ASSERT_EQ(delta.size(), 6u);
  auto codec = MakeCodec("dense");
  ASSERT_TRUE((*codec)->Validate(up->update.bytes, delta.size()).ok());
  BufferSink sink(delta);
  (*codec)->DecodeInto(up->update.bytes, sink, 1.0f);
  for (size_t i = 0; i < 6; ++i) {
    const float gi = g.data()[i];
    EXPECT_EQ(delta[i], (gi + 1.0f * 0.5f * static_cast<float>(i + 1)) - gi) << i;
  }

  // A failing callback becomes a TaskFailed carrying its message; the client carries on.
  EvaluateTask eval;
  eval.round = 1;
  eval.model = Payload(g);
  session->Send(eval);
  std::optional<TaskFailed> e = session->Next<TaskFailed>();
  ASSERT_TRUE(e);
  EXPECT_TRUE(e->evaluate());
  EXPECT_EQ(e->round, 1u);
  EXPECT_NE(e->reason.find("no evaluation data today"), std::string::npos) << e->reason;
  EXPECT_NE(e->reason.find("returned 3"), std::string::npos) << e->reason;

  session->Send(Goodbye{"done"});
  ASSERT_EQ(run.wait_for(20s), std::future_status::ready);
  EXPECT_EQ(run.get(), TRIBUTARY_OK) << outcome.error;
  EXPECT_STREQ(outcome.error, "");
  EXPECT_STREQ(outcome.client_id, "c-edge");
  EXPECT_EQ(outcome.id_length, 6u);
  EXPECT_EQ(outcome.fit_calls, 1);
}

TEST(CApiTest, ACertificateFromAnotherCaEndsTheRunWithPermissionDeniedAndTheReason) {
  TlsCoordinatorFixture fx;
  Result<PemPair> rogue_ca = MakeCaCertificate("Rogue CA");
  ASSERT_TRUE(rogue_ca.ok());
  const auto f = fx.ClientFiles("c-rogue", &*rogue_ca);
  const std::string address = fx.address();
  // The client retries forever (max_attempts 0) unless the refusal is final. A thread of its own,
  // so that a client that keeps retrying fails this test instead of hanging it.
  auto outcome = std::make_shared<trib_c_outcome>();
  std::promise<int> done;
  std::future<int> rc = done.get_future();
  std::thread([f, address, outcome, done = std::move(done)]() mutable {
    done.set_value(trib_c_run_client(address.c_str(), f.ca.c_str(), f.cert.c_str(), f.key.c_str(),
                                     /*fail_evaluate=*/0, outcome.get()));
  }).detach();
  ASSERT_EQ(rc.wait_for(10s), std::future_status::ready) << "the C client is still retrying";
  EXPECT_EQ(rc.get(), TRIBUTARY_PERMISSION_DENIED) << outcome->error;
  EXPECT_NE(std::string(outcome->error).find("tlsv1 alert unknown ca"), std::string::npos)
      << outcome->error;
  EXPECT_EQ(outcome->fit_calls, 0);
  EXPECT_EQ(fx.coordinator().session_count(), 0u);
}

TEST(CApiTest, TheLogCallbackGetsTheClientsLinesWithItsUserData) {
  TlsCoordinatorFixture fx;
  const auto f = fx.ClientFiles("c-log");
  trib_c_log log;
  trib_c_outcome outcome;
  auto run = std::async(std::launch::async, [&] {
    return trib_c_run_logged_client(fx.address().c_str(), f.ca.c_str(), f.cert.c_str(),
                                    f.key.c_str(), TRIBUTARY_LOG_INFO, &log, &outcome);
  });
  auto session = fx.coordinator().WaitSession(0);
  ASSERT_TRUE(session);
  ASSERT_TRUE(session->WaitHello());
  session->Send(Goodbye{"done"});
  ASSERT_EQ(run.wait_for(20s), std::future_status::ready);
  ASSERT_EQ(run.get(), TRIBUTARY_OK) << outcome.error;

  // At info, the two lines of a session that ends at once; the debug ones ("connecting to") are
  // not asked for. The lines landed in `log`, so the callback got the user_data it was given.
  ASSERT_EQ(log.count, 2);
  EXPECT_EQ(log.levels[0], TRIBUTARY_LOG_INFO);
  EXPECT_EQ(std::string(log.lines[0]),
            "joined " + fx.address() +
                " as 'c-log' (coordinator fake-coordinator, heartbeat every 0 ms)");
  EXPECT_EQ(log.levels[1], TRIBUTARY_LOG_INFO);
  EXPECT_STREQ(log.lines[1], "the coordinator ended the run: done");
}

struct Recorded {
  std::vector<std::pair<int, std::string>> lines;
};

void Record(void* user_data, int level, const char* message) {
  static_cast<Recorded*>(user_data)->lines.emplace_back(level, message);
}

TEST(CApiTest, SetLogHandlerFiltersByLevelAndCanBeRemoved) {
  Recorded r;
  ASSERT_EQ(tributary_set_log_handler(TRIBUTARY_LOG_WARN, Record, &r), TRIBUTARY_OK);
  Log().info("below the level");
  Log().warn("tensor {} is late", 3);
  Log().error("and this failed");
  // A bad level is refused and changes nothing.
  EXPECT_EQ(tributary_set_log_handler(9, Record, nullptr), TRIBUTARY_INVALID_ARGUMENT);
  EXPECT_EQ(tributary_set_log_handler(-1, Record, nullptr), TRIBUTARY_INVALID_ARGUMENT);
  Log().warn("still here");
  ASSERT_EQ(tributary_set_log_handler(TRIBUTARY_LOG_OFF, nullptr, nullptr), TRIBUTARY_OK);
  Log().error("nobody hears this");
  const std::vector<std::pair<int, std::string>> expected = {
      {TRIBUTARY_LOG_WARN, "tensor 3 is late"},
      {TRIBUTARY_LOG_ERROR, "and this failed"},
      {TRIBUTARY_LOG_WARN, "still here"},
  };
  EXPECT_EQ(r.lines, expected);
  // A level of OFF with a callback is as silent as no callback.
  ASSERT_EQ(tributary_set_log_handler(TRIBUTARY_LOG_OFF, Record, &r), TRIBUTARY_OK);
  Log().error("nor this");
  EXPECT_EQ(r.lines.size(), 3u);
}

TEST(CApiTest, CreateFailuresExplainThemselves) {
  const std::pair<int, const char*> cases[] = {
      {0, "fit callback is required"},
      {1, "tensors: the model layout is required"},
      {2, "linear.weight"},
      {3, "coordinator"},
      {4, "/nonexistent/ca.crt"},
      {5, "log_level: 9 is not a tributary_log_level"},
      {6, "predict_output_size: must be >= 1"},
      {7, "fit_split: the fit_split callback is required when split is set"},
  };
  for (const auto& [which, expected] : cases) {
    char error[512];
    ASSERT_EQ(trib_c_create_error(which, error, sizeof(error)), 1) << which;
    EXPECT_NE(std::string(error).find(expected), std::string::npos) << which << ": " << error;
  }
  // A tiny buffer gets a truncated, NUL-terminated message.
  char small[8];
  ASSERT_EQ(trib_c_create_error(0, small, sizeof(small)), 1);
  EXPECT_EQ(std::string(small).size(), 7u);
}

// Two samples for the C app's linear predict callback, and its outputs with LinearModel()
// (W = [[-1, -0.5], [0, 0.5]], b = [1, 1.5]), worked out by hand.
const std::vector<float> kInputs = {2.0f, 4.0f, -1.0f, 1.0f};
const std::vector<float> kOutputs = {-3.0f, 3.5f, 1.5f, 2.0f};

TEST(CApiTest, PredictRunsTheCallbackOnTheLatestGlobalModel) {
  TlsCoordinatorFixture fx;
  const auto f = fx.ClientFiles("c-predict");
  const std::string state = fx.dir().file("c-state");
  char error[512];
  tributary_client* c = trib_c_create_predict_client(fx.address().c_str(), f.ca.c_str(),
                                                     f.cert.c_str(), f.key.c_str(), state.c_str(),
                                                     /*with_predict=*/1, error, sizeof(error));
  ASSERT_NE(c, nullptr) << error;
  std::vector<float> out(5, 99.0f);
  EXPECT_EQ(trib_c_predict(c, kInputs.data(), 4, 2, out.data(), 5, error, sizeof(error)),
            TRIBUTARY_FAILED_PRECONDITION);
  EXPECT_NE(std::string(error).find("no global model yet"), std::string::npos) << error;
  uint64_t round = 77, version = 77;
  EXPECT_EQ(tributary_client_global_model(c, &round, &version), TRIBUTARY_FAILED_PRECONDITION);
  EXPECT_EQ(round, 77u);

  ASSERT_EQ(tributary_client_start(c), TRIBUTARY_OK);
  auto session = fx.coordinator().WaitSession(0);
  ASSERT_TRUE(session);
  TaskAssignment task;
  task.round = 1;
  task.model_version = 4;
  task.fit.lr = 0.5f;
  task.codec.spec = "dense";
  task.model = Payload(LinearModel());
  session->Send(task);
  ASSERT_TRUE(session->Next<UpdateSubmission>());

  // The model the coordinator sent (not the trained one); only the outputs asked for are written.
  ASSERT_EQ(trib_c_predict(c, kInputs.data(), 4, 2, out.data(), 5, error, sizeof(error)),
            TRIBUTARY_OK)
      << error;
  EXPECT_STREQ(error, "");
  EXPECT_EQ(std::vector<float>(out.begin(), out.begin() + 4), kOutputs);
  EXPECT_EQ(out[4], 99.0f);
  ASSERT_EQ(tributary_client_global_model(c, &round, &version), TRIBUTARY_OK);
  EXPECT_EQ(round, 1u);
  EXPECT_EQ(version, 4u);

  // Every length is checked, and the message names the sizes.
  auto predict = [&](tributary_client* h, const float* in, size_t in_len, long long count, float* o,
                     size_t o_len) {
    const int rc = trib_c_predict(h, in, in_len, count, o, o_len, error, sizeof(error));
    return std::make_pair(rc, std::string(error));
  };
  const std::pair<std::pair<int, std::string>, const char*> bad[] = {
      {predict(c, kInputs.data(), 4, 2, out.data(), 3),
       "outputs_len 3 is too small: 2 samples of predict_output_size 2 need 4 floats"},
      {predict(c, kInputs.data(), 4, 2, nullptr, 4), "outputs_len 4 (outputs is NULL)"},
      {predict(c, kInputs.data(), 3, 2, out.data(), 5), "inputs_len 3 for count 2"},
      {predict(c, kInputs.data(), 0, 2, out.data(), 5), "inputs_len 0 for count 2"},
      {predict(c, nullptr, 4, 2, out.data(), 5), "inputs_len 4 (inputs is NULL)"},
      {predict(c, kInputs.data(), 4, 0, out.data(), 5), "count must be >= 1, got 0"},
      {predict(nullptr, kInputs.data(), 4, 2, out.data(), 5), "client is NULL"},
  };
  for (const auto& [result, expected] : bad) {
    EXPECT_EQ(result.first, TRIBUTARY_INVALID_ARGUMENT) << expected;
    EXPECT_NE(result.second.find(expected), std::string::npos) << result.second;
  }

  // A failing callback: INTERNAL with its reason.
  ASSERT_EQ(trib_c_predict(c, kInputs.data(), 4, 1, out.data(), 5, error, sizeof(error)),
            TRIBUTARY_INTERNAL);
  EXPECT_NE(std::string(error).find("the predict callback failed (returned 1)"), std::string::npos)
      << error;
  EXPECT_NE(std::string(error).find("2 inputs per sample"), std::string::npos) << error;

  tributary_client_stop(c);
  EXPECT_EQ(tributary_client_wait(c), TRIBUTARY_ABORTED);
  tributary_client_destroy(c);

  // Restarted on the same state dir, it predicts with the saved model before connecting.
  c = trib_c_create_predict_client(fx.address().c_str(), f.ca.c_str(), f.cert.c_str(),
                                   f.key.c_str(), state.c_str(), 1, error, sizeof(error));
  ASSERT_NE(c, nullptr) << error;
  std::fill(out.begin(), out.end(), 0.0f);
  ASSERT_EQ(trib_c_predict(c, kInputs.data(), 4, 2, out.data(), 4, error, sizeof(error)),
            TRIBUTARY_OK)
      << error;
  EXPECT_EQ(std::vector<float>(out.begin(), out.begin() + 4), kOutputs);
  tributary_client_destroy(c);
}

TEST(CApiTest, PredictWithoutACallbackIsUnimplemented) {
  TlsCoordinatorFixture fx;
  const auto f = fx.ClientFiles("c-nopredict");
  char error[512];
  tributary_client* c =
      trib_c_create_predict_client(fx.address().c_str(), f.ca.c_str(), f.cert.c_str(),
                                   f.key.c_str(), nullptr, 0, error, sizeof(error));
  ASSERT_NE(c, nullptr) << error;
  float out[4];
  EXPECT_EQ(trib_c_predict(c, kInputs.data(), 4, 2, out, 4, error, sizeof(error)),
            TRIBUTARY_UNIMPLEMENTED);
  EXPECT_NE(std::string(error).find("this client has no predict callback"), std::string::npos)
      << error;
  tributary_client_destroy(c);
}

// The floats of a dense-encoded cut tensor.
std::vector<float> DenseFloats(const EncodedUpdate& e) {
  std::vector<float> out(e.num_floats);
  if (e.bytes.size() == out.size() * sizeof(float))
    std::memcpy(out.data(), e.bytes.data(), e.bytes.size());
  return out;
}

TEST(CApiTest, ASplitClientTrainsItsDevicePartThroughTheServersGradients) {
  TlsCoordinatorFixture fx;
  const auto f = fx.ClientFiles("c-split");
  trib_c_split_probe probe;
  char error[512];
  tributary_client* c =
      trib_c_create_split_client(fx.address().c_str(), f.ca.c_str(), f.cert.c_str(), f.key.c_str(),
                                 &probe, error, sizeof(error));
  ASSERT_NE(c, nullptr) << error;
  ASSERT_EQ(tributary_client_start(c), TRIBUTARY_OK);
  auto session = fx.coordinator().WaitSession(0);
  ASSERT_TRUE(session);
  ASSERT_TRUE(session->WaitHello());
  EXPECT_EQ(session->hello()->capabilities.num_examples, 3u);

  const ModelWeights g = LinearModel();  // W = [[-1, -0.5], [0, 0.5]], b = [1, 1.5]
  TaskAssignment task;
  task.round = 1;
  task.fit.epochs = 1;
  task.fit.batch_size = 2;
  task.fit.lr = 0.5f;
  task.codec.spec = "dense";
  task.deadline_ms = 20000;
  task.model = Payload(g);
  task.split_cut = 1;
  task.split_codec.spec = "dense";
  session->Send(task);

  // Two batches, samples {0, 1} and {2}: the server (this test) checks each batch's activations
  // against W x + b, answers gradient 0.5 * activation - label, and steps a copy of the device
  // part the way the client must.
  std::vector<float> want(g.data().begin(), g.data().end());
  double loss_sum = 0.0;
  for (uint64_t batch = 0; batch < 2; ++batch) {
    std::optional<SplitActivations> a = session->Next<SplitActivations>();
    ASSERT_TRUE(a) << "batch " << batch;
    const size_t first = 2 * batch, count = batch == 0 ? 2 : 1;
    EXPECT_EQ(a->round, 1u);
    EXPECT_EQ(a->batch, batch);
    ASSERT_EQ(a->labels,
              std::vector<uint8_t>(trib_c_split_y + first, trib_c_split_y + first + count));
    ASSERT_EQ(a->activations.codec, "dense");
    const std::vector<float> act = DenseFloats(a->activations);
    ASSERT_EQ(act.size(), 2 * count);
    std::vector<float> grad(act.size());
    for (size_t s = 0; s < count; ++s) {
      const float* x = trib_c_split_x + 2 * (first + s);
      for (size_t j = 0; j < 2; ++j) {
        const float y = want[2 * j] * x[0] + want[2 * j + 1] * x[1] + want[4 + j];
        EXPECT_EQ(act[2 * s + j], y) << "batch " << batch << " sample " << s << " unit " << j;
        grad[2 * s + j] = 0.5f * act[2 * s + j] - static_cast<float>(a->labels[s]);
      }
    }
    const double batch_loss = 0.75 * static_cast<double>(batch + 1);
    loss_sum += batch_loss;
    session->Send(SplitGradient{
        1,
        batch,
        batch_loss,
        1,
        {"dense", a->activations.layout_fingerprint, grad.size(), *DenseCodec().Encode(grad)}});
    for (size_t j = 0; j < 2; ++j) {
      float gw0 = 0.0f, gw1 = 0.0f, gb = 0.0f;
      for (size_t s = 0; s < count; ++s) {
        const float* x = trib_c_split_x + 2 * (first + s);
        gw0 += grad[2 * s + j] * x[0];
        gw1 += grad[2 * s + j] * x[1];
        gb += grad[2 * s + j];
      }
      want[2 * j] -= 0.5f * gw0;
      want[2 * j + 1] -= 0.5f * gw1;
      want[4 + j] -= 0.5f * gb;
    }
  }
  std::optional<UpdateSubmission> up = session->Next<UpdateSubmission>();
  ASSERT_TRUE(up);
  EXPECT_EQ(up->num_examples, 3u);
  EXPECT_DOUBLE_EQ(up->metrics.at("train_loss"), loss_sum / 3);
  EXPECT_DOUBLE_EQ(up->metrics.at("train_accuracy"), 2.0 / 3);
  std::vector<float> delta(up->update.num_floats);
  ASSERT_EQ(delta.size(), 6u);
  auto codec = MakeCodec("dense");
  ASSERT_TRUE((*codec)->Validate(up->update.bytes, delta.size()).ok());
  BufferSink sink(delta);
  (*codec)->DecodeInto(up->update.bytes, sink, 1.0f);
  for (size_t i = 0; i < 6; ++i) EXPECT_EQ(delta[i], want[i] - g.data()[i]) << i;

  // The calls made with bad lengths were refused, naming what was wrong, and sent nothing (the
  // server saw batches 0 and 1 only).
  EXPECT_EQ(probe.fit_split_calls, 1);
  const char* refusals[] = {"count must be >= 1 with labels given, got count 0",
                            "activations_len 3 for count 2",
                            "gradient_len 3 is too small: the gradient has 4 values"};
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(probe.refused_status[i], TRIBUTARY_INVALID_ARGUMENT) << i;
    EXPECT_NE(std::string(probe.refused[i]).find(refusals[i]), std::string::npos)
        << probe.refused[i];
  }

  // A batch nobody answers fails at the task's deadline; the task ends with that reason.
  task.round = 2;
  task.deadline_ms = 300;
  session->Send(task);
  ASSERT_TRUE(session->Next<SplitActivations>());
  std::optional<TaskFailed> e = session->Next<TaskFailed>();
  ASSERT_TRUE(e);
  EXPECT_EQ(e->round, 2u);
  EXPECT_EQ(probe.fit_split_calls, 2);
  EXPECT_EQ(probe.failed_status, TRIBUTARY_DEADLINE_EXCEEDED) << probe.failed;
  EXPECT_NE(e->reason.find("DeadlineExceeded"), std::string::npos) << e->reason;

  // Past its call, the exchange refuses to be used.
  float act[2] = {1.0f, 2.0f}, grad[2];
  const uint8_t label = 0;
  EXPECT_EQ(tributary_split_exchange_batch(probe.kept, act, 2, &label, 1, grad, 2, nullptr, nullptr,
                                           error, sizeof(error)),
            TRIBUTARY_FAILED_PRECONDITION);
  EXPECT_NE(std::string(error).find("no longer valid"), std::string::npos) << error;
  EXPECT_EQ(tributary_split_exchange_batch(nullptr, act, 2, &label, 1, grad, 2, nullptr, nullptr,
                                           error, sizeof(error)),
            TRIBUTARY_INVALID_ARGUMENT);

  tributary_client_stop(c);
  EXPECT_EQ(tributary_client_wait(c), TRIBUTARY_ABORTED);
  tributary_client_destroy(c);
}

// The U-shaped split from C (tributary_split_exchange_front / _head): the batch goes up without
// labels, the server part's output comes down, the head's gradient goes up, the gradient at the
// cut comes down; this test plays the coordinator and checks each message.
TEST(CApiTest, AUShapedSplitClientKeepsItsLabelsAndExchangesTwiceABatch) {
  TlsCoordinatorFixture fx;
  const auto f = fx.ClientFiles("c-u");
  trib_c_u_probe probe;
  char error[512];
  tributary_client* c = trib_c_create_u_client(fx.address().c_str(), f.ca.c_str(), f.cert.c_str(),
                                               f.key.c_str(), &probe, error, sizeof(error));
  ASSERT_NE(c, nullptr) << error;
  ASSERT_EQ(tributary_client_start(c), TRIBUTARY_OK);
  auto session = fx.coordinator().WaitSession(0);
  ASSERT_TRUE(session);
  ASSERT_TRUE(session->WaitHello());
  const ModelWeights g = LinearModel();
  TaskAssignment task;
  task.round = 1;
  task.fit.epochs = 1;
  task.fit.batch_size = 3;
  task.fit.lr = 0.5f;
  task.codec.spec = "dense";
  task.deadline_ms = 20000;
  task.model = Payload(g);
  task.split_cut = 1;
  task.split_head = 2;
  task.split_codec.spec = "dense";
  session->Send(task);

  std::optional<SplitActivations> a = session->Next<SplitActivations>();
  ASSERT_TRUE(a);
  EXPECT_EQ(a->samples, 3u);
  EXPECT_TRUE(a->labels.empty());  // the labels stay on the device
  EXPECT_EQ(DenseFloats(a->activations), std::vector<float>(trib_c_split_x, trib_c_split_x + 6));
  const uint64_t fp = a->activations.layout_fingerprint;
  const std::vector<float> middle = {0.5f, 1.5f, 2.5f};
  session->Send(SplitActivations{1, 0, 3, {}, {"dense", fp, 3, *DenseCodec().Encode(middle)}});
  std::optional<SplitGradient> up = session->Next<SplitGradient>();
  ASSERT_TRUE(up);
  EXPECT_EQ(up->batch, 0u);
  EXPECT_EQ(up->loss_sum, 1.5);
  EXPECT_EQ(up->correct, 2u);
  EXPECT_EQ(DenseFloats(up->gradient), (std::vector<float>{0.5f, 0.5f, 1.5f}));  // middle - label
  const std::vector<float> at_cut = {0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f};
  session->Send(SplitGradient{1, 0, 1.5, 2, {"dense", fp, 6, *DenseCodec().Encode(at_cut)}});
  std::optional<UpdateSubmission> update = session->Next<UpdateSubmission>();
  ASSERT_TRUE(update);
  EXPECT_EQ(probe.status, TRIBUTARY_OK) << probe.failed;
  EXPECT_EQ(std::vector<float>(probe.middle, probe.middle + 3), middle);
  EXPECT_EQ(std::vector<float>(probe.gradient, probe.gradient + 6), at_cut);
  std::vector<float> delta(update->update.num_floats);
  ASSERT_EQ(delta.size(), 6u);
  BufferSink sink(delta);
  (*MakeCodec("dense"))->DecodeInto(update->update.bytes, sink, 1.0f);
  for (size_t i = 0; i < 6; ++i)
    EXPECT_FLOAT_EQ(delta[i], (g.data()[i] + at_cut[i]) - g.data()[i]) << i;
  const char* refusals[] = {"activations must hold count >= 1 samples", "middle_len 4 for count 3",
                            "head_gradient is NULL",
                            "gradient_len 5 is too small: the gradient at the cut has 6 values"};
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(probe.refused_status[i], TRIBUTARY_INVALID_ARGUMENT) << i;
    EXPECT_NE(std::string(probe.refused[i]).find(refusals[i]), std::string::npos)
        << probe.refused[i];
  }
  tributary_client_stop(c);
  EXPECT_EQ(tributary_client_wait(c), TRIBUTARY_ABORTED);
  tributary_client_destroy(c);
}

TEST(CApiTest, NullHandlesAndStatusNames) {
  EXPECT_EQ(tributary_client_run(nullptr), TRIBUTARY_INVALID_ARGUMENT);
  EXPECT_EQ(tributary_client_wait(nullptr), TRIBUTARY_INVALID_ARGUMENT);
  tributary_client_stop(nullptr);
  tributary_client_destroy(nullptr);
  char id[4] = "xyz";
  EXPECT_EQ(tributary_client_id(nullptr, id, sizeof(id)), 0u);
  EXPECT_STREQ(id, "");
  EXPECT_STREQ(tributary_status_name(TRIBUTARY_OK), "OK");
  EXPECT_STREQ(tributary_status_name(TRIBUTARY_UNAVAILABLE), "Unavailable");
  EXPECT_STREQ(tributary_status_name(TRIBUTARY_INTERNAL), "Internal");
  EXPECT_STREQ(tributary_status_name(99), "Unknown");
  EXPECT_EQ(tributary_client_create(nullptr, nullptr, 0), nullptr);
  // The C enum mirrors StatusCode.
  EXPECT_EQ(static_cast<int>(StatusCode::kPermissionDenied), TRIBUTARY_PERMISSION_DENIED);
  EXPECT_EQ(static_cast<int>(StatusCode::kAborted), TRIBUTARY_ABORTED);
}

}  // namespace
}  // namespace tributary
