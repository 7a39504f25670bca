/* edge_app_c: the example app written in C against tributary/c_api.h.
 *
 * Same model layout as the C++ app (Tributary's "mlp": 784-200-200-10), but this client only
 * fine-tunes the output layer (fc3) on the features the frozen lower layers produce — a common
 * choice on small devices. Its delta is therefore zero outside fc3.
 *
 *   edge_app_c HOST:PORT CA.crt ME.crt ME.key [SEED]
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tributary/c_api.h"

enum { kIn = 784, kH1 = 200, kH2 = 200, kOut = 10, kExamples = 300 };

typedef struct app {
  float* x; /* kExamples x kIn */
  int* y;
} app;

/* Offsets of the tensors in the flat buffer, in layout order. */
enum {
  kW1 = 0,
  kB1 = kW1 + kH1 * kIn,
  kW2 = kB1 + kH1,
  kB2 = kW2 + kH2 * kH1,
  kW3 = kB2 + kH2,
  kB3 = kW3 + kOut * kH2,
  kTotal = kB3 + kOut
};

static float next_uniform(unsigned long long* s) { /* xorshift64*, in [0, 1) */
  *s ^= *s >> 12;
  *s ^= *s << 25;
  *s ^= *s >> 27;
  return (float)((*s * 2685821657736338717ULL) >> 40) / 16777216.0f;
}

static void make_data(app* a, unsigned long long seed) {
  static float proto[kOut][kIn];
  unsigned long long task = 2024, s = seed * 2654435761ULL + 1;
  for (int c = 0; c < kOut; ++c)
    for (int f = 0; f < kIn; ++f) proto[c][f] = next_uniform(&task);
  a->x = malloc(sizeof(float) * kExamples * kIn);
  a->y = malloc(sizeof(int) * kExamples);
  for (int i = 0; i < kExamples; ++i) {
    int c = (int)(next_uniform(&s) * kOut);
    a->y[i] = c;
    for (int f = 0; f < kIn; ++f) a->x[i * kIn + f] = proto[c][f] + (next_uniform(&s) - 0.5f);
  }
}

static void dense_relu(const float* w, const float* b, const float* in, int n_in, float* out,
                       int n_out) {
  for (int o = 0; o < n_out; ++o) {
    float s = b[o];
    for (int k = 0; k < n_in; ++k) s += w[o * n_in + k] * in[k];
    out[o] = s > 0 ? s : 0;
  }
}

/* Features of example i under the frozen fc1/fc2, and the softmax of fc3 on them. */
static void forward(const float* p, const float* x, float* h2, float* prob) {
  float h1[kH1];
  dense_relu(p + kW1, p + kB1, x, kIn, h1, kH1);
  dense_relu(p + kW2, p + kB2, h1, kH1, h2, kH2);
  float mx = -1e30f, sum = 0;
  for (int c = 0; c < kOut; ++c) {
    float z = p[kB3 + c];
    for (int k = 0; k < kH2; ++k) z += p[kW3 + c * kH2 + k] * h2[k];
    prob[c] = z;
    if (z > mx) mx = z;
  }
  for (int c = 0; c < kOut; ++c) sum += (prob[c] = expf(prob[c] - mx));
  for (int c = 0; c < kOut; ++c) prob[c] /= sum;
}

static int fit(void* user, const tributary_fit_config* cfg, const float* global, float* w, size_t n,
               tributary_fit_result* r, char* err, size_t err_size) {
  app* a = user;
  (void)global; /* w already holds a copy of global */
  if (n != kTotal) {
    snprintf(err, err_size, "expected %d floats, got %zu", kTotal, n);
    return 1;
  }
  double loss = 0;
  int correct = 0;
  float h2[kH2], prob[kOut];
  static float g_w[kOut * kH2], g_b[kOut];
  const int batch = cfg->batch_size > 0 ? cfg->batch_size : 32;
  for (int e = 0; e < cfg->epochs; ++e) {
    loss = 0;
    correct = 0;
    for (int begin = 0; begin < kExamples; begin += batch) { /* minibatch SGD on fc3 only */
      const int end = begin + batch < kExamples ? begin + batch : kExamples;
      memset(g_w, 0, sizeof g_w);
      memset(g_b, 0, sizeof g_b);
      for (int i = begin; i < end; ++i) {
        forward(w, a->x + i * kIn, h2, prob);
        int best = 0;
        for (int c = 1; c < kOut; ++c) best = prob[c] > prob[best] ? c : best;
        correct += best == a->y[i];
        loss -= log(prob[a->y[i]] + 1e-12);
        for (int c = 0; c < kOut; ++c) {
          const float g = prob[c] - (c == a->y[i]);
          for (int k = 0; k < kH2; ++k) g_w[c * kH2 + k] += g * h2[k];
          g_b[c] += g;
        }
      }
      const float step = cfg->lr / (float)(end - begin);
      for (int j = 0; j < kOut * kH2; ++j) w[kW3 + j] -= step * g_w[j];
      for (int c = 0; c < kOut; ++c) w[kB3 + c] -= step * g_b[c];
    }
  }
  r->num_examples = kExamples;
  r->loss = loss / kExamples;
  r->accuracy = (double)correct / kExamples;
  return 0;
}

