/* Tributary's own training engine from C (CMake: Tributary::train): a trainer made from a model
 * file, or a built-in model, and samples the app holds in memory, and a client that federates it
 * with no training callbacks. The C form of tributary/native_training.h; docs/embedding.md.
 *
 *   tributary_native_options n;
 *   tributary_native_options_init(&n);
 *   n.model = "models/small_cnn.toml";
 *   n.height = 8; n.width = 8; n.channels = 1; n.num_classes = 3;
 *   n.train.features = features; n.train.labels = labels; n.train.count = count;
 *   tributary_native_trainer* t = tributary_native_trainer_create(&n, err, sizeof err);
 *   tributary_client_options o;            // coordinator, TLS files, ...; no tensors, no fit
 *   tributary_client_options_init(&o);
 *   tributary_client* c = tributary_client_create_native(&o, t, err, sizeof err);  // takes t
 *
 * Every function is safe to call with NULL pointers (it returns an error or does nothing) and
 * never lets an exception through. */
#ifndef TRIBUTARY_NATIVE_C_API_H_
#define TRIBUTARY_NATIVE_C_API_H_

#include <stddef.h>
#include <stdint.h>

#include "tributary/c_api.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tributary_native_trainer tributary_native_trainer;

/* count samples of height * width * channels floats each, one after the other (HWC order), and a
 * class id (< num_classes) per sample. Copied by tributary_native_trainer_create. */
typedef struct tributary_samples {
  const float* features; /* count * height * width * channels floats */
  const uint8_t* labels; /* count labels */
  size_t count;
} tributary_samples;

typedef struct tributary_native_options {
  const char* model;      /* a model file's path or a built-in model's name */
  const char* model_toml; /* NULL or "": read `model`; else the model file's text (`model`, if
                             set, then only names it in errors) */
  const char* device;     /* "cpu" (default), "cuda", "cuda:N" or "auto" */
  int threads;            /* CPU engine threads; default 1; 0: every core */
  uint64_t init_seed;     /* the initial weights; default 0 */
  int64_t height, width, channels; /* a sample's shape; channels defaults to 1 */
  int num_classes;                 /* 2..256 */
  tributary_samples train;         /* the training samples (count 0: fit fails) */
  tributary_samples eval;          /* the evaluation samples (count 0: evaluate fails) */
  /* Or training samples the app reads on demand, for data that does not fit in memory (the C form
   * of SampleSource, tributary/native_training.h): with read_train set, `train` must be empty and
   * train_size gives the sample count. fit calls read_train(read_train_data, indices, count,
   * features, labels) once per batch, on its own thread, to fill count samples' features
   * (height * width * channels floats each, sample after sample) and labels, in the order of
   * indices (each < train_size); it returns 0, or nonzero to end the fit with an error. The same
   * samples give the same weights as in memory. CPU engine only. */
  int (*read_train)(void* read_train_data, const uint32_t* indices, size_t count, float* features,
                    uint8_t* labels);
  void* read_train_data;
  size_t train_size;
} tributary_native_options;

/* Fills `options` with the defaults (and NULL / 0 elsewhere). Call it before setting fields. */
void tributary_native_options_init(tributary_native_options* options);

/* Checks the options, copies the samples and builds the model. NULL on failure, with the reason
 * (naming the field, the file or the layer) written to `error` when error_size > 0. */
tributary_native_trainer* tributary_native_trainer_create(const tributary_native_options* options,
                                                          char* error, size_t error_size);

/* The model's parameter count, and its output size (the class count: what
 * tributary_client_predict writes per sample). 0 for NULL. */
size_t tributary_native_trainer_num_parameters(const tributary_native_trainer* trainer);
size_t tributary_native_trainer_num_classes(const tributary_native_trainer* trainer);

/* Destroys a trainer that was not given to a client (one that was is the client's). */
void tributary_native_trainer_destroy(tributary_native_trainer* trainer);

/* Like tributary_client_create, with `trainer` training every task: the options' tensors, fit,
 * evaluate, predict, predict_output_size, split and fit_split must be left as
 * tributary_client_options_init set them (the trainer gives the layout; a field that is set is
 * refused, named). On success the client owns the trainer: the handle is gone for the caller
 * (do not destroy it, query it or pass it to another client; it is freed with the client), and
 * tributary_client_predict works with num_classes outputs per sample; on failure the trainer
 * stays the caller's. */
tributary_client* tributary_client_create_native(const tributary_client_options* options,
                                                 tributary_native_trainer* trainer, char* error,
                                                 size_t error_size);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TRIBUTARY_NATIVE_C_API_H_ */
