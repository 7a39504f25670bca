#include "coordinator/round_config.h"

#include <cmath>

#include "compression/codec.h"

namespace tributary {

Status RoundConfig::Validate() const {
  auto bad = [](const std::string& what) {
    return Status::InvalidArgument("round config: " + what);
  };
  if (rounds < 1) return bad("rounds must be >= 1");
  if (fraction < 0.0 || fraction > 1.0) return bad("fraction must be in [0, 1]");
  if (fraction == 0.0 && clients_per_round < 1) return bad("clients_per_round must be >= 1");
  if (min_available < 1) return bad("min_available must be >= 1");
  if (!(over_selection >= 1.0) || over_selection > 10.0)
    return bad("over_selection must be in [1, 10]");
  if (min_completed < 1) return bad("min_completed must be >= 1");
  if (fraction == 0.0 && min_completed > clients_per_round)
    return bad("min_completed (" + std::to_string(min_completed) + ") exceeds clients_per_round (" +
               std::to_string(clients_per_round) + ")");
  if (round_timeout.count() <= 0) return bad("round_timeout must be positive");
  if (max_round_attempts < 0) return bad("max_round_attempts must be >= 0");
  if (fit.epochs < 1 || fit.batch_size < 1 || !(fit.lr > 0.0f) || !std::isfinite(fit.lr))
    return bad("fit needs epochs >= 1, batch_size >= 1 and lr > 0");
  if (min_num_examples < 1 || min_num_examples > max_num_examples)
    return bad("need 1 <= min_num_examples <= max_num_examples");
  if (Result<std::unique_ptr<Codec>> c = MakeDownloadCodec(download_codec); !c.ok())
    return bad("download_codec: " + c.status().message());
  if (federated_eval_every < 0) return bad("federated_eval_every must be >= 0");
  return Status::Ok();
}

}  // namespace tributary
