#include "tests/native/native_c_client.h"

#include <string.h>

/* The samples a streaming trainer reads (read_train), as an app's file reader would hand them. */
typedef struct samples_in_memory {
  const float* features;
  const uint8_t* labels;
  size_t count;
  size_t reads;
} samples_in_memory;

static samples_in_memory g_streamed;

static int read_samples(void* data, const uint32_t* indices, size_t count, float* features,
                        uint8_t* labels) {
  samples_in_memory* s = (samples_in_memory*)data;
  for (size_t i = 0; i < count; ++i) {
    if (indices[i] >= s->count) return 1;
    memcpy(features + i * 64, s->features + (size_t)indices[i] * 64, 64 * sizeof(float));
    labels[i] = s->labels[indices[i]];
  }
  ++s->reads;
  return 0;
}

size_t trib_native_c_reads(void) { return g_streamed.reads; }

tributary_client* trib_native_c_create(const char* address, const char* ca, const char* cert,
                                       const char* key, const char* model_toml,
                                       const float* features, const uint8_t* labels, size_t count,
                                       int streaming, size_t* num_parameters, char* error,
                                       size_t error_size) {
  tributary_native_options n;
  tributary_native_options_init(&n);
  n.model = "test_model";
  n.model_toml = model_toml;
  n.height = 8;
  n.width = 8;
  n.num_classes = 10;
  if (streaming) {
    g_streamed.features = features;
    g_streamed.labels = labels;
    g_streamed.count = count;
    g_streamed.reads = 0;
    n.read_train = read_samples;
    n.read_train_data = &g_streamed;
    n.train_size = count;
  } else {
    n.train.features = features;
    n.train.labels = labels;
    n.train.count = count;
  }
  tributary_native_trainer* trainer = tributary_native_trainer_create(&n, error, error_size);
  if (!trainer) return NULL;
  *num_parameters = tributary_native_trainer_num_parameters(trainer);

  tributary_client_options o;
  tributary_client_options_init(&o);
  o.coordinator = address;
  o.ca_cert_file = ca;
  o.cert_file = cert;
  o.key_file = key;
  o.num_examples = count;
  o.max_attempts = 5;
  tributary_client* client = tributary_client_create_native(&o, trainer, error, error_size);
  if (!client) tributary_native_trainer_destroy(trainer);
  return client;
}
