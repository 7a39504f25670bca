// The pipelines the codec fuzz target and its corpus generator exercise; byte 0 of an input picks
// one. Append only: the committed corpus refers to them by position.
#pragma once

#include <cstddef>

inline constexpr const char* kFuzzSpecs[] = {"dense",       "q8",           "q4",
                                             "q2",          "q1",           "sign",
                                             "zstd",        "topk(0.1)",    "topk(k=5)",
                                             "randk(0.25)", "topk(0.1)+q8", "topk(0.1)+q8+zstd",
                                             "sign+zstd",   "topk(0.5)+q4", "randk(0.5)+q2+zstd",
                                             "q8(chunk=8)", "sign(ef=1)",   "topk(0.1)+sign"};
inline constexpr size_t kNumFuzzSpecs = sizeof(kFuzzSpecs) / sizeof(kFuzzSpecs[0]);
