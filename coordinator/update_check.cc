#include "coordinator/update_check.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "compression/dense_codec.h"
#include "core/log.h"

namespace tributary {

namespace {

UpdateRefusal Refuse(std::string kind, std::string reason) {
  return UpdateRefusal{ErrorCode::kMalformedMessage, std::move(kind), std::move(reason)};
}

// CheckUpdateContent but for the values (Codec::Validate).
std::optional<UpdateRefusal> CheckUpdateHeader(const RoundConfig& config, const Codec& codec,
                                               const ModelWeights& model, const std::string& id,
                                               const ClientRecord* sender,
                                               const UpdateSubmission& u, const std::string& what) {
  if (u.update.layout_fingerprint != model.fingerprint())
    return Refuse("layout", "layout fingerprint does not match the model");
  if (u.update.num_floats != model.size())
    return Refuse("size", "update has " + std::to_string(u.update.num_floats) +
                              " values, the model has " + std::to_string(model.size()));
  if (u.update.codec != codec.spec())
    return Refuse("codec", "codec '" + u.update.codec + "' is not the run's '" +
                               std::string(codec.spec()) + "'");
  if (u.num_examples < config.min_num_examples || u.num_examples > config.max_num_examples)
    return Refuse("num_examples", "num_examples " + std::to_string(u.num_examples) +
                                      " is outside [" + std::to_string(config.min_num_examples) +
                                      ", " + std::to_string(config.max_num_examples) + "]");
  // One that announced none is held to run.max_num_examples (above).
  const uint64_t announced = sender ? sender->capabilities.num_examples : 0;
  if (u.num_examples > config.MaxExamplesOf(announced)) {
    Log().warn(
        "security: client {} claims {} examples in its update for {}, more than the {} it "
        "announced at Hello; refused",
        id, u.num_examples, what, announced);
    return Refuse("num_examples above Hello",
                  fmt::format("num_examples {} is more than the {} the client announced at Hello",
                              u.num_examples, announced));
  }
  return std::nullopt;
}

// The dense one-pass fold (Strategy::AccumulateDense) of an update whose header passed. False
// when the rule folds no dense bytes (nothing checked or folded: the caller takes the steps);
// true when it took the update, `*refusal` then set when it was refused (and nothing folded).
bool TakeDenseInOnePass(const Codec& codec, Strategy& strategy, const ModelWeights& model,
                        const UpdateSubmission& u, uint64_t weight, float scale,
                        std::optional<UpdateRefusal>* refusal) {
  const std::span<const uint8_t> bytes = u.update.bytes.span();
  if (Status s = DenseCodec::CheckSize(bytes.size(), model.size()); !s.ok()) {
    *refusal = Refuse("invalid values", s.message());
    return true;
  }
  if ((*refusal = CheckControlDelta(strategy, model, u))) return true;
  const Status s = strategy.AccumulateDense(weight, bytes, scale);
  if (s.code() == StatusCode::kUnimplemented) return false;
  if (s.ok()) return true;
  if (s.code() == StatusCode::kInvalidArgument) {  // the weight (CheckUpdate's first check)
    *refusal = Refuse("out of bounds", s.message());
  } else if (s.code() != StatusCode::kOutOfRange) {
    *refusal = UpdateRefusal{ErrorCode::kInternal, "internal", s.message()};
  } else if (Result<UpdateStats> stats = codec.Validate(bytes, model.size()); !stats.ok()) {
    // A value was not finite or out of range, and nothing was folded: the two steps name it.
    *refusal = Refuse("invalid values", stats.status().message());
  } else if (Status fits = strategy.CheckUpdate(*stats, weight); !fits.ok()) {
    *refusal = Refuse("out of bounds", fits.message());
  } else {
    *refusal = UpdateRefusal{ErrorCode::kInternal, "internal",
                             "the one-pass fold refused values the checks accept"};
  }
  return true;
}

}  // namespace

std::variant<UpdateStats, UpdateRefusal> CheckUpdateContent(
    const RoundConfig& config, const Codec& codec, const ModelWeights& model, const std::string& id,
    const ClientRecord* sender, const UpdateSubmission& u, const std::string& what) {
  if (std::optional<UpdateRefusal> no =
          CheckUpdateHeader(config, codec, model, id, sender, u, what))
    return std::move(*no);
  Result<UpdateStats> stats = codec.Validate(u.update.bytes.span(), model.size());
  if (!stats.ok()) return Refuse("invalid values", stats.status().message());
  return *stats;
}

std::optional<UpdateRefusal> TakeUpdate(const RoundConfig& config, const Codec& codec,
                                        Strategy& strategy, const ModelWeights& model,
                                        const std::string& id, const ClientRecord* sender,
                                        const UpdateSubmission& u, const std::string& what,
                                        uint64_t weight, float scale) {
  if (std::optional<UpdateRefusal> no =
          CheckUpdateHeader(config, codec, model, id, sender, u, what))
    return no;
  std::optional<UpdateRefusal> refusal;
  if (codec.spec() == "dense" && !strategy.uses_control_variates() &&
      TakeDenseInOnePass(codec, strategy, model, u, weight, scale, &refusal))
    return refusal;
  const std::span<const uint8_t> bytes = u.update.bytes.span();
  Result<UpdateStats> stats = codec.Validate(bytes, model.size());
  if (!stats.ok()) return Refuse("invalid values", stats.status().message());
  if (Status fits = strategy.CheckUpdate(*stats, weight); !fits.ok())
    return Refuse("out of bounds", fits.message());
  if (std::optional<UpdateRefusal> no = CheckControlDelta(strategy, model, u)) return no;
  Status s = strategy.Accumulate(
      weight, [&](UpdateSink& sink, float outer) { codec.DecodeInto(bytes, sink, outer * scale); });
  if (s.ok() && strategy.uses_control_variates())
    s = strategy.AccumulateControl(u.control_delta.span());
  if (!s.ok()) return UpdateRefusal{ErrorCode::kInternal, "internal", s.message()};
  return std::nullopt;
}

std::optional<UpdateRefusal> CheckControlDelta(const Strategy& strategy, const ModelWeights& model,
                                               const UpdateSubmission& u) {
  const std::span<const float> d = u.control_delta.span();
  if (!strategy.uses_control_variates()) {
    if (d.empty()) return std::nullopt;
    return Refuse("control delta", fmt::format("the update carries a control delta of {} values, "
                                               "and strategy '{}' uses none",
                                               d.size(), strategy.name()));
  }
  if (d.size() != model.size())
    return Refuse("control delta",
                  fmt::format("strategy '{}' needs a control delta of {} values (one per "
                              "parameter); the update carries {}",
                              strategy.name(), model.size(), d.size()));
  double max_abs = 0.0;
  for (size_t i = 0; i < d.size(); ++i) {
    if (!std::isfinite(d[i]))
      return Refuse("control delta",
                    fmt::format("the control delta holds a value that is not finite at {}", i));
    max_abs = std::max(max_abs, static_cast<double>(std::abs(d[i])));
  }
  if (Status fits = strategy.CheckControl(UpdateStats{max_abs, d.size()}); !fits.ok())
    return Refuse("out of bounds", fits.message());
  return std::nullopt;
}

}  // namespace tributary
