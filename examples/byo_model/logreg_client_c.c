/* logreg_client_c: bring your own model, in C (tributary/c_api.h). The same binary classifier
 * as logreg_client.cc: logistic regression ("weight" [1, D], "bias" [1]) or, with HIDDEN > 0, a
 * two-layer tanh net ("encoder/0.W" [H, D], "encoder/0.b" [H], "head:W" [1, H], "head:b" [1]),
 * trained by full-batch gradient descent, one step per epoch.
 *
 *   logreg_client_c HOST:PORT CA.crt ME.crt ME.key FEATURES.f32 LABELS.f32 DIM [HIDDEN]
 *
 * Exit status: 0 when the coordinator completed the run, 1 otherwise (the reason is printed). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tributary/c_api.h"

typedef struct model {
  long d, h; /* features, hidden units (0: logistic regression) */
  long n;    /* examples */
  float* x;  /* n x d */
  float* y;  /* n */
} model;

static float* read_floats(const char* path, long* count) {
  FILE* f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long bytes = ftell(f);
  fseek(f, 0, SEEK_SET);
  float* v = malloc((size_t)bytes);
  *count = bytes / (long)sizeof(float);
  if (v && fread(v, sizeof(float), (size_t)*count, f) != (size_t)*count) {
    free(v);
    v = NULL;
  }
  fclose(f);
  return v;
}

/* Mean binary cross-entropy of parameters `p` over the data; adds the gradient to `grad` when
 * not NULL. */
static double pass(const model* m, const float* p, float* grad, long* correct) {
  const long width = m->h == 0 ? m->d : m->h;
  const float* w1 = p;
  const float* b1 = p + m->h * m->d;
  const float* w2 = m->h == 0 ? p : b1 + m->h;
  const float* b2 = w2 + width;
  double* hid = malloc(sizeof(double) * (size_t)width);
  double loss = 0.0;
  *correct = 0;
  for (long i = 0; i < m->n; ++i) {
    const float* xi = m->x + i * m->d;
    for (long j = 0; j < width; ++j) {
      if (m->h == 0) {
        hid[j] = xi[j];
      } else {
        double s = b1[j];
        for (long k = 0; k < m->d; ++k) s += w1[j * m->d + k] * xi[k];
        hid[j] = tanh(s);
      }
    }
    double z = b2[0];
    for (long j = 0; j < width; ++j) z += w2[j] * hid[j];
    const double yi = m->y[i];
    loss += (z > 0 ? z : 0) - yi * z + log1p(exp(-fabs(z)));
    *correct += (z > 0) == (yi > 0.5);
    if (!grad) continue;
    const double g = (1.0 / (1.0 + exp(-z)) - yi) / (double)m->n;
    float* gw1 = grad;
    float* gb1 = grad + m->h * m->d;
    float* gw2 = m->h == 0 ? grad : gb1 + m->h;
    float* gb2 = gw2 + width;
    for (long j = 0; j < width; ++j) gw2[j] += (float)(g * hid[j]);
    gb2[0] += (float)g;
    for (long j = 0; j < m->h; ++j) {
      const double dh = g * w2[j] * (1.0 - hid[j] * hid[j]);
      for (long k = 0; k < m->d; ++k) gw1[j * m->d + k] += (float)(dh * xi[k]);
      gb1[j] += (float)dh;
    }
  }
  free(hid);
  return loss / (double)m->n;
}

static int fit(void* user, const tributary_fit_config* config, const float* global, float* weights,
               size_t num_floats, tributary_fit_result* result, char* error, size_t error_size) {
  (void)global; /* `weights` starts as a copy of it */
  const model* m = user;
  float* grad = malloc(sizeof(float) * num_floats);
  if (!grad) {
    snprintf(error, error_size, "out of memory");
    return 1;
  }
  long steps = config->epochs, correct = 0;
  if (config->max_steps > 0 && config->max_steps < steps) steps = (long)config->max_steps;
  double loss = 0.0;
  for (long s = 0; s < steps; ++s) {
    memset(grad, 0, sizeof(float) * num_floats);
    loss = pass(m, weights, grad, &correct);
    for (size_t i = 0; i < num_floats; ++i) weights[i] -= config->lr * grad[i];
  }
  free(grad);
  result->num_examples = m->n;
  result->loss = loss;
  result->accuracy = (double)correct / (double)m->n;
  return 0;
}

static int evaluate(void* user, const tributary_eval_config* config, const float* weights,
                    size_t num_floats, tributary_eval_result* result, char* error,
                    size_t error_size) {
  (void)config, (void)num_floats, (void)error, (void)error_size;
  const model* m = user;
  long correct = 0;
  result->loss = pass(m, weights, NULL, &correct);
  result->num_examples = m->n;
  result->accuracy = (double)correct / (double)m->n;
  return 0;
}

int main(int argc, char** argv) {
  if (argc < 8) {
    fprintf(stderr,
            "usage: %s HOST:PORT CA.crt ME.crt ME.key FEATURES.f32 LABELS.f32 DIM [HIDDEN]\n",
            argv[0]);
    return 2;
  }
  model m = {atol(argv[7]), argc > 8 ? atol(argv[8]) : 0, 0, NULL, NULL};
  long nx = 0;
  m.x = read_floats(argv[5], &nx);
  m.y = read_floats(argv[6], &m.n);
  if (!m.x || !m.y || m.d <= 0 || m.n <= 0 || nx != m.n * m.d) {
    fprintf(stderr, "%s: need FEATURES (n x DIM float32) and LABELS (n float32)\n", argv[0]);
    return 2;
  }
  /* The layout, declared to the coordinator: names, shapes and order. */
  const int64_t w_shape[2] = {1, m.d}, b_shape[1] = {1};
  const int64_t w1_shape[2] = {m.h, m.d}, b1_shape[1] = {m.h}, w2_shape[2] = {1, m.h};
  const tributary_tensor logreg[2] = {{"weight", w_shape, 2}, {"bias", b_shape, 1}};
  const tributary_tensor two_layer[4] = {{"encoder/0.W", w1_shape, 2},
                                         {"encoder/0.b", b1_shape, 1},
                                         {"head:W", w2_shape, 2},
                                         {"head:b", b_shape, 1}};
  tributary_client_options o;
  tributary_client_options_init(&o);
  o.coordinator = argv[1];
  o.ca_cert_file = argv[2];
  o.cert_file = argv[3];
  o.key_file = argv[4];
  o.num_examples = (uint64_t)m.n;
  o.tensors = m.h == 0 ? logreg : two_layer;
  o.num_tensors = m.h == 0 ? 2 : 4;
  o.fit = fit;
  o.evaluate = evaluate;
  o.user_data = &m;
  o.max_attempts = 20;
  char err[512];
  tributary_client* c = tributary_client_create(&o, err, sizeof err);
  if (!c) {
    fprintf(stderr, "%s: %s\n", argv[0], err);
    return 1;
  }
  const int rc = tributary_client_run(c);
  if (rc != TRIBUTARY_OK)
    fprintf(stderr, "%s: the run did not complete: %s: %s\n", argv[0], tributary_status_name(rc),
            tributary_client_last_error(c));
  else
    printf("%s: the run is complete\n", argv[0]);
  tributary_client_destroy(c);
  free(m.x);
  free(m.y);
  return rc == TRIBUTARY_OK ? 0 : 1;
}
