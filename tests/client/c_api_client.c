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
  if (!config->optimizer || strcmp(config->optimizer, "sgd") != 0 || config->beta2 != 0.999f) {
    snprintf(error, error_size, "expected the default optimizer, sgd, and beta2 0.999");
    return 4;
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

/* y = W x + b, W row-major [2, 2]: y[j] = W[j][0] x[0] + W[j][1] x[1] + b[j]. */
static int linear_predict(void* user_data, const float* weights, size_t num_floats,
                          const float* inputs, size_t inputs_len, int64_t count, float* outputs,
                          size_t outputs_len, char* error, size_t error_size) {
  (void)user_data;
  if (num_floats != 6 || outputs_len != 2 * (size_t)count) {
    snprintf(error, error_size, "unexpected sizes: %zu weights, %zu outputs", num_floats,
             outputs_len);
    return 2;
  }
  if (inputs_len != 2 * (size_t)count) {
    snprintf(error, error_size, "the model takes 2 inputs per sample; got %zu for %lld samples",
             inputs_len, (long long)count);
    return 1;
  }
  for (int64_t n = 0; n < count; ++n) {
    const float* x = inputs + 2 * n;
    for (int j = 0; j < 2; ++j)
      outputs[2 * n + j] = weights[2 * j] * x[0] + weights[2 * j + 1] * x[1] + weights[4 + j];
  }
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

static int run(const tributary_client_options* o, linear_app* app, trib_c_outcome* outcome) {
  memset(outcome, 0, sizeof(*outcome));
  tributary_client* client = tributary_client_create(o, outcome->error, sizeof(outcome->error));
  if (!client) return -1;
  int rc = tributary_client_run(client);
  snprintf(outcome->error, sizeof(outcome->error), "%s", tributary_client_last_error(client));
  outcome->id_length = tributary_client_id(client, outcome->client_id, sizeof(outcome->client_id));
  tributary_client_destroy(client);
  outcome->fit_calls = app->fit_calls;
  return rc;
}

int trib_c_run_client(const char* coordinator, const char* ca, const char* cert, const char* key,
                      int fail_evaluate, trib_c_outcome* outcome) {
  linear_app app = {1.0f, fail_evaluate, 0};
  tributary_tensor tensors[2];
  tributary_client_options o;
  fill_options(&o, coordinator, ca, cert, key, &app, tensors);
  return run(&o, &app, outcome);
}

/* Called on the client's threads, one call at a time: no locking needed. */
static void record_log(void* user_data, int level, const char* message) {
  trib_c_log* log = (trib_c_log*)user_data;
  if (log->magic != TRIB_C_LOG_MAGIC) return; /* not our user_data: the test sees count 0 */
  if (log->count < TRIB_C_LOG_LINES) {
    log->levels[log->count] = level;
    snprintf(log->lines[log->count], sizeof(log->lines[0]), "%s", message);
  }
  log->count++;
}

int trib_c_run_logged_client(const char* coordinator, const char* ca, const char* cert,
                             const char* key, int log_level, trib_c_log* log,
                             trib_c_outcome* outcome) {
  linear_app app = {1.0f, 0, 0};
  tributary_tensor tensors[2];
  tributary_client_options o;
  fill_options(&o, coordinator, ca, cert, key, &app, tensors);
  memset(log, 0, sizeof(*log));
  log->magic = TRIB_C_LOG_MAGIC;
  o.log_fn = record_log;
  o.log_level = log_level;
  o.log_user_data = log;
  int rc = run(&o, &app, outcome);
  /* The handler is the process's and outlives the client: remove it before `log` goes away. */
  tributary_set_log_handler(TRIBUTARY_LOG_OFF, NULL, NULL);
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
    case 5:
      o.log_level = 9;
      break;
    case 6:
      o.predict = linear_predict; /* predict_output_size left 0 */
      break;
    case 7:
      o.split = 1; /* fit_split left NULL */
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

/* Outlives the clients made below (the callbacks get it as user_data). */
static linear_app predict_app = {1.0f, 0, 0};

tributary_client* trib_c_create_predict_client(const char* coordinator, const char* ca,
                                               const char* cert, const char* key,
                                               const char* state_dir, int with_predict, char* error,
                                               size_t error_size) {
  tributary_tensor tensors[2];
  tributary_client_options o;
  fill_options(&o, coordinator, ca, cert, key, &predict_app, tensors);
  o.state_dir = state_dir;
  if (with_predict) {
    o.predict = linear_predict;
    o.predict_output_size = 2;
  }
  return tributary_client_create(&o, error, error_size);
}

int trib_c_predict(tributary_client* client, const float* inputs, size_t inputs_len,
                   long long count, float* outputs, size_t outputs_len, char* error,
                   size_t error_size) {
  return tributary_client_predict(client, inputs, inputs_len, (int64_t)count, outputs, outputs_len,
                                  error, error_size);
}

/* The split client's three local samples (2 inputs each) and their labels. */
const float trib_c_split_x[6] = {1.0f, 2.0f, 3.0f, -1.0f, 0.5f, 0.5f};
const unsigned char trib_c_split_y[3] = {0, 1, 1};

/* The device part y = W x + b trained by split learning: per batch, the activations go to the
 * server, and W[j][k] -= lr * sum_s g[s][j] x[s][k], b[j] -= lr * sum_s g[s][j] with its gradient
 * g. Before the first batch, the three calls that must be refused. */
static int split_fit(void* user_data, const tributary_fit_config* config, const float* global,
                     float* weights, size_t num_floats, tributary_split_exchange* exchange,
                     tributary_fit_result* result, char* error, size_t error_size) {
  trib_c_split_probe* probe = (trib_c_split_probe*)user_data;
  float act[6] = {0};
  float grad[6] = {0};
  double loss_sum = 0.0, batch_loss = 0.0;
  int64_t correct = 0, batch_correct = 0;
  int seen = 0;
  (void)global;
  probe->fit_split_calls++;
  probe->kept = exchange;
  if (num_floats != 6 || config->batch_size < 1) {
    snprintf(error, error_size, "unexpected task: %zu weights, batch %d", num_floats,
             (int)config->batch_size);
    return 2;
  }
  /* Refused, sending nothing: no samples; 3 values for 2 samples; a gradient buffer too short. */
  probe->refused_status[0] =
      tributary_split_exchange_batch(exchange, act, 2, trib_c_split_y, 0, grad, 6, NULL, NULL,
                                     probe->refused[0], sizeof(probe->refused[0]));
  probe->refused_status[1] =
      tributary_split_exchange_batch(exchange, act, 3, trib_c_split_y, 2, grad, 6, NULL, NULL,
                                     probe->refused[1], sizeof(probe->refused[1]));
  probe->refused_status[2] =
      tributary_split_exchange_batch(exchange, act, 4, trib_c_split_y, 2, grad, 3, NULL, NULL,
                                     probe->refused[2], sizeof(probe->refused[2]));
  for (int epoch = 0; epoch < config->epochs; ++epoch) {
    for (int start = 0; start < 3; start += config->batch_size) {
      const int count = 3 - start < config->batch_size ? 3 - start : config->batch_size;
      for (int s = 0; s < count; ++s) {
        const float* x = trib_c_split_x + 2 * (start + s);
        for (int j = 0; j < 2; ++j)
          act[2 * s + j] = weights[2 * j] * x[0] + weights[2 * j + 1] * x[1] + weights[4 + j];
      }
      const int rc = tributary_split_exchange_batch(
          exchange, act, 2 * (size_t)count, trib_c_split_y + start, (size_t)count, grad, 6,
          &batch_loss, &batch_correct, probe->failed, sizeof(probe->failed));
      if (rc != TRIBUTARY_OK) {
        probe->failed_status = rc;
        snprintf(error, error_size, "batch %d: %s", start, probe->failed);
        return rc;
      }
      for (int j = 0; j < 2; ++j) {
        float gw0 = 0.0f, gw1 = 0.0f, gb = 0.0f;
        for (int s = 0; s < count; ++s) {
          const float* x = trib_c_split_x + 2 * (start + s);
          gw0 += grad[2 * s + j] * x[0];
          gw1 += grad[2 * s + j] * x[1];
          gb += grad[2 * s + j];
        }
        weights[2 * j] -= config->lr * gw0;
        weights[2 * j + 1] -= config->lr * gw1;
        weights[4 + j] -= config->lr * gb;
      }
      loss_sum += batch_loss;
      correct += batch_correct;
      seen += count;
    }
  }
  result->num_examples = 3;
  result->loss = loss_sum / seen;
  result->accuracy = (double)correct / seen;
  return 0;
}

tributary_client* trib_c_create_split_client(const char* coordinator, const char* ca,
                                             const char* cert, const char* key,
                                             trib_c_split_probe* probe, char* error,
                                             size_t error_size) {
  static linear_app unused = {1.0f, 0, 0};
  tributary_tensor tensors[2];
  tributary_client_options o;
  fill_options(&o, coordinator, ca, cert, key, &unused, tensors);
  memset(probe, 0, sizeof(*probe));
  o.fit = NULL; /* a split client needs only fit_split */
  o.evaluate = NULL;
  o.split = 1;
  o.fit_split = split_fit;
  o.num_examples = 3;
  o.user_data = probe;
  return tributary_client_create(&o, error, error_size);
}

/* The U-shaped split client's fit_split (c_api_client.h says what it does). */
static int u_fit(void* user_data, const tributary_fit_config* config, const float* global,
                 float* weights, size_t num_floats, tributary_split_exchange* exchange,
                 tributary_fit_result* result, char* error, size_t error_size) {
  trib_c_u_probe* probe = (trib_c_u_probe*)user_data;
  float head_gradient[3];
  (void)config;
  if (num_floats != 6) {
    snprintf(error, error_size, "unexpected task: %zu weights", num_floats);
    return 2;
  }
  probe->refused_status[0] =
      tributary_split_exchange_front(exchange, trib_c_split_x, 6, 0, probe->middle, 3,
                                     probe->refused[0], sizeof(probe->refused[0]));
  probe->refused_status[1] =
      tributary_split_exchange_front(exchange, trib_c_split_x, 6, 3, probe->middle, 4,
                                     probe->refused[1], sizeof(probe->refused[1]));
  probe->refused_status[2] = tributary_split_exchange_head(
      exchange, NULL, 3, 0.0, 0, probe->gradient, 6, probe->refused[2], sizeof(probe->refused[2]));
  probe->status = tributary_split_exchange_front(exchange, trib_c_split_x, 6, 3, probe->middle, 3,
                                                 probe->failed, sizeof(probe->failed));
  if (probe->status != TRIBUTARY_OK) {
    snprintf(error, error_size, "front: %s", probe->failed);
    return probe->status;
  }
  for (int s = 0; s < 3; ++s) head_gradient[s] = probe->middle[s] - (float)trib_c_split_y[s];
  probe->refused_status[3] =
      tributary_split_exchange_head(exchange, head_gradient, 3, 1.5, 2, probe->gradient, 5,
                                    probe->refused[3], sizeof(probe->refused[3]));
  probe->status = tributary_split_exchange_head(exchange, head_gradient, 3, 1.5, 2, probe->gradient,
                                                6, probe->failed, sizeof(probe->failed));
  if (probe->status != TRIBUTARY_OK) {
    snprintf(error, error_size, "head: %s", probe->failed);
    return probe->status;
  }
  for (int i = 0; i < 6; ++i) weights[i] = global[i] + probe->gradient[i];
  result->num_examples = 3;
  result->loss = 0.5;
  result->accuracy = 2.0 / 3.0;
  return 0;
}

tributary_client* trib_c_create_u_client(const char* coordinator, const char* ca, const char* cert,
                                         const char* key, trib_c_u_probe* probe, char* error,
                                         size_t error_size) {
  static linear_app unused = {1.0f, 0, 0};
  tributary_tensor tensors[2];
  tributary_client_options o;
  fill_options(&o, coordinator, ca, cert, key, &unused, tensors);
  memset(probe, 0, sizeof(*probe));
  o.fit = NULL;
  o.evaluate = NULL;
  o.split = 1;
  o.fit_split = u_fit;
  o.num_examples = 3;
  o.user_data = probe;
  return tributary_client_create(&o, error, error_size);
}
