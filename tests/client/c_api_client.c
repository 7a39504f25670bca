/* The C side of the C API test: compiled as C11, it uses only tributary/c_api.h. */
#include "tests/client/c_api_client.h"

#include <stdio.h>
#include <string.h>

#include "tributary/c_api.h"

typedef struct linear_app {
  float step;
  int fail_evaluate;
  int fit_calls;
} linear_app;

/* new[i] = global[i] + step * lr * (i + 1); 17 examples per epoch. */
static int linear_fit(void* user_data, const tributary_fit_config* config, const float* global,
                      float* weights, size_t num_floats, tributary_fit_result* result, char* error,
                      size_t error_size) {
  linear_app* app = (linear_app*)user_data;
  if (config->epochs < 1) {
    snprintf(error, error_size, "epochs must be >= 1, got %d", (int)config->epochs);
    return 1;
  }
  for (size_t i = 0; i < num_floats; ++i)
    weights[i] = global[i] + app->step * config->lr * (float)(i + 1);
  result->num_examples = 17 * (int64_t)config->epochs;
  result->loss = 0.125;
  result->accuracy = 0.875;
  app->fit_calls++;
  return 0;
}

static int linear_evaluate(void* user_data, const tributary_eval_config* config,
                           const float* weights, size_t num_floats, tributary_eval_result* result,
                           char* error, size_t error_size) {
  linear_app* app = (linear_app*)user_data;
  (void)config;
  if (app->fail_evaluate) {
    snprintf(error, error_size, "no evaluation data today");
    return 3;
  }
  double sum = 0.0;
  for (size_t i = 0; i < num_floats; ++i) sum += weights[i];
  result->num_examples = 5;
  result->loss = sum;
  result->accuracy = 0.5;
  return 0;
}

static const int64_t kWeightShape[2] = {2, 2};
static const int64_t kBiasShape[1] = {2};

static void fill_options(tributary_client_options* o, const char* coordinator, const char* ca,
                         const char* cert, const char* key, linear_app* app,
                         tributary_tensor* tensors) {
  tributary_client_options_init(o);
  tensors[0].name = "linear.weight";
  tensors[0].shape = kWeightShape;
  tensors[0].rank = 2;
  tensors[1].name = "linear.bias";
  tensors[1].shape = kBiasShape;
  tensors[1].rank = 1;
  o->coordinator = coordinator;
  o->ca_cert_file = ca;
  o->cert_file = cert;
  o->key_file = key;
  o->num_examples = 34;
  o->tensors = tensors;
  o->num_tensors = 2;
  o->fit = linear_fit;
  o->evaluate = linear_evaluate;
  o->user_data = app;
  o->backoff_initial_ms = 5;
  o->backoff_max_ms = 20;
}

int trib_c_run_client(const char* coordinator, const char* ca, const char* cert, const char* key,
                      int fail_evaluate, trib_c_outcome* outcome) {
  linear_app app = {1.0f, fail_evaluate, 0};
  tributary_tensor tensors[2];
  tributary_client_options o;
  fill_options(&o, coordinator, ca, cert, key, &app, tensors);
  memset(outcome, 0, sizeof(*outcome));
  tributary_client* client = tributary_client_create(&o, outcome->error, sizeof(outcome->error));
  if (!client) return -1;
  int rc = tributary_client_run(client);
  snprintf(outcome->error, sizeof(outcome->error), "%s", tributary_client_last_error(client));
  outcome->id_length = tributary_client_id(client, outcome->client_id, sizeof(outcome->client_id));
  tributary_client_destroy(client);
  outcome->fit_calls = app.fit_calls;
  return rc;
}

int trib_c_create_error(int which, char* error, size_t error_size) {
  linear_app app = {1.0f, 0, 0};
  tributary_tensor tensors[2];
  tributary_client_options o;
  fill_options(&o, "127.0.0.1:1", "ca.crt", "c.crt", "c.key", &app, tensors);
  switch (which) {
    case 0:
      o.fit = NULL;
      break;
    case 1:
      o.num_tensors = 0;
      break;
    case 2:
      tensors[1].name = "linear.weight";
      break; /* repeated name */
    case 3:
      o.coordinator = NULL;
      break;
    default:
      o.ca_cert_file = "/nonexistent/ca.crt";
      break;
  }
  tributary_client* client = tributary_client_create(&o, error, error_size);
  if (client) {
    tributary_client_destroy(client);
    return 0;
  }
  return 1;
}
