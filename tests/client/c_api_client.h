/* Functions written in C (c_api_client.c) that the C API test calls. */
#ifndef TRIBUTARY_TESTS_CLIENT_C_API_CLIENT_H_
#define TRIBUTARY_TESTS_CLIENT_C_API_CLIENT_H_

#include <stddef.h>

#include "tributary/c_api.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct trib_c_outcome {
  char error[1024];
  char client_id[64];
  size_t id_length;
  int fit_calls;
} trib_c_outcome;

/* Runs a client whose model is linear.weight [2,2] + linear.bias [2], with fit adding
 * lr * (i + 1) to value i and reporting 17 examples per epoch. Returns tributary_client_run's
 * status, or -1 when create failed (outcome->error says why). */
int trib_c_run_client(const char* coordinator, const char* ca, const char* cert, const char* key,
                      int fail_evaluate, trib_c_outcome* outcome);

/* What the log callback of trib_c_run_logged_client saw. */
#define TRIB_C_LOG_MAGIC 0x4c4f4721u
#define TRIB_C_LOG_LINES 8
typedef struct trib_c_log {
  unsigned magic; /* TRIB_C_LOG_MAGIC, set by trib_c_run_logged_client */
  int count;      /* calls received, also those past the arrays */
  int levels[TRIB_C_LOG_LINES];
  char lines[TRIB_C_LOG_LINES][256];
} trib_c_log;

/* As trib_c_run_client (fail_evaluate off), with o.log_fn a callback that records into `log`
 * (through o.log_user_data) at `log_level`. Removes the process's log handler before returning. */
int trib_c_run_logged_client(const char* coordinator, const char* ca, const char* cert,
                             const char* key, int log_level, trib_c_log* log,
                             trib_c_outcome* outcome);

/* Creates a client with one thing wrong (0: no fit callback, 1: no tensors, 2: a repeated tensor
 * name, 3: no coordinator, 5: log_level 9, 6: a predict callback without predict_output_size,
 * 7: split set without a fit_split callback, other: a missing CA file); returns 1 when create
 * failed as it should. */
int trib_c_create_error(int which, char* error, size_t error_size);

/* Creates (does not start) trib_c_run_client's client, with `state_dir` (may be NULL) and, when
 * with_predict is set, a predict callback: the linear layer, y = W x + b for 2 inputs per sample
 * (W = linear.weight, row-major [2, 2]; b = linear.bias), 2 outputs per sample; it fails, saying
 * "2 inputs per sample", when inputs_len is not 2 * count. NULL when create failed (`error` says
 * why). Free with tributary_client_destroy. */
tributary_client* trib_c_create_predict_client(const char* coordinator, const char* ca,
                                               const char* cert, const char* key,
                                               const char* state_dir, int with_predict, char* error,
                                               size_t error_size);

/* tributary_client_predict on `client` from C: the status, with the message in `error`. */
int trib_c_predict(tributary_client* client, const float* inputs, size_t inputs_len,
                   long long count, float* outputs, size_t outputs_len, char* error,
                   size_t error_size);

/* Split learning. The split client's device part is the linear layer above (y = W x + b, the
 * activations at the cut) over three local samples x_s = trib_c_split_x[2s], [2s + 1] with labels
 * trib_c_split_y[s], taken in order in batches of fit.batch_size; each batch's gradient g from
 * the server steps W[j][k] -= lr * sum_s g[s][j] x[s][k] and b[j] -= lr * sum_s g[s][j] (float
 * sums in sample order). It reports 3 examples and the server's loss and accuracy over them. */
extern const float trib_c_split_x[6];
extern const unsigned char trib_c_split_y[3];

/* What the split client's fit_split saw (its user_data). */
typedef struct trib_c_split_probe {
  int fit_split_calls;
  /* Before its first batch, each fit_split makes three calls that must be refused: count 0,
   * activations_len 3 for 2 samples, gradient_len 3 for 4 activations. */
  int refused_status[3];
  char refused[3][256];
  /* The status and message of a batch that was not answered (0 and "" if none). */
  int failed_status;
  char failed[256];
  /* The last fit_split's exchange, kept past its call. */
  tributary_split_exchange* kept;
} trib_c_split_probe;

/* Creates (does not start) the split client (split = 1, fit_split, no fit or evaluate callback),
 * recording into `probe`. NULL when create failed (`error` says why). */
tributary_client* trib_c_create_split_client(const char* coordinator, const char* ca,
                                             const char* cert, const char* key,
                                             trib_c_split_probe* probe, char* error,
                                             size_t error_size);

/* What the U-shaped split client's fit_split saw (its user_data). Its one batch: the three
 * samples' inputs as the activations (6 values); the server part's output (one value a sample)
 * comes back into `middle`; the head's gradient middle[s] - label[s] goes up with loss_sum 1.5 and
 * 2 correct; the gradient at the cut comes back into `gradient`, and the new weights are the
 * global ones plus it. Before the batch, three calls that must be refused: front with count 0,
 * front with middle_len 4 for 3 samples, head with a NULL gradient; after the batch's front, a
 * fourth: head with gradient_len 5 for the 6 activations sent (refused before sending). */
typedef struct trib_c_u_probe {
  int refused_status[4];
  char refused[4][256];
  float middle[3];
  float gradient[6];
  int status; /* of the batch's calls: TRIBUTARY_OK, or the first failure's */
  char failed[256];
} trib_c_u_probe;

/* Creates (does not start) the U-shaped split client, recording into `probe`. */
tributary_client* trib_c_create_u_client(const char* coordinator, const char* ca, const char* cert,
                                         const char* key, trib_c_u_probe* probe, char* error,
                                         size_t error_size);

#ifdef __cplusplus
}
#endif

#endif
