#include "coordinator/run_events.h"

#include <cmath>
#include <limits>

namespace tributary {

using nlohmann::json;

namespace {

// A number that may have been written as null (JSON has no NaN: a diverged model's loss).
double Number(const json& j, const char* key) {
  const json& v = j.at(key);
  return v.is_null() ? std::numeric_limits<double>::quiet_NaN() : v.get<double>();
}

}  // namespace

// Field lists, written once for both directions.
void to_json(json& j, const RunStarted& e) {
  j = {{"model", e.model},
       {"initial_model", e.initial_model},
       {"tensors", e.tensors},
       {"strategy", e.strategy},
       {"codec", e.codec},
       {"download_codec", e.download_codec},
       {"rounds", e.rounds},
       {"clients_per_round", e.clients_per_round},
       {"parameters", e.parameters},
       {"rounds_done", e.rounds_done},
       {"model_version", e.model_version},
       {"model_hash", e.model_hash},
       {"resumed_from", e.resumed_from},
       {"skipped_checkpoints", e.skipped_checkpoints},
       {"run_uid", e.run_uid}};
  if (e.mode != "sync") j["mode"] = e.mode;
}
void from_json(const json& j, RunStarted& e) {
  j.at("model").get_to(e.model);
  e.initial_model = j.value("initial_model", std::string());  // absent in logs before 0.2
  e.tensors = j.value("tensors", uint64_t{0});
  j.at("strategy").get_to(e.strategy);
  j.at("codec").get_to(e.codec);
  j.at("download_codec").get_to(e.download_codec);
  j.at("rounds").get_to(e.rounds);
  j.at("clients_per_round").get_to(e.clients_per_round);
  j.at("parameters").get_to(e.parameters);
  j.at("rounds_done").get_to(e.rounds_done);
  j.at("model_version").get_to(e.model_version);
  j.at("model_hash").get_to(e.model_hash);
  j.at("resumed_from").get_to(e.resumed_from);
  e.skipped_checkpoints = j.value("skipped_checkpoints", std::vector<std::string>());
  e.run_uid = j.value("run_uid", std::string());  // absent in logs before run uids
  e.mode = j.value("mode", std::string("sync"));
}

void to_json(json& j, const RoundOpened& e) {
  j = {{"round", e.round},
       {"attempt", e.attempt},
       {"selected", e.selected},
       {"model_version", e.model_version}};
}
void from_json(const json& j, RoundOpened& e) {
  j.at("round").get_to(e.round);
  j.at("attempt").get_to(e.attempt);
  j.at("selected").get_to(e.selected);
  j.at("model_version").get_to(e.model_version);
}

void to_json(json& j, const UpdateAccepted& e) {
  j = {{"round", e.round},
       {"client", e.client},
       {"num_examples", e.num_examples},
       {"bytes", e.bytes}};
  if (e.staleness) {
    j["trained_on"] = e.staleness->trained_on;
    j["staleness"] = e.staleness->staleness;
    j["staleness_weight"] = e.staleness->weight;
  }
  if (!e.via.empty()) j["via"] = e.via;
}
void from_json(const json& j, UpdateAccepted& e) {
  j.at("round").get_to(e.round);
  j.at("client").get_to(e.client);
  j.at("num_examples").get_to(e.num_examples);
  j.at("bytes").get_to(e.bytes);
  e.staleness.reset();
  if (j.contains("staleness")) {
    UpdateStaleness st;
    j.at("trained_on").get_to(st.trained_on);
    j.at("staleness").get_to(st.staleness);
    st.weight = Number(j, "staleness_weight");
    e.staleness = st;
  }
  e.via = j.contains("via") ? j.at("via").get<std::string>() : std::string();
}

void to_json(json& j, const UpdateRefused& e) {
  j = {{"round", e.round}, {"client", e.client}, {"reason", e.reason}, {"code", e.code}};
}
void from_json(const json& j, UpdateRefused& e) {
  j.at("round").get_to(e.round);
  j.at("client").get_to(e.client);
  j.at("reason").get_to(e.reason);
  e.code = j.value("code", std::string());
}

void to_json(json& j, const RoundFailed& e) {
  j = {{"round", e.round}, {"attempt", e.attempt}, {"reason", e.reason}};
}
void from_json(const json& j, RoundFailed& e) {
  j.at("round").get_to(e.round);
  j.at("attempt").get_to(e.attempt);
  j.at("reason").get_to(e.reason);
}

void to_json(json& j, const CheckpointWritten& e) {
  j = {{"round", e.round}, {"path", e.path}, {"error", e.error}, {"seconds", e.seconds}};
}
void from_json(const json& j, CheckpointWritten& e) {
  j.at("round").get_to(e.round);
  j.at("path").get_to(e.path);
  j.at("error").get_to(e.error);
  e.seconds = j.value("seconds", 0.0);
}

void to_json(json& j, const Evaluated& e) {
  j = {{"round", e.round},
       {"model_version", e.model_version},
       {"loss", e.loss},
       {"accuracy", e.accuracy},
       {"num_examples", e.num_examples}};
}
void from_json(const json& j, Evaluated& e) {
  j.at("round").get_to(e.round);
  j.at("model_version").get_to(e.model_version);
  e.loss = Number(j, "loss");
  e.accuracy = Number(j, "accuracy");
  j.at("num_examples").get_to(e.num_examples);
}

void to_json(json& j, const RoundSummary& s) {
  j = {{"round", s.round},           {"model_version", s.model_version},
       {"attempts", s.attempts},     {"selected", s.selected},
       {"accepted", s.accepted},     {"refused", s.refused},
       {"dropped", s.dropped},       {"bytes_down", s.bytes_down},
       {"bytes_up", s.bytes_up},     {"num_examples", s.num_examples},
       {"duration_s", s.duration_s}, {"client_metrics", s.client_metrics}};
  if (s.dp) {
    // Epsilon is infinite without noise: JSON has no infinity, so it is written as null.
    const DpRoundReport& d = *s.dp;
    j["dp"] = {{"clip_norm", d.clip_norm},
               {"noise_stddev", d.noise_stddev},
               {"sampling_rate", d.sampling_rate},
               {"clipped", d.clipped},
               {"mean_update_norm", d.mean_update_norm},
               {"epsilon", std::isfinite(d.epsilon) ? json(d.epsilon) : json(nullptr)},
               {"order", d.order}};
  }
  if (s.staleness) {
    const StalenessSummary& t = *s.staleness;
    j["staleness"] = {
        {"mean", t.mean}, {"max", t.max}, {"histogram", t.histogram}, {"in_flight", t.in_flight}};
  }
  if (s.split) {
    const SplitRoundReport& r = *s.split;
    j["split"] = {{"batches", r.batches},
                  {"samples", r.samples},
                  {"bytes_in", r.bytes_in},
                  {"bytes_out", r.bytes_out},
                  {"server_seconds", r.server_seconds}};
  }
}
void from_json(const json& j, RoundSummary& s) {
  j.at("round").get_to(s.round);
  j.at("model_version").get_to(s.model_version);
  j.at("attempts").get_to(s.attempts);
  j.at("selected").get_to(s.selected);
  // Event logs written before the counts were named after update_accepted/update_refused call them
  // "completed" and "rejected": those are read too.
  j.at(j.contains("accepted") || !j.contains("completed") ? "accepted" : "completed")
      .get_to(s.accepted);
  j.at(j.contains("refused") || !j.contains("rejected") ? "refused" : "rejected").get_to(s.refused);
  j.at("dropped").get_to(s.dropped);
  j.at("bytes_down").get_to(s.bytes_down);
  j.at("bytes_up").get_to(s.bytes_up);
  j.at("num_examples").get_to(s.num_examples);
  s.duration_s = Number(j, "duration_s");
  j.at("client_metrics").get_to(s.client_metrics);
  s.dp.reset();
  if (j.contains("dp")) {
    const json& d = j.at("dp");
    DpRoundReport r;
    r.clip_norm = Number(d, "clip_norm");
    r.noise_stddev = Number(d, "noise_stddev");
    r.sampling_rate = Number(d, "sampling_rate");
    d.at("clipped").get_to(r.clipped);
    r.mean_update_norm = Number(d, "mean_update_norm");
    r.epsilon = d.at("epsilon").is_null() ? std::numeric_limits<double>::infinity()
                                          : d.at("epsilon").get<double>();
    r.order = Number(d, "order");
    s.dp = r;
  }
  s.staleness.reset();
  if (j.contains("staleness")) {
    const json& d = j.at("staleness");
    StalenessSummary t;
    t.mean = Number(d, "mean");
    d.at("max").get_to(t.max);
    d.at("histogram").get_to(t.histogram);
    d.at("in_flight").get_to(t.in_flight);
    s.staleness = std::move(t);
  }
  s.split.reset();
  if (j.contains("split")) {
    const json& d = j.at("split");
    SplitRoundReport r;
    d.at("batches").get_to(r.batches);
    d.at("samples").get_to(r.samples);
    d.at("bytes_in").get_to(r.bytes_in);
    d.at("bytes_out").get_to(r.bytes_out);
    r.server_seconds = Number(d, "server_seconds");
    s.split = r;
  }
}

void to_json(json& j, const RoundClosed& e) {
  j = e.summary;
  if (e.evaluation) {
    j["test_accuracy"] = e.evaluation->accuracy;
    j["test_loss"] = e.evaluation->loss;
    j["test_examples"] = e.evaluation->num_examples;
  }
}
void from_json(const json& j, RoundClosed& e) {
  j.get_to(e.summary);
  e.evaluation.reset();
  if (j.contains("test_accuracy")) {
    Evaluated ev;
    ev.round = e.summary.round;
    ev.model_version = e.summary.model_version;
    ev.accuracy = Number(j, "test_accuracy");
    ev.loss = Number(j, "test_loss");
    j.at("test_examples").get_to(ev.num_examples);
    e.evaluation = ev;
  }
}

void to_json(json& j, const FederatedEvaluated& e) {
  j = {{"round", e.summary.round},
       {"clients", e.summary.clients},
       {"num_examples", e.summary.num_examples},
       {"loss", e.summary.loss},
       {"accuracy", e.summary.accuracy}};
}
void from_json(const json& j, FederatedEvaluated& e) {
  j.at("round").get_to(e.summary.round);
  j.at("clients").get_to(e.summary.clients);
  j.at("num_examples").get_to(e.summary.num_examples);
  e.summary.loss = Number(j, "loss");
  e.summary.accuracy = Number(j, "accuracy");
}

void to_json(json& j, const RunFinished& e) {
  j = {{"rounds_done", e.rounds_done}, {"ok", e.ok},
       {"status", e.status},           {"model_hash", e.model_hash},
       {"final_model", e.final_model}, {"stopped", e.stopped}};
}
void from_json(const json& j, RunFinished& e) {
  j.at("rounds_done").get_to(e.rounds_done);
  j.at("ok").get_to(e.ok);
  j.at("status").get_to(e.status);
  j.at("model_hash").get_to(e.model_hash);
  j.at("final_model").get_to(e.final_model);
  e.stopped = j.value("stopped", std::string());
}

void to_json(json& j, const ClientRefused& e) {
  j = {{"client", e.client}, {"address", e.address}, {"reason", e.reason},
       {"code", e.code},     {"count", e.count},     {"seconds", e.seconds}};
}
void from_json(const json& j, ClientRefused& e) {
  j.at("client").get_to(e.client);
  j.at("address").get_to(e.address);
  j.at("reason").get_to(e.reason);
  j.at("code").get_to(e.code);
  j.at("count").get_to(e.count);
  j.at("seconds").get_to(e.seconds);
}

namespace {

// The event names, in the variant's order.
constexpr std::string_view kNames[] = {"run_started",    "round_opened",  "update_accepted",
                                       "update_refused", "round_failed",  "checkpoint_written",
                                       "evaluated",      "round_closed",  "federated_evaluated",
                                       "run_finished",   "client_refused"};
static_assert(std::size(kNames) == std::variant_size_v<RunEvent>);

template <size_t I = 0>
Result<RunEvent> FromJsonAt(size_t index, const json& j) {
  if constexpr (I < std::variant_size_v<RunEvent>) {
    if (index == I) {
      std::variant_alternative_t<I, RunEvent> e;
      j.get_to(e);
      return RunEvent(std::move(e));
    }
    return FromJsonAt<I + 1>(index, j);
  } else {
    return Status::Internal("run event index out of range");
  }
}

}  // namespace

std::string_view RunEventName(const RunEvent& event) { return kNames[event.index()]; }

json ToJson(const RunEvent& event) {
  json j = std::visit([](const auto& e) { return json(e); }, event);
  j["event"] = RunEventName(event);
  return j;
}

Result<RunEvent> RunEventFromJson(const json& j) {
  if (!j.is_object() || !j.contains("event") || !j["event"].is_string())
    return Status::InvalidArgument("a run event is a JSON object with an \"event\" name");
  const std::string name = j["event"].get<std::string>();
  for (size_t i = 0; i < std::size(kNames); ++i) {
    if (kNames[i] != name) continue;
    try {
      return FromJsonAt(i, j);
    } catch (const json::exception& e) {
      return Status::InvalidArgument("run event '" + name + "': " + e.what());
    }
  }
  return Status::InvalidArgument("unknown run event '" + name + "'");
}

}  // namespace tributary
