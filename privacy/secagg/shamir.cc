#include "privacy/secagg/shamir.h"

#include <fmt/format.h>

#include <set>

#include "crypto/secure_random.h"

namespace tributary {
namespace {

constexpr uint64_t P = kShamirPrime;

// Uniform field elements from the CSPRNG, by rejection (61 random bits; p itself is rejected).
Status RandomElements(std::span<uint64_t> out) {
  size_t i = 0;
  std::vector<uint64_t> words(out.size() + 4);
  while (i < out.size()) {
    TRIB_RETURN_IF_ERROR(SecureRandomBytes(
        std::span(reinterpret_cast<uint8_t*>(words.data()), words.size() * sizeof(uint64_t))));
    for (uint64_t w : words) {
      const uint64_t e = w & P;
      if (e != P && i < out.size()) out[i++] = e;
    }
  }
  return Status::Ok();
}

// The polynomials (one per limb) through the first `t` shares' points, in Newton form: built once
// in O(t^2) per limb with one field inversion in all (Montgomery's batch trick over the points'
// differences), then evaluated anywhere in O(t). Interpolating afresh with Lagrange's formula for
// the secret and again for each further share cost O(t^2) inversions per limb and point, seconds
// for a thousand clients' secrets.
class NewtonPolynomials {
 public:
  NewtonPolynomials(std::span<const ShamirShare> shares, size_t t, size_t limbs)
      : t_(t), x_(t), coef_(limbs * t) {
    for (size_t i = 0; i < t; ++i) x_[i] = shares[i].x;
    // inv[i (i - 1) / 2 + j] = 1 / (x_i - x_j) for i > j, all from one inversion.
    std::vector<uint64_t> diffs, prefix;
    diffs.reserve(t * (t - 1) / 2);
    for (size_t i = 1; i < t; ++i)
      for (size_t j = 0; j < i; ++j) diffs.push_back(FieldSub(x_[i], x_[j]));
    prefix.resize(diffs.size() + 1, 1);
    for (size_t k = 0; k < diffs.size(); ++k) prefix[k + 1] = FieldMul(prefix[k], diffs[k]);
    uint64_t inv_all = diffs.empty() ? 1 : FieldInverse(prefix.back());
    std::vector<uint64_t> inv(diffs.size());
    for (size_t k = diffs.size(); k-- > 0;) {
      inv[k] = FieldMul(inv_all, prefix[k]);
      inv_all = FieldMul(inv_all, diffs[k]);
    }
    // Divided differences, in place: c_i = f[x_0..x_i].
    for (size_t l = 0; l < limbs; ++l) {
      uint64_t* c = &coef_[l * t];
      for (size_t i = 0; i < t; ++i) c[i] = shares[i].y[l];
      for (size_t order = 1; order < t; ++order)
        for (size_t i = t - 1; i >= order; --i)
          c[i] = FieldMul(FieldSub(c[i], c[i - 1]), inv[i * (i - 1) / 2 + (i - order)]);
    }
  }

  // The value at `at` of limb `limb`'s polynomial.
  uint64_t At(size_t limb, uint64_t at) const {
    const uint64_t* c = &coef_[limb * t_];
    uint64_t acc = c[t_ - 1];
    for (size_t i = t_ - 1; i-- > 0;) acc = FieldAdd(FieldMul(acc, FieldSub(at, x_[i])), c[i]);
    return acc;
  }

