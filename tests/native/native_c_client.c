#include "tests/native/native_c_client.h"

tributary_client* trib_native_c_create(const char* address, const char* ca, const char* cert,
                                       const char* key, const char* model_toml,
                                       const float* features, const uint8_t* labels, size_t count,
                                       size_t* num_parameters, char* error, size_t error_size) {
  tributary_native_options n;
  tributary_native_options_init(&n);
  n.model = "test_model";
  n.model_toml = model_toml;
  n.height = 8;
  n.width = 8;
  n.num_classes = 10;
  n.train.features = features;
  n.train.labels = labels;
  n.train.count = count;
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