static int evaluate(void* user, const tributary_eval_config* cfg, const float* w, size_t n,
                    tributary_eval_result* r, char* err, size_t err_size) {
  app* a = user;
  (void)cfg;
  if (n != kTotal) {
    snprintf(err, err_size, "expected %d floats, got %zu", kTotal, n);
    return 1;
  }
  float h2[kH2], prob[kOut];
  double loss = 0;
  int correct = 0;
  for (int i = 0; i < kExamples; ++i) {
    forward(w, a->x + i * kIn, h2, prob);
    int best = 0;
    for (int c = 1; c < kOut; ++c) best = prob[c] > prob[best] ? c : best;
    correct += best == a->y[i];
    loss -= log(prob[a->y[i]] + 1e-12);
  }
  r->num_examples = kExamples;
  r->loss = loss / kExamples;
  r->accuracy = (double)correct / kExamples;
  return 0;
}

/* The library prints nothing unless asked; this app wants its warnings and errors (reconnects,
 * refusals) on stderr. Called on the client's threads, one call at a time. */
static void log_line(void* user_data, int level, const char* message) {
  static const char* const names[] = {"trace", "debug", "info", "warn", "error"};
  (void)user_data;
  fprintf(stderr, "edge_app_c: [%s] %s\n", level >= 0 && level < 5 ? names[level] : "?", message);
}

int main(int argc, char** argv) {
  if (argc < 5) {
    fprintf(stderr, "usage: %s HOST:PORT CA.crt ME.crt ME.key [SEED]\n", argv[0]);
    return 2;
  }
  app a;
  make_data(&a, argc > 5 ? strtoull(argv[5], NULL, 10) : 1);

  static const int64_t w1[] = {kH1, kIn}, b1[] = {kH1}, w2[] = {kH2, kH1}, b2[] = {kH2},
                       w3[] = {kOut, kH2}, b3[] = {kOut};
  const tributary_tensor tensors[] = {{"fc1.weight", w1, 2}, {"fc1.bias", b1, 1},
                                      {"fc2.weight", w2, 2}, {"fc2.bias", b2, 1},
                                      {"fc3.weight", w3, 2}, {"fc3.bias", b3, 1}};
  tributary_client_options o;
  tributary_client_options_init(&o);
  o.coordinator = argv[1];
  o.ca_cert_file = argv[2];
  o.cert_file = argv[3];
  o.key_file = argv[4];
  o.device = "cpu (edge_app_c)";
  o.num_examples = kExamples;
  o.tensors = tensors;
  o.num_tensors = 6;
  o.fit = fit;
  o.evaluate = evaluate;
  o.user_data = &a;
  o.log_fn = log_line;
  o.log_level = TRIBUTARY_LOG_WARN;

  char error[1024];
  tributary_client* client = tributary_client_create(&o, error, sizeof error);
  if (!client) {
    fprintf(stderr, "edge_app_c: %s\n", error);
    return 2;
  }
  int rc = tributary_client_run(client);
  if (rc != TRIBUTARY_OK)
    fprintf(stderr, "edge_app_c: %s\n", tributary_client_last_error(client));
  else
    printf("edge_app_c: the coordinator ended the run\n");
  tributary_client_destroy(client);
  free(a.x);
  free(a.y);
  return rc == TRIBUTARY_OK ? 0 : 1;
}
