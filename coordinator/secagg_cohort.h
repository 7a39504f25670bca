// The secure aggregation parts both engines compose (RoundEngine: one session per round attempt;
// AsyncEngine: one per cohort of clients dispatched together): a session's options for a
// selection, a client's message fed to its session, and the session's unmasked mean written into
// a strategy.
//
// SecAggOptionsFor chooses the integer domain from the run and the selection: secagg.clip, the
// bits of a qB codec (else secagg.quant_bits), and as weight bound the largest a selected client
// may have (what it announced at Hello, run.max_num_examples when none, capped at run.max_weight
// and secagg.max_weight): the coordinator sees only the sum, so a client that sends more is capped
// at the selection's largest by the domain. The session's identity is (seed, model fingerprint,
// `session_round`), which must be unique in the run (a round, or a cohort's number); its vector is
// randk's k coordinates (the same for every client) or the whole model, plus the weight.
//
// Stateless functions; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "aggregation/strategy.h"
#include "coordinator/client_registry.h"
#include "coordinator/round_config.h"
#include "coordinator/secagg_round.h"

namespace tributary {

// InvalidArgument (from IntDomain) when the domain cannot be built for the selection.
// `unit_weights`: every client weighs 1 (differential privacy on the clients).
Result<SecAggRound::Options> SecAggOptionsFor(const RoundConfig& config,
                                              const ClientRegistry& registry,
                                              const std::vector<std::string>& selected,
                                              const ModelWeights& model, uint64_t session_round,
                                              bool unit_weights = false);

// Routes a client's SecAggKeys, SecAggShares, SecAggMaskedInput or SecAggUnmaskResponse to
// `session`; FailedPrecondition for any other message, or the session's refusal.
Status FeedSecAgg(SecAggRound& session, const std::string& id, const Message& message,
                  TimePoint now);

// Writes a finished session's mean (its coordinates, or dense), every value times `scale` and the
// sink's own scale. `session` must be kDone and outlive the writer.
UpdateWriter SecAggMeanWriter(const SecAggRound& session, size_t model_size, float scale = 1.0f);
// The same for a mean decoded elsewhere (the tier's summed groups): `mean` holds the session's
// coordinates' values (or the dense model's); both must outlive the writer.
UpdateWriter SecAggMeanWriter(const SecAggSession& session, const std::vector<float>& mean,
                              size_t model_size, float scale = 1.0f);

}  // namespace tributary
