// The app's own data for native_app: 8x8 single-channel images of 10 classes. Each class has a
// fixed pattern (a random image of 2x2 cells drawn from the task seed, the same in every app), and
// an example is its class's pattern plus Gaussian noise drawn from the app's own seed. Header-only
// C, so the C++ and the C app share it.
#ifndef NATIVE_APP_PATTERNS_H_
#define NATIVE_APP_PATTERNS_H_

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#define PATTERNS_SIDE 8
#define PATTERNS_PIXELS (PATTERNS_SIDE * PATTERNS_SIDE)
#define PATTERNS_CLASSES 10

/* xorshift64*: a small generator, enough for example data. */
static inline uint64_t patterns_next(uint64_t* s) {
  *s ^= *s >> 12;
  *s ^= *s << 25;
  *s ^= *s >> 27;
  return *s * 2685821657736338717ULL;
}
static inline double patterns_uniform(uint64_t* s) {
  return (double)(patterns_next(s) >> 11) * (1.0 / 9007199254740992.0);
}
static inline double patterns_gaussian(uint64_t* s) {
  const double u = patterns_uniform(s) + 1e-12, v = patterns_uniform(s);
  return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
}

/* Fills features[n * PATTERNS_PIXELS] and labels[n] with n examples. */
static inline void patterns_make(size_t n, uint64_t app_seed, float noise, float* features,
                                 uint8_t* labels) {
  float proto[PATTERNS_CLASSES][PATTERNS_PIXELS];
  uint64_t task = 0x9E3779B97F4A7C15ULL; /* the task: the same in every app */
  for (int k = 0; k < PATTERNS_CLASSES; ++k) {
    for (int cy = 0; cy < PATTERNS_SIDE; cy += 2) {
      for (int cx = 0; cx < PATTERNS_SIDE; cx += 2) {
        const float v = (float)patterns_uniform(&task);
        for (int y = cy; y < cy + 2; ++y)
          for (int x = cx; x < cx + 2; ++x) proto[k][y * PATTERNS_SIDE + x] = v;
      }
    }
  }
  uint64_t s = app_seed * 0x2545F4914F6CDD1DULL + 1;
  for (size_t i = 0; i < n; ++i) {
    const int k = (int)(patterns_next(&s) % PATTERNS_CLASSES);
    labels[i] = (uint8_t)k;
    for (int p = 0; p < PATTERNS_PIXELS; ++p)
      features[i * PATTERNS_PIXELS + p] = proto[k][p] + noise * (float)patterns_gaussian(&s);
  }
}

#endif /* NATIVE_APP_PATTERNS_H_ */
