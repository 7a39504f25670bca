// Codec pipeline specs: the string a run's config names (run.codec) and a TaskAssignment carries.
//
//   spec   := "dense" | stage ("+" stage)*
//   stage  := name [ "(" param ("," param)* ")" ]
//   sparsify (at most one, first):  topk(F) | topk(k=N)   [, ef=0|1]   default ef=1
//                                   randk(F) | randk(k=N)
//   values   (at most one, next):   q8 | q4 | q2 | q1     [chunk=C]    default chunk=512
//                                   sign                  [chunk=C] [, ef=0|1]   default ef=0
//   lossless (at most one, last):   zstd                  [level=L]    default level=3
// F is a fraction of the model in (0, 1] (k = max(1, round(F * n))); N is a count >= 1 (k =
// min(N, n)); C is a multiple of 8 in [8, 65536]; L is in [1, 19]. The delta against the global
// model is implicit: the client always encodes new - global. Spaces are ignored.
//
// ParseCodecSpec returns InvalidArgument naming the unknown stage or parameter, the stage out of
// order, or the value out of range. Canonical() writes the spec back in one form (defaults left
// out, shortest round-trip numbers), so two spellings of one pipeline compare equal.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tributary/result.h"

namespace tributary {

enum class Sparsifier { kNone, kTopK, kRandK };
enum class ValueCoding { kF32, kQuantized, kSign };

struct PipelineSpec {
  Sparsifier sparsifier = Sparsifier::kNone;
  double fraction = 0.0;  // k as a fraction of the model, when k == 0
  uint64_t k = 0;         // a fixed k; 0 when `fraction` is used
  bool error_feedback = false;
  ValueCoding values = ValueCoding::kF32;
  int bits = 32;         // 8, 4, 2 or 1 for kQuantized; 1 for kSign; 32 for kF32
  uint32_t chunk = 512;  // values per scale, for kQuantized and kSign
  bool zstd = false;
  int zstd_level = 3;

  // True for the plain "dense" pipeline (raw float32, nothing else).
  bool is_dense() const {
    return sparsifier == Sparsifier::kNone && values == ValueCoding::kF32 && !zstd;
  }
  std::string Canonical() const;
  // The stage names ("topk", "q8", "zstd", ...; "dense" for the plain pipeline), for negotiation.
  std::vector<std::string> StageNames() const;
  // The number of values the sparsifier keeps of n (n when there is no sparsifier).
  size_t KeepCount(size_t n) const;
};

Result<PipelineSpec> ParseCodecSpec(std::string_view spec);

// The stage names of `spec`, e.g. {"topk", "q8", "zstd"} for "topk(0.01)+q8+zstd";
// InvalidArgument when it does not parse.
Result<std::vector<std::string>> CodecStageNames(std::string_view spec);

// Whether a client advertising `advertised` (SupportedCodecs() of its build: stage names) can
// encode `spec`: every stage of spec is advertised. A spec that does not parse is spoken by nobody.
bool CanEncodeCodec(std::span<const std::string> advertised, std::string_view spec);

}  // namespace tributary
