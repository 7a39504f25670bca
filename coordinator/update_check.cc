#include "coordinator/update_check.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/log.h"

namespace tributary {

std::variant<UpdateStats, UpdateRefusal> CheckUpdateContent(
    const RoundConfig& config, const Codec& codec, const ModelWeights& model, const std::string& id,
    const ClientRecord* sender, const UpdateSubmission& u, const std::string& what) {
  auto refuse = [](std::string kind, std::string reason) {
    return UpdateRefusal{ErrorCode::kMalformedMessage, std::move(kind), std::move(reason)};
  };
  if (u.update.layout_fingerprint != model.fingerprint())
    return refuse("layout", "layout fingerprint does not match the model");
  if (u.update.num_floats != model.size())
    return refuse("size", "update has " + std::to_string(u.update.num_floats) +
                              " values, the model has " + std::to_string(model.size()));
  if (u.update.codec != codec.spec())
    return refuse("codec", "codec '" + u.update.codec + "' is not the run's '" +
                               std::string(codec.spec()) + "'");
  if (u.num_examples < config.min_num_examples || u.num_examples > config.max_num_examples)
    return refuse("num_examples", "num_examples " + std::to_string(u.num_examples) +
                                      " is outside [" + std::to_string(config.min_num_examples) +
                                      ", " + std::to_string(config.max_num_examples) + "]");
  // One that announced none is held to run.max_num_examples (above).
  const uint64_t announced = sender ? sender->capabilities.num_examples : 0;
  if (u.num_examples > config.MaxExamplesOf(announced)) {
    Log().warn(
        "security: client {} claims {} examples in its update for {}, more than the {} it "
        "announced at Hello; refused",
        id, u.num_examples, what, announced);
    return refuse("num_examples above Hello",
                  fmt::format("num_examples {} is more than the {} the client announced at Hello",
                              u.num_examples, announced));
  }
  Result<UpdateStats> stats = codec.Validate(u.update.bytes.span(), model.size());
  if (!stats.ok()) return refuse("invalid values", stats.status().message());
  return *stats;
}

std::optional<UpdateRefusal> CheckControlDelta(const Strategy& strategy, const ModelWeights& model,
                                               const UpdateSubmission& u) {
  auto refuse = [](std::string kind, std::string reason) {
    return UpdateRefusal{ErrorCode::kMalformedMessage, std::move(kind), std::move(reason)};
  };
  const std::span<const float> d = u.control_delta.span();
  if (!strategy.uses_control_variates()) {
    if (d.empty()) return std::nullopt;
    return refuse("control delta", fmt::format("the update carries a control delta of {} values, "
                                               "and strategy '{}' uses none",
                                               d.size(), strategy.name()));
  }
  if (d.size() != model.size())
    return refuse("control delta",
                  fmt::format("strategy '{}' needs a control delta of {} values (one per "
                              "parameter); the update carries {}",
                              strategy.name(), model.size(), d.size()));
  double max_abs = 0.0;
  for (size_t i = 0; i < d.size(); ++i) {
    if (!std::isfinite(d[i]))
      return refuse("control delta",
                    fmt::format("the control delta holds a value that is not finite at {}", i));
    max_abs = std::max(max_abs, static_cast<double>(std::abs(d[i])));
  }
  if (Status fits = strategy.CheckControl(UpdateStats{max_abs, d.size()}); !fits.ok())
    return refuse("out of bounds", fits.message());
  return std::nullopt;
}

}  // namespace tributary
