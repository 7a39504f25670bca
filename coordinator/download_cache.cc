#include "coordinator/download_cache.h"

#include <vector>

#include "core/log.h"
#include "core/rng.h"

namespace tributary {
namespace {

constexpr uint64_t kDownloadStream = 0xd0;

ModelPayload RawPayload(const ModelWeights& model) {
  return ModelPayload{model.fingerprint(),
                      std::vector<float>(model.data().begin(), model.data().end())};
}

}  // namespace

const ModelPayload& DownloadCache::For(const ModelWeights& model, uint64_t version,
                                       uint64_t round) {
  // A raw payload does not depend on the round: one copy per version.
  const bool same = version_ == version && (codec_->raw_floats() || round_ == round);
  if (!same) {
    payload_ = Make(model, version, round);
    version_ = version;
    round_ = round;
  }
  return payload_;
}

ModelPayload DownloadCache::Make(const ModelWeights& model, uint64_t version,
                                 uint64_t round) const {
  if (codec_->raw_floats()) return RawPayload(model);
  const uint64_t seed = DeriveSeed(seed_, {kDownloadStream, round, version});
  Result<std::vector<uint8_t>> bytes = codec_->Encode(model.data(), nullptr, seed);
  if (!bytes.ok()) {
    Log().warn("round {}: sending the model raw: download codec '{}' refused it: {}", round,
               codec_->spec(), bytes.status().ToString());
    return RawPayload(model);
  }
  ModelPayload p;
  p.layout_fingerprint = model.fingerprint();
  p.encoding = std::string(codec_->spec());
  p.encoded = SharedBytes(std::move(bytes).value());
  return p;
}

}  // namespace tributary
