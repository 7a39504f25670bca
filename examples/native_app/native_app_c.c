/* native_app_c: native_app through the C API (tributary/native_c_api.h). It makes a trainer from a
 * model file and its own arrays, and a client around it: no fit callback, no layout of its own.
 *
 *   native_app_c HOST:PORT CA.crt ME.crt ME.key MODEL.toml [EXAMPLES] [SEED]
 *
 * Returns 0 when the coordinator ended the run, 1 when the run failed, 2 for bad arguments. */
#include <stdio.h>
#include <stdlib.h>

#include "patterns.h"
#include "tributary/native_c_api.h"

static void log_line(void* user_data, int level, const char* message) {
  (void)user_data;
  fprintf(stderr, "native_app_c: [%d] %s\n", level, message);
}

int main(int argc, char** argv) {
  if (argc < 6) {
    fprintf(stderr,
            "usage: native_app_c HOST:PORT CA.crt ME.crt ME.key MODEL.toml [EXAMPLES] [SEED]\n");
    return 2;
  }
  const long examples = argc > 6 ? strtol(argv[6], NULL, 10) : 600;
  const unsigned long long seed = argc > 7 ? strtoull(argv[7], NULL, 10) : 2;
  if (examples < 1 || examples > 1000000) {
    fprintf(stderr, "native_app_c: EXAMPLES must be in [1, 1000000]\n");
    return 2;
  }
  const size_t n = (size_t)examples, held = 500;
  float* features = malloc(n * PATTERNS_PIXELS * sizeof(float));
  uint8_t* labels = malloc(n);
  float* held_features = malloc(held * PATTERNS_PIXELS * sizeof(float));
  uint8_t* held_labels = malloc(held);
  float* probabilities = malloc(held * PATTERNS_CLASSES * sizeof(float));
  if (!features || !labels || !held_features || !held_labels || !probabilities) return 1;
  patterns_make(n, seed, 0.5f, features, labels);
  patterns_make(held, ~seed, 0.5f, held_features, held_labels);

  char error[512];
  tributary_native_options t;
  tributary_native_options_init(&t);
  t.model = argv[5];
  t.height = PATTERNS_SIDE;
  t.width = PATTERNS_SIDE;
  t.num_classes = PATTERNS_CLASSES;
  t.train.features = features;
  t.train.labels = labels;
  t.train.count = n;
  tributary_native_trainer* trainer = tributary_native_trainer_create(&t, error, sizeof error);
  if (!trainer) {
    fprintf(stderr, "native_app_c: %s\n", error);
    return 2;
  }
  printf("native_app_c: model %s, %zu parameters, %zu examples\n", argv[5],
         tributary_native_trainer_num_parameters(trainer), n);

  tributary_client_options o;
  tributary_client_options_init(&o);
  o.coordinator = argv[1];
  o.ca_cert_file = argv[2];
  o.cert_file = argv[3];
  o.key_file = argv[4];
  o.device = "cpu (native_app_c)";
  o.num_examples = n;
  o.max_attempts = 20;
  o.backoff_seed = seed;
  o.log_fn = log_line;
  o.log_level = TRIBUTARY_LOG_WARN;
  tributary_client* client = tributary_client_create_native(&o, trainer, error, sizeof error);
  if (!client) {
    fprintf(stderr, "native_app_c: %s\n", error);
    tributary_native_trainer_destroy(trainer); /* still ours: the client was not made */
    return 2;
  }
  int rc = tributary_client_run(client);
  if (rc != TRIBUTARY_OK) {
    fprintf(stderr, "native_app_c: %s: %s\n", tributary_status_name(rc),
            tributary_client_last_error(client));
    tributary_client_destroy(client);
    return 1;
  }
  rc = tributary_client_predict(client, held_features, held * PATTERNS_PIXELS, (int64_t)held,
                                probabilities, held * PATTERNS_CLASSES, error, sizeof error);
  if (rc != TRIBUTARY_OK) {
    fprintf(stderr, "native_app_c: predict: %s\n", error);
    tributary_client_destroy(client);
    return 1;
  }
  size_t correct = 0;
  for (size_t i = 0; i < held; ++i) {
    const float* row = probabilities + i * PATTERNS_CLASSES;
    int best = 0;
    for (int k = 1; k < PATTERNS_CLASSES; ++k)
      if (row[k] > row[best]) best = k;
    correct += best == held_labels[i];
  }
  printf(
      "native_app_c: the run ended; held-out accuracy of the latest global model %.4f (%zu of "
      "%zu)\n",
      (double)correct / held, correct, held);
  tributary_client_destroy(client); /* and the trainer with it */
  free(features);
  free(labels);
  free(held_features);
  free(held_labels);
  free(probabilities);
  return 0;
}
