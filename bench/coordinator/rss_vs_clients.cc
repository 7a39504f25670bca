// Peak resident memory of the coordinator's round path as clients per round grow.
//
// Runs the production RoundEngine (FedAvg, dense codec) for the `mlp` model (784-200-200-10,
// 199,210 floats = 797 KB) with N simulated clients that all join, are all selected every round,
// and all answer; every `--eval_every` rounds all N also get an EvaluateTask. Messages take the
// real path minus the sockets:
//   engine outbox -> EncodeOutbound per client (what CoordinatorService::Flush -> Connection::Send
//   queues; all N stay queued until delivered, as when the network is slower than Flush) ->
//   frames -> MessageReader -> TaskExecutor (the client library, over a do-nothing Trainer: a
//   zero delta) -> EncodeOutbound -> frames -> MessageReader -> RoundEngine::OnUpdate (validated
//   and folded at once: streaming FedAvg).
// The simulated clients run one after another, so client-side memory stays O(model); what can
// grow with N is the coordinator's outbox and send queues. Prints one line:
//   clients=N rounds=R model_floats=F peak_rss_kib=K
// Peak RSS is getrusage(RUSAGE_SELF).ru_maxrss, so run each size in a fresh process
// (rss_vs_clients.sh does). Flat means the coordinator's memory is O(model), not
// O(model x clients).
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "aggregation/fedavg.h"
#include "client/task_executor.h"
#include "coordinator/round_engine.h"
#include "protocol/frame.h"
#include "protocol/message_reader.h"
#include "train/model_spec.h"

namespace tributary {
namespace {

// fit returns the global model unchanged; evaluate reports fixed numbers.
class NoOpTrainer final : public Trainer {
 public:
  explicit NoOpTrainer(ModelWeights initial) : initial_(std::move(initial)) {}
  Result<ModelWeights> get_parameters() override { return initial_; }
  Result<FitResult> fit(const ModelWeights& global, const FitConfig&) override {
    return FitResult{global, 100, {{"train_loss", 1.0}}};
  }
  Result<EvalResult> evaluate(const ModelWeights&, const EvalConfig&) override {
    return EvalResult{1.0, 0.5, 50, {}};
  }

