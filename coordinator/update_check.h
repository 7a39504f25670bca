// UpdateCheck: the judgement on an update's content that every engine makes the same way, before
// anything of it is folded: its layout, size and codec are the run's, its num_examples is within
// run.min_num_examples .. the sender's Hello (MaxExamplesOf), and its bytes validate (sizes,
// counts, index ranges, finite values within range: Codec::Validate).
//
// What is the engine's own stays with it: whether the sender holds a task, deadlines, which model
// versions count (a synchronous round wants the round's; an asynchronous step accepts any within
// run.max_staleness), and what the verdict does to selection.
//
// A claim of more examples than the sender announced at Hello is a client trying to outweigh the
// others: it is logged as a security warning naming the client (at the default level).
//
// Stateless and thread-safe.
#pragma once

#include <optional>
#include <string>
#include <variant>

#include "aggregation/strategy.h"
#include "compression/codec.h"
#include "coordinator/client_registry.h"
#include "coordinator/round_config.h"
#include "protocol/messages.h"
#include "protocol/wire.h"

namespace tributary {

// Why an update is refused: the Error code the client is sent, the kind of reason (what the
// engines' same-refusal streaks group by: "layout", "size", "codec", "num_examples", "num_examples
// above Hello", "invalid values", ...) and the reason in words.
struct UpdateRefusal {
  ErrorCode code = ErrorCode::kMalformedMessage;
  std::string kind;
  std::string reason;
};

// The update's statistics (what Strategy::CheckUpdate needs) when its content is acceptable,
// else why not. `sender` is the client's record (its Hello), null when it has none; `what` names
// the update in the security warning ("round 3", "step 12").
std::variant<UpdateStats, UpdateRefusal> CheckUpdateContent(
    const RoundConfig& config, const Codec& codec, const ModelWeights& model, const std::string& id,
    const ClientRecord* sender, const UpdateSubmission& update, const std::string& what);

// Takes an update whose sender's engine-specific checks passed (task, deadline, model version):
// its content (CheckUpdateContent), the rule's range check with `weight` (Strategy::CheckUpdate),
// its control delta (CheckControlDelta), then folds it, each value times `scale` in [0, 1]
// (Strategy::Accumulate, and AccumulateControl for a rule with control variates). A dense update
// for a rule that folds dense bytes (Strategy::AccumulateDense: FedAvg, the server optimizers)
// has its values checked as they are folded, reading the update once instead of twice, with the
// same refusals. nullopt when folded; otherwise the refusal (kinds as above, "out of bounds" for
// the range check, "internal" when the fold fails), and nothing folded.
std::optional<UpdateRefusal> TakeUpdate(const RoundConfig& config, const Codec& codec,
                                        Strategy& strategy, const ModelWeights& model,
                                        const std::string& id, const ClientRecord* sender,
                                        const UpdateSubmission& update, const std::string& what,
                                        uint64_t weight, float scale = 1.0f);

// SCAFFOLD's control delta (UpdateSubmission::control_delta) against what `strategy` expects:
// none from a rule without control variates ("control delta"), and from one with them exactly one
// finite value per parameter ("control delta") within the rule's bounds ("out of bounds",
// Strategy::CheckControl). nullopt when it is acceptable.
std::optional<UpdateRefusal> CheckControlDelta(const Strategy& strategy, const ModelWeights& model,
                                               const UpdateSubmission& update);

}  // namespace tributary
