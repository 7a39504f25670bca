#include "privacy/secagg/secagg_session.h"

#include <fmt/format.h>

#include <algorithm>

#include "compression/selection.h"
#include "crypto/hkdf.h"
#include "crypto/sha256.h"
#include "privacy/secagg/neighbour_graph.h"

namespace tributary {
namespace {

void PutU64(std::vector<uint8_t>& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}

void PutString(std::vector<uint8_t>& out, const std::string& s) {
  PutU64(out, s.size());
  out.insert(out.end(), s.begin(), s.end());
}

constexpr size_t kSecretLimbs = ShamirLimbs(32);  // 5

}  // namespace

std::vector<uint8_t> SecAggSession::KeysMessage(const SecAggKeys& keys) const {
  std::vector<uint8_t> m;
  PutString(m, "tributary secagg keys v1");
  PutString(m, run_id);
  PutU64(m, round);
  PutString(m, keys.client_id);
  m.insert(m.end(), keys.enc_public.begin(), keys.enc_public.end());
  m.insert(m.end(), keys.mask_public.begin(), keys.mask_public.end());
  return m;
}

std::vector<uint32_t> SecAggSession::Coordinates(size_t n) const {
  if (vector_length == 0 || vector_length - 1 >= n) return {};
  Sha256 h;
  h.Update(fmt::format("tributary secagg coordinates|{}|{}", run_id, round));
  const uint64_t seed = std::stoull(h.HexDigest().substr(0, 16), nullptr, 16);
  return RandKIndices(n, vector_length - 1, seed);
}

Result<Key32> SecAggSession::GraphSeed(const SecAggRoster& roster) const {
  std::vector<uint8_t> all;
  for (const SecAggKeys& k : roster.clients) {
    PutString(all, k.client_id);
    all.insert(all.end(), k.enc_public.begin(), k.enc_public.end());
    all.insert(all.end(), k.mask_public.begin(), k.mask_public.end());
  }
  Key32 seed;
  TRIB_RETURN_IF_ERROR(
      HkdfSha256(all, {}, fmt::format("tributary secagg graph|{}|{}", run_id, round), seed));
  return seed;
}

size_t SecAggSession::DegreeFor(size_t n) const {
  const size_t k = degree ? degree : NeighbourGraph::DefaultDegree(n, max_dropout);
  return std::min(k, n > 0 ? n - 1 : 0);
}

size_t SecAggSession::ThresholdFor(size_t n) const {
  return threshold ? threshold : NeighbourGraph::DefaultThreshold(DegreeFor(n));
}

Result<Key32> SecAggSession::ShareKey(const Key32& secret, const std::string& a,
                                      const std::string& b) const {
  Key32 key;
  TRIB_RETURN_IF_ERROR(HkdfSha256(secret, {},
                                  fmt::format("tributary secagg share key|{}|{}|{}|{}", run_id,
                                              round, std::min(a, b), std::max(a, b)),
                                  key));
  return key;
}

std::string SecAggSession::ShareContext(const std::string& from, const std::string& to) const {
  return fmt::format("tributary secagg share|{}|{}|{}|{}", run_id, round, from, to);
}

Result<Key32> SecAggSession::PairwiseSeed(const Key32& secret, const std::string& a,
                                          const std::string& b) const {
  Key32 seed;
  TRIB_RETURN_IF_ERROR(HkdfSha256(secret, {},
                                  fmt::format("tributary secagg pairwise mask|{}|{}|{}|{}", run_id,
                                              round, std::min(a, b), std::max(a, b)),
                                  seed));
  return seed;
}

std::vector<uint8_t> EncodeSharePair(const ShamirShare& self_seed, const ShamirShare& mask_key) {
  std::vector<uint8_t> out;
  PutU64(out, self_seed.x);
  for (uint64_t y : self_seed.y) PutU64(out, y);
  for (uint64_t y : mask_key.y) PutU64(out, y);
  return out;
}

Status DecodeSharePair(std::span<const uint8_t> bytes, ShamirShare* self_seed,
                       ShamirShare* mask_key) {
  const size_t want = 8 * (1 + 2 * kSecretLimbs);
  if (bytes.size() != want)
    return Status::InvalidArgument(
        fmt::format("a share pair has {} bytes, not {}", want, bytes.size()));
  auto get = [&](size_t i) {
    uint64_t v = 0;
    for (int b = 0; b < 8; ++b) v |= static_cast<uint64_t>(bytes[8 * i + b]) << (8 * b);
    return v;
  };
  const uint64_t x = get(0);
  if (x == 0 || x > 0xffffffffULL) return Status::InvalidArgument("a share pair's point is bad");
  self_seed->x = mask_key->x = static_cast<uint32_t>(x);
  self_seed->y.resize(kSecretLimbs);
  mask_key->y.resize(kSecretLimbs);
  for (size_t l = 0; l < kSecretLimbs; ++l) {
    self_seed->y[l] = get(1 + l);
    mask_key->y[l] = get(1 + kSecretLimbs + l);
  }
  return Status::Ok();
}

}  // namespace tributary
