// What the recurrent layers (LSTM, GRU) share: their shape and where their four parameter tensors
// lie in the flat buffer, for the CPU layers (train/cpu/lstm.h, gru.h) and the CUDA ones.
#pragma once

#include <cstdint>

namespace tributary {

// A sample is `steps` steps of `features` values; `units` hidden units; the output is every step's
// hidden state (`sequences`) or the last one's.
struct RecurrentShape {
  int64_t steps = 1, features = 1, units = 1;
  bool sequences = false;
};

// The four tensors of a layer with `gates` rows (4 units for an LSTM, 3 for a GRU), in
// ParameterLayout's order: weight_ih [gates, features], weight_hh [gates, units], bias_ih [gates],
// bias_hh [gates].
struct RecurrentParams {
  float *w_ih = nullptr, *w_hh = nullptr, *b_ih = nullptr, *b_hh = nullptr;

  static int64_t Count(int64_t gates, const RecurrentShape& sh) {
    return gates * (sh.features + sh.units) + 2 * gates;
  }
  // The tensors of the buffer that starts at `base`.
  static RecurrentParams In(float* base, int64_t gates, const RecurrentShape& sh) {
    RecurrentParams p;
    p.w_ih = base;
    p.w_hh = p.w_ih + gates * sh.features;
    p.b_ih = p.w_hh + gates * sh.units;
    p.b_hh = p.b_ih + gates;
    return p;
  }
};

}  // namespace tributary
