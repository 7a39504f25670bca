#include "compression/codec_spec.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <optional>

#include "core/parse_number.h"

namespace tributary {
namespace {

struct Param {
  std::string key;  // empty for a positional parameter
  std::string value;
};

struct Stage {
  std::string name;
  std::vector<Param> params;
};

Status Bad(std::string_view spec, const std::string& why) {
  return Status::InvalidArgument("codec '" + std::string(spec) + "': " + why);
}

std::string Trim(std::string_view s) {
  std::string out;
  for (char c : s)
    if (c != ' ' && c != '\t') out.push_back(c);
  return out;
}

Result<std::vector<Stage>> SplitStages(std::string_view spec) {
  const std::string s = Trim(spec);
  std::vector<Stage> stages;
  size_t i = 0;
  while (i <= s.size()) {
    Stage st;
    const size_t name_end = s.find_first_of("(+", i);
    st.name = s.substr(i, name_end == std::string::npos ? std::string::npos : name_end - i);
    if (st.name.empty()) return Bad(spec, "empty stage at position " + std::to_string(i));
    i = name_end == std::string::npos ? s.size() : name_end;
    if (i < s.size() && s[i] == '(') {
      const size_t close = s.find(')', i);
      if (close == std::string::npos) return Bad(spec, "stage '" + st.name + "' has no ')'");
      std::string_view args(s.data() + i + 1, close - i - 1);
      if (args.empty()) return Bad(spec, "stage '" + st.name + "' has empty parentheses");
      while (!args.empty()) {
        const size_t comma = args.find(',');
        std::string_view p = args.substr(0, comma);
        args = comma == std::string_view::npos ? std::string_view() : args.substr(comma + 1);
        if (p.empty()) return Bad(spec, "stage '" + st.name + "' has an empty parameter");
        const size_t eq = p.find('=');
        if (eq == std::string_view::npos)
          st.params.push_back({"", std::string(p)});
        else
          st.params.push_back({std::string(p.substr(0, eq)), std::string(p.substr(eq + 1))});
        if (comma == std::string_view::npos) break;
        if (args.empty()) return Bad(spec, "stage '" + st.name + "' has an empty parameter");
      }
      i = close + 1;
    }
    stages.push_back(std::move(st));
    if (i >= s.size()) break;
    if (s[i] != '+')
      return Bad(spec, "expected '+' after stage '" + stages.back().name + "', found '" +
                           s.substr(i, 1) + "'");
    ++i;
    if (i == s.size()) return Bad(spec, "ends with '+'");
  }
  return stages;
}

Result<double> ParseDouble(std::string_view spec, const std::string& what, const std::string& v) {
  const std::optional<double> d = ParseWhole<double>(v);
  if (!d) return Bad(spec, what + " '" + v + "' is not a number");
  return *d;
}

Result<uint64_t> ParseUint(std::string_view spec, const std::string& what, const std::string& v,
                           uint64_t lo, uint64_t hi) {
  const std::optional<uint64_t> parsed = ParseWhole<uint64_t>(v);
  if (!parsed) return Bad(spec, what + " '" + v + "' is not a non-negative integer");
  const uint64_t x = *parsed;
  if (x < lo || x > hi)
    return Bad(spec, what + " " + v + " is outside [" + std::to_string(lo) + ", " +
                         std::to_string(hi) + "]");
  return x;
}

std::string FormatDouble(double d) {
  char buf[64];
  auto [p, ec] = std::to_chars(buf, buf + sizeof(buf), d);
  return std::string(buf, p);
}

// Applies one stage's parameters; `allowed` lists the named keys it takes.
Status ApplyStage(std::string_view spec, const Stage& st, PipelineSpec* out) {
  const std::string& n = st.name;
  auto unknown = [&](const Param& p) {
    return Bad(spec, p.key.empty()
                         ? "stage '" + n + "' takes no positional parameter (got '" + p.value + "')"
                         : "stage '" + n + "' has no parameter '" + p.key + "'");
  };
  if (n == "topk" || n == "randk") {
    out->sparsifier = n == "topk" ? Sparsifier::kTopK : Sparsifier::kRandK;
    out->error_feedback = n == "topk";
    bool have_k = false;
    for (const Param& p : st.params) {
      if (p.key.empty() || p.key == "fraction") {
        TRIB_ASSIGN_OR_RETURN(out->fraction, ParseDouble(spec, n + " fraction", p.value));
        if (!(out->fraction > 0.0 && out->fraction <= 1.0))
          return Bad(spec, n + " fraction " + p.value + " is outside (0, 1]");
        have_k = true;
      } else if (p.key == "k") {
        TRIB_ASSIGN_OR_RETURN(out->k, ParseUint(spec, n + " k", p.value, 1, UINT32_MAX));
        have_k = true;
      } else if (p.key == "ef" && n == "topk") {
        TRIB_ASSIGN_OR_RETURN(uint64_t ef, ParseUint(spec, "topk ef", p.value, 0, 1));
        out->error_feedback = ef == 1;
      } else {
        return unknown(p);
      }
    }
    if (!have_k) return Bad(spec, n + " needs a fraction or k=N, e.g. " + n + "(0.01)");
    if (out->k != 0 && out->fraction != 0.0)
      return Bad(spec, n + " takes a fraction or k=N, not both");
    return Status::Ok();
  }
  if (n == "q8" || n == "q4" || n == "q2" || n == "q1" || n == "sign") {
    out->values = n == "sign" ? ValueCoding::kSign : ValueCoding::kQuantized;
    out->bits = n == "sign" ? 1 : n[1] - '0';
    for (const Param& p : st.params) {
      if (p.key == "chunk") {
        TRIB_ASSIGN_OR_RETURN(uint64_t c, ParseUint(spec, n + " chunk", p.value, 8, 65536));
        if (c % 8 != 0) return Bad(spec, n + " chunk " + p.value + " is not a multiple of 8");
        out->chunk = static_cast<uint32_t>(c);
      } else if (p.key == "ef" && n == "sign") {
        TRIB_ASSIGN_OR_RETURN(uint64_t ef, ParseUint(spec, "sign ef", p.value, 0, 1));
        out->error_feedback = out->error_feedback || ef == 1;
      } else {
        return unknown(p);
      }
    }
    return Status::Ok();
  }
  if (n == "zstd") {
    out->zstd = true;
    for (const Param& p : st.params) {
      if (p.key != "level") return unknown(p);
      TRIB_ASSIGN_OR_RETURN(uint64_t l, ParseUint(spec, "zstd level", p.value, 1, 19));
      out->zstd_level = static_cast<int>(l);
    }
    return Status::Ok();
  }
  return Bad(spec,
             "unknown stage '" + n + "' (stages: dense, topk, randk, q8, q4, q2, q1, sign, zstd)");
}

int Rank(const std::string& name) {
  if (name == "topk" || name == "randk") return 0;
  if (name == "zstd") return 2;
  return 1;
}

}  // namespace

Result<PipelineSpec> ParseCodecSpec(std::string_view spec) {
  PipelineSpec out;
  if (Trim(spec).empty()) return Bad(spec, "empty spec (use \"dense\" for no compression)");
  TRIB_ASSIGN_OR_RETURN(std::vector<Stage> stages, SplitStages(spec));
  if (stages.size() == 1 && stages[0].name == "dense") {
    if (!stages[0].params.empty()) return Bad(spec, "stage 'dense' takes no parameters");
    return out;
  }
  int last_rank = -1;
  std::string last;
  for (const Stage& st : stages) {
    if (st.name == "dense")
      return Bad(spec, "'dense' is a whole pipeline; it does not combine with other stages");
    const int r = Rank(st.name);
    TRIB_RETURN_IF_ERROR(ApplyStage(spec, st, &out));
    if (r == last_rank)
      return Bad(spec, "stages '" + last + "' and '" + st.name + "' do the same job; use one");
    if (r < last_rank)
      return Bad(spec, "stage '" + st.name + "' must come before '" + last +
                           "' (order: topk|randk, then q8|q4|q2|q1|sign, then zstd)");
    last_rank = r;
    last = st.name;
  }
  return out;
}

std::string PipelineSpec::Canonical() const {
  if (is_dense()) return "dense";
  std::vector<std::string> stages;
  if (sparsifier != Sparsifier::kNone) {
    std::string s = sparsifier == Sparsifier::kTopK ? "topk(" : "randk(";
    s += k != 0 ? "k=" + std::to_string(k) : FormatDouble(fraction);
    if (sparsifier == Sparsifier::kTopK && !error_feedback) s += ",ef=0";
    stages.push_back(s + ")");
  }
  if (values != ValueCoding::kF32) {
    std::string s = values == ValueCoding::kSign ? "sign" : "q" + std::to_string(bits);
    std::vector<std::string> params;
    if (chunk != 512) params.push_back("chunk=" + std::to_string(chunk));
    if (values == ValueCoding::kSign && error_feedback && sparsifier != Sparsifier::kTopK)
      params.push_back("ef=1");
    for (size_t i = 0; i < params.size(); ++i) s += (i == 0 ? "(" : ",") + params[i];
    stages.push_back(params.empty() ? s : s + ")");
  }
  if (zstd)
    stages.push_back(zstd_level == 3 ? "zstd" : "zstd(level=" + std::to_string(zstd_level) + ")");
  std::string out;
  for (const std::string& s : stages) out += (out.empty() ? "" : "+") + s;
  return out;
}

std::vector<std::string> PipelineSpec::StageNames() const {
  if (is_dense()) return {"dense"};
  std::vector<std::string> out;
  if (sparsifier == Sparsifier::kTopK) out.push_back("topk");
  if (sparsifier == Sparsifier::kRandK) out.push_back("randk");
  if (values == ValueCoding::kQuantized) out.push_back("q" + std::to_string(bits));
  if (values == ValueCoding::kSign) out.push_back("sign");
  if (zstd) out.push_back("zstd");
  return out;
}

size_t PipelineSpec::KeepCount(size_t n) const {
  if (sparsifier == Sparsifier::kNone || n == 0) return n;
  if (k != 0) return static_cast<size_t>(std::min<uint64_t>(k, n));
  const double want = std::round(fraction * static_cast<double>(n));
  return std::clamp<size_t>(static_cast<size_t>(want), 1, n);
}

Result<std::vector<std::string>> CodecStageNames(std::string_view spec) {
  TRIB_ASSIGN_OR_RETURN(PipelineSpec p, ParseCodecSpec(spec));
  return p.StageNames();
}

bool CanEncodeCodec(std::span<const std::string> advertised, std::string_view spec) {
  Result<std::vector<std::string>> names = CodecStageNames(spec);
  if (!names.ok()) return false;
  for (const std::string& n : *names)
    if (std::find(advertised.begin(), advertised.end(), n) == advertised.end()) return false;
  return true;
}

}  // namespace tributary
