// Strategy spec strings: how a user names an aggregation rule, in TOML (`run.strategy`) or on a
// command line. Grammar (spaces allowed around every token):
//   spec   := stage ('+' stage)*
//   stage  := name [ '(' [ key '=' number (',' key '=' number)* ] ')' ]
//   name, key := [a-z0-9_]+      number := a finite decimal or exponent float (std::from_chars)
// e.g. "fedavg", "fedadam(server_lr=0.01, tau=1e-3)", "clip(norm=5)+krum(f=2)". Which names and
// keys exist is MakeStrategy's business (strategy_factory.h); this only parses.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tributary/result.h"

namespace tributary {

struct SpecStage {
  std::string name;
  std::vector<std::pair<std::string, double>> params;  // in the order written; keys unique
};

// InvalidArgument quoting the spec and saying what is malformed (an empty stage, a missing '=',
// an unparsable or non-finite number, a repeated key, text after ')'). Specs longer than
// kMaxSpecLength are refused.
inline constexpr size_t kMaxSpecLength = 1024;
Result<std::vector<SpecStage>> ParseStrategySpec(std::string_view spec);

}  // namespace tributary