 private:
  size_t t_;
  std::vector<uint64_t> x_, coef_;
};

}  // namespace

uint64_t FieldAdd(uint64_t a, uint64_t b) {
  uint64_t s = a + b;
  return s >= P ? s - P : s;
}

uint64_t FieldSub(uint64_t a, uint64_t b) { return a >= b ? a - b : a + P - b; }

uint64_t FieldMul(uint64_t a, uint64_t b) {
  const unsigned __int128 m = static_cast<unsigned __int128>(a) * b;
  // 2^61 = 1 (mod p): fold the high bits onto the low ones.
  uint64_t r = static_cast<uint64_t>(m & P) + static_cast<uint64_t>(m >> 61);
  r = (r & P) + (r >> 61);
  return r >= P ? r - P : r;
}

uint64_t FieldInverse(uint64_t a) {
  // Fermat: a^(p-2).
  uint64_t result = 1, base = a, e = P - 2;
  while (e) {
    if (e & 1) result = FieldMul(result, base);
    base = FieldMul(base, base);
    e >>= 1;
  }
  return result;
}

Result<std::vector<ShamirShare>> ShamirSplit(std::span<const uint8_t> secret, size_t threshold,
                                             std::span<const uint32_t> xs) {
  if (secret.empty() || secret.size() > kShamirMaxSecretBytes)
    return Status::InvalidArgument(fmt::format("a shared secret has 1..{} bytes, not {}",
                                               kShamirMaxSecretBytes, secret.size()));
  if (threshold < 1 || threshold > xs.size())
    return Status::InvalidArgument(
        fmt::format("the sharing threshold {} must be in [1, {}] (the number of holders)",
                    threshold, xs.size()));
  std::set<uint32_t> seen;
  for (uint32_t x : xs)
    if (x == 0 || !seen.insert(x).second)
      return Status::InvalidArgument(fmt::format("share point {} is zero or repeated", x));
  const size_t limbs = ShamirLimbs(secret.size());
  // coeffs[l * threshold + k]: coefficient k of limb l's polynomial; k = 0 is the limb itself.
  std::vector<uint64_t> coeffs(limbs * threshold);
  for (size_t l = 0; l < limbs; ++l) {
    TRIB_RETURN_IF_ERROR(
        RandomElements(std::span(coeffs).subspan(l * threshold + 1, threshold - 1)));
    uint64_t v = 0;
    for (size_t b = 0; b < kShamirLimbBytes && l * kShamirLimbBytes + b < secret.size(); ++b)
      v |= static_cast<uint64_t>(secret[l * kShamirLimbBytes + b]) << (8 * b);
    coeffs[l * threshold] = v;  // < 2^56 < p
  }
  std::vector<ShamirShare> shares(xs.size());
  for (size_t h = 0; h < xs.size(); ++h) {
    shares[h].x = xs[h];
    shares[h].y.resize(limbs);
    for (size_t l = 0; l < limbs; ++l) {
      uint64_t acc = 0;  // Horner
      for (size_t k = threshold; k-- > 0;)
        acc = FieldAdd(FieldMul(acc, xs[h]), coeffs[l * threshold + k]);
      shares[h].y[l] = acc;
    }
  }
  return shares;
}

Status CheckShamirShare(const ShamirShare& share, size_t secret_bytes) {
  if (share.x == 0) return Status::InvalidArgument("share point 0 is zero or repeated");
  const size_t limbs = ShamirLimbs(secret_bytes);
  if (share.y.size() != limbs)
    return Status::InvalidArgument(fmt::format("share {} holds {} limbs; a {}-byte secret has {}",
                                               share.x, share.y.size(), secret_bytes, limbs));
  for (uint64_t y : share.y)
    if (y >= P) return Status::InvalidArgument(fmt::format("share {} holds a value >= p", share.x));
  return Status::Ok();
}

Result<std::vector<uint8_t>> ShamirCombine(std::span<const ShamirShare> shares, size_t threshold,
                                           size_t secret_bytes) {
  if (secret_bytes == 0 || secret_bytes > kShamirMaxSecretBytes)
    return Status::InvalidArgument(fmt::format("a shared secret has 1..{} bytes, not {}",
                                               kShamirMaxSecretBytes, secret_bytes));
  if (threshold < 1 || shares.size() < threshold)
    return Status::FailedPrecondition(fmt::format(
        "{} shares cannot recover a secret shared with threshold {}", shares.size(), threshold));
  const size_t limbs = ShamirLimbs(secret_bytes);
  std::set<uint32_t> seen;
  for (const ShamirShare& s : shares) {
    TRIB_RETURN_IF_ERROR(CheckShamirShare(s, secret_bytes));
    if (!seen.insert(s.x).second)
      return Status::InvalidArgument(fmt::format("share point {} is zero or repeated", s.x));
  }
  std::vector<uint8_t> secret(secret_bytes);
  const NewtonPolynomials poly(shares, threshold, limbs);
  for (size_t l = 0; l < limbs; ++l) {
    const uint64_t v = poly.At(l, 0);
    for (size_t extra = threshold; extra < shares.size(); ++extra)
      if (poly.At(l, shares[extra].x) != shares[extra].y[l])
        return Status::Corruption(fmt::format(
            "share {} does not lie on the polynomial of the others: a share was changed",
            shares[extra].x));
    const size_t bytes_here = std::min(kShamirLimbBytes, secret_bytes - l * kShamirLimbBytes);
    if (v >> (8 * bytes_here))
      return Status::Corruption("the recovered secret is out of range: a share was changed");
    for (size_t b = 0; b < bytes_here; ++b)
      secret[l * kShamirLimbBytes + b] = static_cast<uint8_t>(v >> (8 * b));
  }
  return secret;
}

}  // namespace tributary