 private:
  ModelWeights initial_;
};

long PeakRssKib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss;  // KiB on Linux
}

int Fail(const std::string& what) {
  std::fprintf(stderr, "rss_vs_clients: %s\n", what.c_str());
  return 1;
}

int Run(int64_t clients, int64_t rounds, int64_t eval_every, const std::string& model_name) {
  Result<ModelSpec> spec = ModelSpecByName(model_name);
  if (!spec.ok()) return Fail(spec.status().ToString());
  Result<ModelWeights> init = InitWeights(*spec, 1);
  if (!init.ok()) return Fail(init.status().ToString());
  const size_t model_floats = init->size();

  RoundConfig config;
  config.rounds = rounds;
  config.clients_per_round = clients;
  config.min_available = clients;
  config.min_completed = clients;
  config.round_timeout = std::chrono::hours(1);
  config.federated_eval_every = eval_every;
  int64_t closed = 0;
  RunEngine::Hooks hooks;
  hooks.on_round_complete = [&](const RoundSummary&, const ModelWeights&) { ++closed; };
  Result<std::unique_ptr<RoundEngine>> engine =
      RoundEngine::Create(config, std::make_unique<FedAvg>(), *init, 0, 0, std::move(hooks));
  if (!engine.ok()) return Fail(engine.status().ToString());
  // One executor serves every simulated client: client-side state is not what is measured.
  TaskExecutor executor(std::make_shared<NoOpTrainer>(*init));

  const TimePoint now{};
  for (int64_t i = 0; i < clients; ++i)
    (*engine)->OnJoined("client-" + std::to_string(i),
                        ClientCapabilities{"cpu", {"dense"}, 100, 0, {}}, now);

  const ProtocolLimits limits;
  uint64_t transfer_id = 1;
  MessageReader client_reader(limits), coordinator_reader(limits);
  // Delivers an encoded message frame by frame, as a connection's reader receives it.
  auto deliver = [](MessageReader& reader, const OutboundMessage& out) -> Result<Message> {
    std::vector<Message> got;
    for (size_t i = 0; i < out.frames.size(); ++i)
      TRIB_RETURN_IF_ERROR(reader.Feed(out.FrameBytes(i), &got));
    if (got.size() != 1) return Status::Internal("expected one message");
    return std::move(got[0]);
  };
  struct Queued {
    std::string client_id;
    std::shared_ptr<const OutboundMessage> message;
  };
  while (!(*engine)->finished()) {
    // Encode the whole outbox before delivering any of it, as Flush does.
    std::vector<Queued> queued;
    for (RoundEngine::Outgoing& out : (*engine)->TakeOutbox()) {
      Result<OutboundMessage> encoded = EncodeOutbound(out.message, limits, transfer_id++);
      if (!encoded.ok()) return Fail(encoded.status().ToString());
      queued.push_back(
          {out.client_id, std::make_shared<const OutboundMessage>(std::move(*encoded))});
    }
    if (queued.empty()) return Fail("the engine stalled with nothing to send");
    for (Queued& q : queued) {
      Result<Message> received = deliver(client_reader, *q.message);
      if (!received.ok()) return Fail(received.status().ToString());
      q.message.reset();  // sent: the connection drops its reference
      Message answer;
      if (const auto* task = std::get_if<TaskAssignment>(&*received)) {
        Result<UpdateSubmission> update = executor.Fit(*task);
        if (!update.ok()) return Fail(update.status().ToString());
        answer = std::move(*update);
      } else if (const auto* eval = std::get_if<EvaluateTask>(&*received)) {
        Result<EvaluateResult> result = executor.Evaluate(*eval);
        if (!result.ok()) return Fail(result.status().ToString());
        answer = std::move(*result);
      } else {
        return Fail("unexpected " + MessageTypeName(TypeOf(*received)));
      }
      received = Message();  // the client is done with the task
      Result<OutboundMessage> up = EncodeOutbound(answer, limits, transfer_id++);
      if (!up.ok()) return Fail(up.status().ToString());
      Result<Message> arrived = deliver(coordinator_reader, *up);
      if (!arrived.ok()) return Fail(arrived.status().ToString());
      if (const auto* u = std::get_if<UpdateSubmission>(&*arrived)) {
        Status s = (*engine)->OnUpdate(q.client_id, *u, now);
        if (!s.ok()) return Fail("update refused: " + s.ToString());
      } else {
        Status s =
            (*engine)->OnEvaluateResult(q.client_id, std::get<EvaluateResult>(*arrived), now);
        if (!s.ok()) return Fail("evaluation refused: " + s.ToString());
      }
    }
  }
  if (!(*engine)->failure().ok()) return Fail((*engine)->failure().ToString());
  if (closed != rounds) return Fail("closed " + std::to_string(closed) + " rounds");
  std::printf("clients=%lld rounds=%lld model_floats=%zu peak_rss_kib=%ld\n",
              static_cast<long long>(clients), static_cast<long long>(rounds), model_floats,
              PeakRssKib());
  return 0;
}

}  // namespace
}  // namespace tributary

int main(int argc, char** argv) {
  int64_t clients = 10, rounds = 3, eval_every = 1;
  std::string model = "mlp";
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const size_t eq = arg.find('=');
    const std::string key = arg.substr(0, eq);
    const std::string value = eq == std::string::npos ? "" : arg.substr(eq + 1);
    if (key == "--clients" && !value.empty()) {
      clients = std::atoll(value.c_str());
    } else if (key == "--rounds" && !value.empty()) {
      rounds = std::atoll(value.c_str());
    } else if (key == "--eval_every" && !value.empty()) {
      eval_every = std::atoll(value.c_str());
    } else if (key == "--model" && !value.empty()) {
      model = value;
    } else {
      std::fprintf(stderr,
                   "usage: rss_vs_clients [--clients=N] [--rounds=R] [--eval_every=K] "
                   "[--model=mlp]\n");
      return 2;
    }
  }
  if (clients < 1 || rounds < 1 || eval_every < 0) {
    std::fprintf(stderr,
                 "rss_vs_clients: --clients and --rounds must be >= 1, --eval_every >= 0\n");
    return 2;
  }
  return tributary::Run(clients, rounds, eval_every, model);
}
