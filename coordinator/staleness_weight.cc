#include "coordinator/staleness_weight.h"

#include <fmt/format.h>

#include <cmath>
#include <vector>

#include "core/parse_number.h"

namespace tributary {
namespace {

std::vector<std::string_view> SplitColons(std::string_view s) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  for (size_t i = 0; i <= s.size(); ++i) {
    if (i == s.size() || s[i] == ':') {
      parts.push_back(s.substr(start, i - start));
      start = i + 1;
    }
  }
  return parts;
}

bool ParseNumber(std::string_view s, double* out) {
  const std::optional<double> v = ParseWhole<double>(s);
  if (v) *out = *v;
  return v.has_value();
}

}  // namespace

Result<StalenessWeight> StalenessWeight::Parse(std::string_view spec) {
  auto bad = [&](std::string_view why) {
    return Status::InvalidArgument(fmt::format(
        "key 'run.staleness_weight' = '{}': {} (choose 'constant', 'sqrt', 'polynomial:A' with A "
        "in [0, 10], or 'hinge:A:B' with A in (0, 10] and B >= 0)",
        spec, why));
  };
  StalenessWeight w;
  w.spec_ = std::string(spec);
  const std::vector<std::string_view> parts = SplitColons(spec);
  if (parts[0] == "constant" && parts.size() == 1) {
    w.kind_ = Kind::kConstant;
  } else if (parts[0] == "sqrt" && parts.size() == 1) {
    w.kind_ = Kind::kPolynomial;
    w.a_ = 0.5;
  } else if (parts[0] == "polynomial") {
    if (parts.size() != 2 || !ParseNumber(parts[1], &w.a_))
      return bad("polynomial takes one number");
    if (w.a_ < 0.0 || w.a_ > 10.0) return bad("A is out of range");
    w.kind_ = Kind::kPolynomial;
  } else if (parts[0] == "hinge") {
    if (parts.size() != 3 || !ParseNumber(parts[1], &w.a_) || !ParseNumber(parts[2], &w.b_))
      return bad("hinge takes two numbers");
    if (!(w.a_ > 0.0) || w.a_ > 10.0 || w.b_ < 0.0) return bad("A or B is out of range");
    w.kind_ = Kind::kHinge;
  } else {
    return bad("unknown weighting");
  }
  return w;
}

float StalenessWeight::operator()(uint64_t staleness) const {
  const double t = static_cast<double>(staleness);
  switch (kind_) {
    case Kind::kConstant:
      return 1.0f;
    case Kind::kPolynomial:
      return static_cast<float>(std::pow(1.0 + t, -a_));
    case Kind::kHinge:
      return t <= b_ ? 1.0f : static_cast<float>(1.0 / (a_ * (t - b_) + 1.0));
  }
  return 1.0f;
}

}  // namespace tributary
