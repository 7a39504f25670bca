// SecAggTask: one client's part in one round of secure aggregation (docs/privacy.md), between the
// runtime's strand (keys, shares, unmasking: milliseconds) and its worker (the trained update is
// masked there: the masks cost O(model x neighbours)).
//
//   SecAggStart   -> Create, Advertise() -> SecAggKeys
//   SecAggRoster  -> Share()             -> SecAggShares
//   SecAggInbox   -> SetInbox(), and the trained update -> SetUpdate(): whichever comes second
//                    wins TryClaimMask() and runs Mask() (on the worker) -> SecAggMaskedInput
//   SecAggUnmaskRequest -> Unmask()      -> SecAggUnmaskResponse
//
// The client signs its keys with its TLS key, and checks its neighbours' keys against the run's
// CA (SecAggIdentity). Thread-safe: every method locks.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "crypto/signing.h"
#include "privacy/secagg/int_domain.h"
#include "privacy/secagg/secagg_client.h"
#include "privacy/secagg/secagg_session.h"
#include "privacy/secagg/secagg_start.h"
#include "protocol/messages.h"

namespace tributary {

// What a client needs to take part in secure aggregation: its certificate's key and certificate,
// and the CA its peers' certificates must chain to (the TLS files it already has).
struct SecAggIdentity {
  std::shared_ptr<const SigningKey> key;
  std::string cert_pem;
  std::shared_ptr<const CertificateVerifier> ca;

  // From PEM files (tls.key, tls.cert, tls.ca); errors name the file.
  static Result<std::shared_ptr<const SecAggIdentity>> FromFiles(const std::string& key,
                                                                 const std::string& cert,
                                                                 const std::string& ca);
};

class SecAggTask {
 public:
  // InvalidArgument when the parameters do not describe a domain this client can derive
  // (FromWire in privacy/secagg/secagg_start.h names the field).
  static Result<std::shared_ptr<SecAggTask>> Create(const SecAggStartMsg& start,
                                                    const std::string& client_id,
                                                    std::shared_ptr<const SecAggIdentity> id);

  uint64_t round() const { return round_; }
  // The task whose update SetUpdate took (0 before): what a TaskFailed names when Mask() fails.
  uint64_t task_id() const;
  // The model version that update was trained from (0 before): the state dir's record once the
  // masked input goes.
  uint64_t model_version() const;
  Result<SecAggKeysMsg> Advertise();
  Result<SecAggSharesMsg> Share(const SecAggRosterMsg& roster);
  void SetInbox(SecAggInboxMsg inbox);
  // The trained update (its codec's bytes decoded to the dense delta) put into the integer domain
  // with the update's num_examples as weight: all of it, or in a sparse round (vector_length - 1
  // below the model's size) the values at the round's coordinates (SecAggSession::Coordinates).
  // `rounding_seed` drives the stochastic rounding: a per-client seed (the runtime passes its
  // task's fit seed, so a simulation is reproducible). InvalidArgument when the update is smaller
  // than the round's vector or does not decode. With differential privacy on the clients (the
  // start message's dp_clip_norm > 0) the values summed are first clipped to that L2 norm and
  // given Gaussian noise of dp_noise_stddev (from OpenSSL's generator, or reproducibly from
  // dp_noise_seed and `rounding_seed` when the coordinator set one), and the weight is 1.
  Status SetUpdate(const UpdateSubmission& update, uint64_t rounding_seed);
  // True once, for the caller that should run Mask(): both the inbox and the input are here.
  bool TryClaimMask();
  Result<SecAggMaskedInputMsg> Mask();
  Result<SecAggUnmaskResponseMsg> Unmask(const SecAggUnmaskRequestMsg& request);

  // Differential privacy on the clients, what SetUpdate does to the values it sums: clips
  // `values` to L2 norm dp.clip_norm (compression/l2_clip.h, the coordinator's clip too) and adds
  // N(0, dp.noise_stddev^2) to each (from dp.noise_seed and `rounding_seed` when the seed is set).
  // InvalidArgument when a value is NaN or infinite; dp.clip_norm > 0.
  static Status ClipAndNoise(std::vector<float>& values, const DpOnClients& dp,
                             uint64_t rounding_seed);

 private:
  SecAggTask(SecAggSession session, IntDomain domain, const std::string& client_id,
             std::shared_ptr<const SecAggIdentity> id);

  DpOnClients dp_;

  mutable std::mutex mu_;
  const uint64_t round_;
  const SecAggSession session_;
  const uint64_t values_;  // the values summed: the session's vector_length - 1
  IntDomain domain_;
  std::shared_ptr<const SecAggIdentity> identity_;
  SecAggClient client_;
  std::optional<SecAggInbox> inbox_;
  std::optional<std::vector<uint64_t>> input_;
  bool claimed_ = false;
  uint64_t task_id_ = 0;
  uint64_t model_version_ = 0;
};

}  // namespace tributary
