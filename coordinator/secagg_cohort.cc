#include "coordinator/secagg_cohort.h"

#include <fmt/format.h>

#include <algorithm>

#include "compression/codec_spec.h"

namespace tributary {

Result<SecAggRound::Options> SecAggOptionsFor(const RoundConfig& config,
                                              const ClientRegistry& registry,
                                              const std::vector<std::string>& selected,
                                              const ModelWeights& model, uint64_t session_round,
                                              bool unit_weights) {
  const SecAggConfig& c = config.secagg;
  SecAggRound::Options o;
  // A qB codec's bits are the integer domain's; randk's k values are the masked vector (at the
  // round's coordinates, the same for every client). Validate() refused the rest.
  Result<PipelineSpec> spec = ParseCodecSpec(config.codec);
  const bool quantized = spec.ok() && spec->values == ValueCoding::kQuantized;
  o.domain.clip = c.clip;
  o.domain.quant_bits = quantized ? spec->bits : static_cast<int>(c.quant_bits);
  uint64_t largest = 1;
  for (const std::string& id : selected) {
    const ClientRecord* r = registry.Find(id);
    const uint64_t announced = r ? r->capabilities.num_examples : 0;
    largest = std::max(largest, config.WeightOf(config.MaxExamplesOf(announced)));
  }
  o.domain.max_weight = unit_weights ? 1 : std::min(c.max_weight, largest);
  o.domain.max_clients = std::max<uint64_t>(selected.size(), 1);
  TRIB_ASSIGN_OR_RETURN(IntDomain domain, IntDomain::Create(o.domain));
  o.session.run_id = fmt::format("run-{:x}-{:x}", config.seed, model.fingerprint());
  o.session.round = session_round;
  o.session.vector_length = (spec.ok() ? spec->KeepCount(model.size()) : model.size()) + 1;
  o.session.modulus_mask = domain.modulus_mask();
  o.session.degree = static_cast<size_t>(c.degree);
  o.session.threshold = static_cast<size_t>(c.threshold);
  o.session.max_dropout = c.max_dropout;
  o.session.min_clients = static_cast<size_t>(c.min_clients);
  o.phase_timeout = c.phase_timeout;
  return o;
}

Status FeedSecAgg(SecAggRound& session, const std::string& id, const Message& m, TimePoint now) {
  if (auto* k = std::get_if<SecAggKeysMsg>(&m)) return session.OnKeys(id, *k, now);
  if (auto* sh = std::get_if<SecAggSharesMsg>(&m)) return session.OnShares(id, *sh, now);
  if (auto* y = std::get_if<SecAggMaskedInputMsg>(&m)) return session.OnMaskedInput(id, *y, now);
  if (auto* u = std::get_if<SecAggUnmaskResponseMsg>(&m))
    return session.OnUnmaskResponse(id, *u, now);
  return Status::FailedPrecondition(MessageTypeName(TypeOf(m)) +
                                    " is not a message a client sends");
}

UpdateWriter SecAggMeanWriter(const SecAggRound& session, size_t model_size, float scale) {
  return SecAggMeanWriter(session.session(), session.mean(), model_size, scale);
}

UpdateWriter SecAggMeanWriter(const SecAggSession& session, const std::vector<float>& mean,
                              size_t model_size, float scale) {
  return [&session, &mean, model_size, scale](UpdateSink& sink, float outer) {
    const std::vector<uint32_t> at = session.Coordinates(model_size);
    if (at.empty())
      sink.AddDense(0, mean, outer * scale);
    else
      sink.AddSparse(at, mean, outer * scale);
  };
}

}  // namespace tributary
