#include "sim/rank_work.h"

#include <cstring>

#include "sim/byte_record.h"

namespace tributary {
namespace {

constexpr uint32_t kHelloMagic = 0x54524831;  // "TRH1"
// "TRW3", "TRR3": TRW1/TRR1 had no control variates, TRW2/TRR2 no split learning.
constexpr uint32_t kWorkMagic = 0x54525733;
constexpr uint32_t kResultsMagic = 0x54525233;

bool ValidCode(int32_t code) {
  return code >= 0 && code <= static_cast<int32_t>(StatusCode::kInternal);
}

Status Malformed(const char* what) {
  return Status::Corruption(std::string("distributed simulation: a malformed ") + what +
                            " message between ranks");
}

}  // namespace

std::string EncodeRankHello(const RankHello& m) {
  ByteWriter w;
  w.Pod(kHelloMagic);
  w.Pod<int32_t>(m.rank);
  w.Pod(m.fingerprint);
  return w.Take();
}

Result<RankHello> DecodeRankHello(const std::string& bytes) {
  ByteReader r(bytes);
  uint32_t magic = 0;
  int32_t rank = 0;
  RankHello m;
  if (!r.Pod(&magic) || magic != kHelloMagic || !r.Pod(&rank) || !r.Pod(&m.fingerprint) ||
      !r.done())
    return Malformed("hello");
  m.rank = rank;
  return m;
}

std::string EncodeRankWork(const RankWork& m) {
  ByteWriter w;
  w.Pod(kWorkMagic);
  w.Pod<uint8_t>(m.stop);
  w.Pod<uint64_t>(m.models.size());
  for (const auto& model : m.models) w.Vec(model);
  w.Pod<uint64_t>(m.jobs.size());
  for (const RankJob& j : m.jobs) {
    w.Pod(j.slot);
    w.Pod(j.client);
    w.Pod<uint8_t>(j.task.has_value());
    w.Pod<uint64_t>(j.task.value_or(0));
    w.Pod(j.attempt);
    w.Pod(j.bytes_down);
    w.Pod(j.model);
    w.Vec(j.shell);
    w.State(j.state);
    w.PodVec(j.control);
  }
  w.Bytes(m.eval_model.data(), m.eval_model.size() * sizeof(float));
  w.Bytes(m.eval_slices.data(), m.eval_slices.size() * sizeof(uint32_t));
  w.Pod(m.split_round);
  w.PodVec(m.split_server);
  w.Pod(m.split_batch_size);
  w.Pod(m.split_lr);
  w.Pod(m.split_momentum);
  w.Pod(m.split_weight_decay);
  w.Str(m.split_optimizer);
  w.Pod(m.split_beta1);
  w.Pod(m.split_beta2);
  w.Pod(m.split_eps);
  return w.Take();
}

Result<RankWork> DecodeRankWork(const std::string& bytes) {
  ByteReader r(bytes);
  uint32_t magic = 0;
  uint8_t stop = 0;
  uint64_t n = 0;
  RankWork m;
  if (!r.Pod(&magic) || magic != kWorkMagic || !r.Pod(&stop) || stop > 1 ||
      !r.Count(&n, sizeof(uint64_t)))
    return Malformed("work");
  m.stop = stop;
  m.models.resize(n);
  for (auto& model : m.models)
    if (!r.Vec(&model)) return Malformed("work");
  if (!r.Count(&n, 9 * sizeof(uint64_t))) return Malformed("work");
  m.jobs.resize(n);
  for (RankJob& j : m.jobs) {
    uint8_t has_task = 0;
    uint64_t task = 0;
    if (!r.Pod(&j.slot) || !r.Pod(&j.client) || !r.Pod(&has_task) || has_task > 1 ||
        !r.Pod(&task) || !r.Pod(&j.attempt) || !r.Pod(&j.bytes_down) || !r.Pod(&j.model) ||
        j.model >= m.models.size() || !r.Vec(&j.shell) || !r.State(&j.state) ||
        !r.PodVec(&j.control))
      return Malformed("work");
    if (has_task) j.task = task;
  }
  const char* p;
  size_t len;
  if (!r.Span(&p, &len, sizeof(float))) return Malformed("work");
  m.eval_model.resize(len / sizeof(float));
  std::memcpy(m.eval_model.data(), p, len);
  if (!r.Span(&p, &len, sizeof(uint32_t))) return Malformed("work");
  m.eval_slices.resize(len / sizeof(uint32_t));
  std::memcpy(m.eval_slices.data(), p, len);
  if (!r.Pod(&m.split_round) || !r.PodVec(&m.split_server) || !r.Pod(&m.split_batch_size) ||
      !r.Pod(&m.split_lr) || !r.Pod(&m.split_momentum) || !r.Pod(&m.split_weight_decay) ||
      !r.Str(&m.split_optimizer) || !r.Pod(&m.split_beta1) || !r.Pod(&m.split_beta2) ||
      !r.Pod(&m.split_eps) || !r.done())
    return Malformed("work");
  return m;
}

std::string EncodeRankResults(const RankResults& m) {
  ByteWriter w;
  w.Pod(kResultsMagic);
  w.Pod<uint64_t>(m.jobs.size());
  for (const RankJobResult& j : m.jobs) {
    w.Pod(j.slot);
    w.Pod(j.code);
    w.Str(j.message);
    w.Pod<uint8_t>(j.abandoned);
    w.Pod(j.bytes_up);
    w.Vec(j.body);
    w.State(j.state);
    w.PodVec(j.control);
    w.Pod(j.split_batches);
    w.Pod(j.split_bytes_up);
    w.Pod(j.split_bytes_down);
    w.PodVec(j.split_copy);
    w.Pod(j.split_samples);
    w.Pod(j.split_bytes_in);
    w.Pod(j.split_bytes_out);
    w.Pod(j.split_seconds);
  }
  w.Pod<uint64_t>(m.slices.size());
  for (const RankSliceResult& s : m.slices) {
    w.Pod(s.slice);
    w.Pod(s.code);
    w.Str(s.message);
    w.Pod(s.loss);
    w.Pod(s.accuracy);
    w.Pod(s.num_examples);
  }
  w.Pod(m.busy_seconds);
  return w.Take();
}

Result<RankResults> DecodeRankResults(const std::string& bytes) {
  ByteReader r(bytes);
  uint32_t magic = 0;
  uint64_t n = 0;
  RankResults m;
  if (!r.Pod(&magic) || magic != kResultsMagic || !r.Count(&n, 6 * sizeof(uint64_t)))
    return Malformed("results");
  m.jobs.resize(n);
  for (RankJobResult& j : m.jobs) {
    uint8_t abandoned = 0;
    if (!r.Pod(&j.slot) || !r.Pod(&j.code) || !ValidCode(j.code) || !r.Str(&j.message) ||
        !r.Pod(&abandoned) || abandoned > 1 || !r.Pod(&j.bytes_up) || !r.Vec(&j.body) ||
        !r.State(&j.state) || !r.PodVec(&j.control) || !r.Pod(&j.split_batches) ||
        !r.Pod(&j.split_bytes_up) || !r.Pod(&j.split_bytes_down) || !r.PodVec(&j.split_copy) ||
        !r.Pod(&j.split_samples) || !r.Pod(&j.split_bytes_in) || !r.Pod(&j.split_bytes_out) ||
        !r.Pod(&j.split_seconds))
      return Malformed("results");
    j.abandoned = abandoned;
  }
  if (!r.Count(&n, 4 * sizeof(uint64_t))) return Malformed("results");
  m.slices.resize(n);
  for (RankSliceResult& s : m.slices)
    if (!r.Pod(&s.slice) || !r.Pod(&s.code) || !ValidCode(s.code) || !r.Str(&s.message) ||
        !r.Pod(&s.loss) || !r.Pod(&s.accuracy) || !r.Pod(&s.num_examples))
      return Malformed("results");
  if (!r.Pod(&m.busy_seconds) || !r.done()) return Malformed("results");
  return m;
}

}  // namespace tributary
