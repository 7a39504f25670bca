#include "privacy/secagg/secagg_start.h"

#include <fmt/format.h>

namespace tributary {

Result<SecAggStartMsg> ToWire(const SecAggStart& start) {
  TRIB_ASSIGN_OR_RETURN(IntDomain domain, IntDomain::Create(start.domain));
  const SecAggSession& s = start.session;
  if (s.modulus_mask != domain.modulus_mask())
    return Status::InvalidArgument("secure aggregation: the session's modulus is not the domain's");
  SecAggStartMsg m;
  m.round = s.round;
  m.run_id = s.run_id;
  m.vector_length = s.vector_length;
  m.sum_bits = static_cast<uint32_t>(domain.sum_bits());
  m.clip = start.domain.clip;
  m.quant_bits = static_cast<uint32_t>(start.domain.quant_bits);
  m.max_weight = start.domain.max_weight;
  m.max_clients = start.domain.max_clients;
  m.degree = s.degree;
  m.threshold = s.threshold;
  m.min_clients = s.min_clients;
  m.dp_clip_norm = start.dp.clip_norm;
  m.dp_noise_stddev = start.dp.noise_stddev;
  m.dp_noise_seed = start.dp.noise_seed;
  m.max_dropout = s.max_dropout;
  return m;
}

Result<SecAggStart> FromWire(const SecAggStartMsg& m) {
  SecAggStart start;
  start.domain.clip = m.clip;
  start.domain.quant_bits = static_cast<int>(m.quant_bits);
  start.domain.max_weight = m.max_weight;
  start.domain.max_clients = m.max_clients;
  TRIB_ASSIGN_OR_RETURN(IntDomain domain, IntDomain::Create(start.domain));
  if (domain.sum_bits() != static_cast<int>(m.sum_bits))
    return Status::InvalidArgument(fmt::format(
        "secure aggregation: the coordinator says the sum has {} bits; its parameters give {}",
        m.sum_bits, domain.sum_bits()));
  if (m.vector_length < 1 || m.vector_length > (uint64_t{1} << 36))
    return Status::InvalidArgument(
        fmt::format("secure aggregation: vector length {} is outside [1, 2^36]", m.vector_length));
  if (!(m.max_dropout >= 0.0 && m.max_dropout < 0.5))
    return Status::InvalidArgument(
        fmt::format("secure aggregation: max_dropout {} is outside [0, 0.5)", m.max_dropout));
  if (!(m.dp_clip_norm >= 0.0 && m.dp_clip_norm <= 1e6) ||
      !(m.dp_noise_stddev >= 0.0 && m.dp_noise_stddev <= 1e9))
    return Status::InvalidArgument(fmt::format(
        "secure aggregation: bad differential privacy parameters (clip norm {}, noise {})",
        m.dp_clip_norm, m.dp_noise_stddev));
  SecAggSession& s = start.session;
  s.run_id = m.run_id;
  s.round = m.round;
  s.vector_length = m.vector_length;
  s.modulus_mask = domain.modulus_mask();
  s.degree = m.degree;
  s.max_dropout = m.max_dropout;
  s.threshold = m.threshold;
  s.min_clients = m.min_clients;
  start.dp = {m.dp_clip_norm, m.dp_noise_stddev, m.dp_noise_seed};
  return start;
}

}  // namespace tributary
