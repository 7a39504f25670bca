#include "aggregation/strategy_spec.h"

#include <cmath>

#include "core/parse_number.h"

namespace tributary {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool IsIdentifier(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
  return true;
}

Result<SpecStage> ParseStage(std::string_view spec, std::string_view text) {
  auto bad = [&](const std::string& what) {
    return Status::InvalidArgument("strategy '" + std::string(spec) + "': " + what);
  };
  text = Trim(text);
  SpecStage stage;
  const size_t open = text.find('(');
  const std::string_view name = Trim(text.substr(0, open));
  if (name.empty()) return bad("empty stage (expected a rule name such as 'fedavg')");
  if (!IsIdentifier(name))
    return bad("'" + std::string(name) + "' is not a rule name (lowercase letters, digits, '_')");
  stage.name = std::string(name);
  if (open == std::string_view::npos) return stage;
  const size_t close = text.find(')', open);
  if (close == std::string_view::npos) return bad("missing ')' after '" + stage.name + "('");
  if (close + 1 != text.size())
    return bad("unexpected text '" + std::string(text.substr(close + 1)) + "' after ')'");
  std::string_view body = Trim(text.substr(open + 1, close - open - 1));
  while (!body.empty()) {
    const size_t comma = body.find(',');
    const std::string_view item = Trim(body.substr(0, comma));
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos)
      return bad("parameter '" + std::string(item) + "' of " + stage.name +
                 " is not of the form key=value");
    const std::string key(Trim(item.substr(0, eq)));
    const std::string_view value = Trim(item.substr(eq + 1));
    if (!IsIdentifier(key)) return bad("'" + key + "' is not a parameter name");
    const std::optional<double> v = ParseWhole<double>(value);
    if (!v)
      return bad("key '" + key + "' of " + stage.name + " has value '" + std::string(value) +
                 "', which is not a finite number");
    for (const auto& [k, unused] : stage.params)
      if (k == key) return bad("key '" + key + "' of " + stage.name + " is given twice");
    stage.params.emplace_back(key, *v);
    if (comma == std::string_view::npos) break;
    body = body.substr(comma + 1);
    if (Trim(body).empty()) return bad("trailing ',' in the parameters of " + stage.name);
  }
  return stage;
}

}  // namespace

Result<std::vector<SpecStage>> ParseStrategySpec(std::string_view spec) {
  if (spec.size() > kMaxSpecLength)
    return Status::InvalidArgument("strategy spec is " + std::to_string(spec.size()) +
                                   " characters; at most " + std::to_string(kMaxSpecLength));
  std::vector<SpecStage> stages;
  int depth = 0;
  size_t start = 0;
  // '+' separates stages only outside parentheses ("tau=1e+3" stays one number).
  for (size_t i = 0; i <= spec.size(); ++i) {
    const char c = i < spec.size() ? spec[i] : '+';
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if (c == '+' && (depth == 0 || i == spec.size())) {
      TRIB_ASSIGN_OR_RETURN(SpecStage st, ParseStage(spec, spec.substr(start, i - start)));
      stages.push_back(std::move(st));
      start = i + 1;
    }
  }
  return stages;
}

}  // namespace tributary
