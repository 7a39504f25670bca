// RunEvents: what a federated run reports as it goes, and the observers that receive them.
//
// RunDriver publishes each event to every RunObserver it was given, in this order for a round:
//   RoundOpened (once per attempt), then per update UpdateAccepted or UpdateRefused, then either
//   RoundFailed (the attempt failed; a new RoundOpened follows) or, once the round closed,
//   CheckpointWritten (when checkpointing), Evaluated (when evaluation is due) and RoundClosed
//   (with the evaluation, if any, so a console line needs only this one). In an asynchronous run
//   (run.mode = "async") a "round" is a step: RoundOpened when its buffer opens, RoundClosed when
//   the buffer is applied (its summary then has `staleness`), never RoundFailed. FederatedEvaluated
//   comes when a federated evaluation's results are in. RunStarted comes first and RunFinished
//   last. ClientRefused (a client refused at Hello, before it joined) may come between any two of
//   them.
//
// Every event has a JSON form (ToJson/RunEventFromJson, the "event" field names its type), which
// is what the event log writes and what deployment mode reads back: one definition, both ways.
//
// Observers are called on the thread that drives the run and must not block for long.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "coordinator/run_engine.h"

namespace tributary {

struct RunStarted {
  std::string model;          // run.model ("" when the run knows only the weights' layout)
  std::string initial_model;  // run.initial_model: the starting weights' file, or ""
  uint64_t tensors = 0;       // in the model's layout
  std::string strategy;
  std::string codec;
  std::string download_codec;
  int64_t rounds = 0;  // the run's total
  int64_t clients_per_round = 0;
  uint64_t parameters = 0;
  uint64_t rounds_done = 0;  // > 0 when resumed
  uint64_t model_version = 0;
  uint64_t model_hash = 0;   // the starting model's content hash
  std::string resumed_from;  // the checkpoint's path; empty for a new run
  // Newer checkpoints that failed verification when resuming: "<path>: <reason>" each.
  std::vector<std::string> skipped_checkpoints;
  // The run's unique id (RunDriver::run_uid): a resumed run keeps its checkpoint's. "" in logs of
  // earlier versions.
  std::string run_uid;
  // run.mode: "sync", or "async" (then `rounds` and `rounds_done` count steps). Written only when
  // "async"; "sync" in earlier logs.
  std::string mode = "sync";
};

struct RoundOpened {
  uint64_t round = 0;
  int64_t attempt = 0;  // 1 for the first
  int64_t selected = 0;
  uint64_t model_version = 0;
};

struct UpdateAccepted {
  uint64_t round = 0;  // the round, or the asynchronous step whose buffer it joined
  std::string client;
  uint64_t num_examples = 0;
  uint64_t bytes = 0;
  // An asynchronous update's: the version it was trained on, its staleness and its weight.
  std::optional<UpdateStaleness> staleness;
  // The aggregator it came through (docs/tier.md); empty (and absent from the JSON) when the
  // client sent it to the coordinator itself.
  std::string via = std::string();
};

struct UpdateRefused {
  uint64_t round = 0;
  std::string client;
  std::string reason;
  std::string code;  // the refusal's StatusCodeName ("InvalidArgument", ...); "" in older logs
};

struct RoundFailed {
  uint64_t round = 0;
  int64_t attempt = 0;
  std::string reason;
};

struct CheckpointWritten {
  uint64_t round = 0;
  std::string path;
  std::string error;     // empty when written; else why not (the run goes on)
  double seconds = 0.0;  // how long writing it took (wall time); 0 in older logs
};

struct Evaluated {
  uint64_t round = 0;
  uint64_t model_version = 0;
  double loss = 0.0;
  double accuracy = 0.0;
  int64_t num_examples = 0;
};

struct RoundClosed {
  RoundSummary summary;
  std::optional<Evaluated> evaluation;  // when server-side evaluation ran this round
};

struct FederatedEvaluated {
  FederatedEvalSummary summary;
};

struct RunFinished {
  uint64_t rounds_done = 0;
  bool ok = false;
  std::string status;  // "OK" or the error
  uint64_t model_hash = 0;
  std::string final_model;  // the saved file; empty when none was saved
  // Why the run ended before its last round although nothing failed (the privacy budget), or "".
  std::string stopped;
};

// Refusals at Hello of one client for one reason (its protocol version, model layout or codecs
// are not the run's, or it has no authenticated id): it was told why (an Error) and never joined.
// CoordinatorService reports them bounded by a RefusalDigest (coordinator/refusal_digest.h): the
// first of a window at once (count 1), the window's others as one event with their count.
struct ClientRefused {
  std::string client;    // the id its certificate names ("" when none; "*" for the digest's rest)
  std::string address;   // where it connected from (the latest one's, without the port)
  std::string reason;    // what it was told (the window's first reason, at most 512 bytes)
  std::string code;      // the Error's code name ("LAYOUT_MISMATCH", ...)
  uint64_t count = 1;    // the refusals this event stands for
  double seconds = 0.0;  // the window they came in; 0 for one reported as it came
};

using RunEvent = std::variant<RunStarted, RoundOpened, UpdateAccepted, UpdateRefused, RoundFailed,
                              CheckpointWritten, Evaluated, RoundClosed, FederatedEvaluated,
                              RunFinished, ClientRefused>;

// "run_started", "round_opened", ... as the event log writes it.
std::string_view RunEventName(const RunEvent& event);
// {"event": name, ...fields}.
nlohmann::json ToJson(const RunEvent& event);
// The event a ToJson object describes; InvalidArgument naming the problem for anything else.
Result<RunEvent> RunEventFromJson(const nlohmann::json& json);

class RunObserver {
 public:
  virtual ~RunObserver() = default;
  virtual void OnEvent(const RunEvent& event) = 0;
};

}  // namespace tributary
