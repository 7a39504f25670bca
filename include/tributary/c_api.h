/* clang-format off */
/* The Tributary client as a C API, for apps written in C or reached through JNI, Swift, Python
 * ctypes and the like.
 *
 * The app describes its model's layout (named tensors with shapes, in order: it must match the
 * coordinator's model) and supplies two callbacks over flat float buffers. The client does the
 * rest, exactly as tributary::Client (client.h) does: mutual TLS to the coordinator, rounds,
 * encoding the delta, heartbeats, reconnecting with backoff.
 *
 *   tributary_client_options o;
 *   tributary_client_options_init(&o);
 *   o.coordinator = "coord.example.org:7070";
 *   o.ca_cert_file = "ca.crt";
 *   o.cert_file = "edge-001.crt";
 *   o.key_file = "edge-001.key";
 *   o.tensors = tensors;
 *   o.num_tensors = 2;
 *   o.fit = my_fit;
 *   o.evaluate = my_eval;
 *   o.user_data = app;
 *   char err[512];
 *   tributary_client* c = tributary_client_create(&o, err, sizeof err);
 *   if (!c) {
 *     fprintf(stderr, "%s\n", err);
 *     return 1;
 *   }
 *   int rc = tributary_client_run(c);  // TRIBUTARY_OK once the coordinator ends the run
 *   if (rc != TRIBUTARY_OK) fprintf(stderr, "%s\n", tributary_client_last_error(c));
 *   tributary_client_destroy(c);
 *
 * The library prints nothing; set o.log_fn (or call tributary_set_log_handler) to receive its log
 * lines.
 *
 * Between rounds the app can run the latest global model on its own inputs with
 * tributary_client_predict(), given a predict callback (o.predict, o.predict_output_size).
 *
 * Split learning (docs/split.md): with o.split set, the app's model (o.tensors) is the device part
 * of the run's cut model, and each task calls o.fit_split instead of o.fit. It trains the device
 * part batch by batch, sending each batch's activations at the cut with
 * tributary_split_exchange_batch() and backpropagating the gradient it returns.
 *
 * Threading: fit, fit_split and evaluate run on the client's worker thread; predict runs on the
 * thread that called tributary_client_predict(). The callbacks never run two at a time: predict
 * waits for a fit or evaluate in progress. The functions may be called from any thread, except
 * from inside a callback (tributary_split_exchange_batch is meant for inside fit_split);
 * tributary_client_stop() may be called at any time (e.g. from another thread while
 * tributary_client_run() blocks). No function throws or aborts on bad input: they return a status
 * code and keep a message.
 */
/* clang-format on */
#ifndef TRIBUTARY_C_API_H_
#define TRIBUTARY_C_API_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The values of tributary::StatusCode (status.h). */
typedef enum tributary_status {
  TRIBUTARY_OK = 0,
  TRIBUTARY_INVALID_ARGUMENT = 1,
  TRIBUTARY_NOT_FOUND = 2,
  TRIBUTARY_IO_ERROR = 3,
  TRIBUTARY_CORRUPTION = 4,
  TRIBUTARY_OUT_OF_RANGE = 5,
  TRIBUTARY_FAILED_PRECONDITION = 6,
  TRIBUTARY_RESOURCE_EXHAUSTED = 7,
  TRIBUTARY_UNAVAILABLE = 8,
  TRIBUTARY_DEADLINE_EXCEEDED = 9,
  TRIBUTARY_PERMISSION_DENIED = 10,
  TRIBUTARY_ABORTED = 11,
  TRIBUTARY_UNIMPLEMENTED = 12,
  TRIBUTARY_INTERNAL = 13
} tributary_status;

typedef struct tributary_client tributary_client;

/* One tensor of the model: weights are laid out tensor after tensor, each row-major. */
typedef struct tributary_tensor {
  const char* name;
  const int64_t* shape;
  size_t rank;
} tributary_tensor;

/* Local training settings sent by the coordinator (tributary::FitConfig). */
typedef struct tributary_fit_config {
  int32_t epochs;
  int32_t batch_size;
  float lr;
  float momentum;
  float weight_decay;
  float proximal_mu;
  int64_t max_steps; /* 0: no cap */
  uint64_t seed;     /* seeds the shuffling of local data */
  /* The local optimizer: "sgd" (with momentum), "adam" or "adamw", and Adam's settings
   * (tributary::FitConfig in trainer.h has the semantics). Valid during the callback. */
  const char* optimizer;
  float beta1;
  float beta2;
  float eps;
} tributary_fit_config;

typedef struct tributary_fit_result {
  int64_t num_examples; /* training examples used (the FedAvg weight); must be >= 1 */
  double loss;          /* reported to the coordinator as the metric train_loss */
  double accuracy;      /* reported as train_accuracy */
} tributary_fit_result;

typedef struct tributary_eval_config {
  int32_t batch_size;
  int64_t max_examples; /* 0: the whole evaluation set */
} tributary_eval_config;

typedef struct tributary_eval_result {
  int64_t num_examples;
  double loss;
  double accuracy;
} tributary_eval_result;

/* Trains from `global` (num_floats values) and writes the NEW weights to `weights` (which starts
 * as a copy of `global`; the client computes the delta). Returns 0 on success. On failure returns
 * non-zero and may write a NUL-terminated reason of at most error_size bytes to `error`; the
 * coordinator is told, and the client carries on. */
typedef int (*tributary_fit_fn)(void* user_data, const tributary_fit_config* config,
                                const float* global, float* weights, size_t num_floats,
                                tributary_fit_result* result, char* error, size_t error_size);

/* Evaluates `weights` on local evaluation data. Same return convention as tributary_fit_fn. */
typedef int (*tributary_evaluate_fn)(void* user_data, const tributary_eval_config* config,
                                     const float* weights, size_t num_floats,
                                     tributary_eval_result* result, char* error, size_t error_size);

/* Computes the model's outputs with `weights` (num_floats values, the latest global model) for
 * `count` samples stored one after another in `inputs` (inputs_len values; their layout is the
 * app's), writing outputs_len = count * predict_output_size values to `outputs` (which starts
 * zeroed). Same return convention as tributary_fit_fn; a failure is returned by
 * tributary_client_predict() as TRIBUTARY_INTERNAL with the reason. */
typedef int (*tributary_predict_fn)(void* user_data, const float* weights, size_t num_floats,
                                    const float* inputs, size_t inputs_len, int64_t count,
                                    float* outputs, size_t outputs_len, char* error,
                                    size_t error_size);

/* Split learning: the channel to the coordinator's server part, given to tributary_fit_split_fn and
 * usable only during that call, on the thread it runs on (a handle kept past the call is refused
 * with TRIBUTARY_FAILED_PRECONDITION until the client is destroyed, when it becomes invalid). */
typedef struct tributary_split_exchange tributary_split_exchange;

/* Sends one batch to the server part and waits for its answer: `count` >= 1 samples whose
 * activations at the cut are stored one after another in `activations` (activations_len values,
 * a multiple of count), and their labels (each below the run's class count). Writes the gradient
 * of the batch's mean loss with respect to the activations (activations_len values, same order)
 * to `gradient` (gradient_len >= activations_len), the server part's loss summed over the batch to
 * *loss_sum and the samples it classified correctly to *correct (either may be NULL). Returns
 * TRIBUTARY_OK; TRIBUTARY_INVALID_ARGUMENT naming the length or pointer that is wrong (nothing is
 * sent); TRIBUTARY_FAILED_PRECONDITION when called outside its fit_split call or from another
 * thread; otherwise the reason the batch was not answered: TRIBUTARY_DEADLINE_EXCEEDED (the
 * task's deadline), TRIBUTARY_ABORTED (the connection was lost or the client is stopping),
 * TRIBUTARY_PERMISSION_DENIED or another code when the server refused it. The reason is written
 * to `error` (NUL-terminated, "" on success) when error_size > 0. After a failure fit_split should
 * return non-zero: the task ends with the failure of the batch in any case. */
int tributary_split_exchange_batch(tributary_split_exchange* exchange, const float* activations,
                                   size_t activations_len, const uint8_t* labels, size_t count,
                                   float* gradient, size_t gradient_len, double* loss_sum,
                                   int64_t* correct, char* error, size_t error_size);

/* The U-shaped (label-private) split (docs/split.md: a run with split.head, the device holding the
 * model's front and its head with the loss, the labels never sent): each batch takes two calls.
 * tributary_split_exchange_front sends the activations at the first cut of `count` >= 1 samples
 * (activations_len values, a multiple of count; no labels) and writes the server part's output,
 * the head's input, to `middle` (middle_len values: count times the head's input size; the
 * answer must hold exactly that many). tributary_split_exchange_head then sends the gradient of
 * the batch's mean loss with respect to `middle` (head_gradient_len values, the same count), with
 * the head's loss summed over the batch and its correct count, and writes the gradient at the
 * first cut (as many values as the activations sent) to `gradient` (gradient_len at least that).
 * Return codes and `error` as tributary_split_exchange_batch's; in a task that is not U-shaped
 * (or tributary_split_exchange_batch in one that is) the call fails naming why. */
int tributary_split_exchange_front(tributary_split_exchange* exchange, const float* activations,
                                   size_t activations_len, size_t count, float* middle,
                                   size_t middle_len, char* error, size_t error_size);
int tributary_split_exchange_head(tributary_split_exchange* exchange, const float* head_gradient,
                                  size_t head_gradient_len, double loss_sum, int64_t correct,
                                  float* gradient, size_t gradient_len, char* error,
                                  size_t error_size);

/* Trains the device part from `global` as tributary_fit_fn does (writing the new weights to
 * `weights`), each batch's forward ending at the cut and its backward starting from the gradient
 * tributary_split_exchange_batch returns. result->loss and result->accuracy should be the server
 * part's (the sums it returned, over the samples). Same return convention as tributary_fit_fn. */
typedef int (*tributary_fit_split_fn)(void* user_data, const tributary_fit_config* config,
                                      const float* global, float* weights, size_t num_floats,
                                      tributary_split_exchange* exchange,
                                      tributary_fit_result* result, char* error, size_t error_size);

/* Log levels: the values of tributary::LogLevel (log.h). */
typedef enum tributary_log_level {
  TRIBUTARY_LOG_TRACE = 0,
  TRIBUTARY_LOG_DEBUG = 1,
  TRIBUTARY_LOG_INFO = 2,
  TRIBUTARY_LOG_WARN = 3,
  TRIBUTARY_LOG_ERROR = 4,
  TRIBUTARY_LOG_OFF = 5
} tributary_log_level;

/* Receives one line the library logged: `level` is a tributary_log_level (never
 * TRIBUTARY_LOG_OFF), `message` is NUL-terminated text without a timestamp, level or newline,
 * valid only during the call. It is called from the library's threads (its I/O thread, the
 * worker thread that runs fit/evaluate), possibly also from a thread that calls into the library,
 * but never two calls at once: the library holds a lock around each call. It should return quickly
 * and must not call any tributary_ function (the lock is not reentrant). */
typedef void (*tributary_log_fn)(void* user_data, int level, const char* message);

/* Strings are copied by tributary_client_create; they need not outlive the call. Fields mirror
 * tributary::ClientOptions (client.h). */
typedef struct tributary_client_options {
  const char* coordinator;  /* "host:port"; required */
  const char* server_name;  /* the name the certificate must carry; NULL or "": the host dialled */
  const char* ca_cert_file; /* PEM files; all three required */
  const char* cert_file;
  const char* key_file;
  const char* state_dir; /* NULL or "": no local state */
  const char* device;    /* reported to the coordinator; default "cpu" */
  uint64_t num_examples; /* local training examples, reported to the coordinator */

  const tributary_tensor* tensors; /* the model layout; required, num_tensors >= 1 */
  size_t num_tensors;
  tributary_fit_fn fit;           /* required, unless split is set */
  tributary_evaluate_fn evaluate; /* NULL: evaluation requests are answered with an error */
  void* user_data;                /* passed to the fit, evaluate and predict callbacks */

  uint32_t backoff_initial_ms;    /* default 500 */
  uint32_t backoff_max_ms;        /* default 30000 */
  double backoff_multiplier;      /* default 2 */
  double backoff_jitter;          /* default 0.5 */
  uint32_t max_attempts;          /* consecutive failed connects before giving up; 0 = never */
  uint64_t backoff_seed;          /* seeds the jitter; 0 (default): drawn per client from the OS */
  uint32_t heartbeat_interval_ms; /* 0: the coordinator's */
  uint32_t connect_timeout_ms;    /* default 10000 */

  /* Logging. By default (log_fn NULL) the library writes nothing anywhere. With log_fn set, a
   * tributary_client_create that succeeds installs it for the whole process, exactly as
   * tributary_set_log_handler(log_level, log_fn, log_user_data) does. */
  tributary_log_fn log_fn;
  int log_level;       /* a tributary_log_level; default TRIBUTARY_LOG_INFO */
  void* log_user_data; /* passed to log_fn; see tributary_set_log_handler for how long it is used */

  /* Prediction with the latest global model (tributary_client_predict). predict NULL (the
   * default): tributary_client_predict returns TRIBUTARY_UNIMPLEMENTED. With predict set,
   * predict_output_size (the values it writes per sample, e.g. the number of classes) must be
   * >= 1. */
  tributary_predict_fn predict;
  size_t predict_output_size;

  /* Split learning (docs/split.md). split nonzero: the coordinator's run must be a split run,
   * `tensors` are the device part's, and fit_split (then required) trains every task; fit is not
   * called and may be NULL. Default 0: fit trains whole-model tasks. */
  int split;
  tributary_fit_split_fn fit_split;
} tributary_client_options;

/* Fills `options` with the defaults (and NULL / 0 elsewhere). Call it before setting fields. */
void tributary_client_options_init(tributary_client_options* options);

/* Validates the options, reads the TLS files and opens the state dir. NULL on failure, with the
 * reason (naming the field or file) written to `error` when error_size > 0. */
tributary_client* tributary_client_create(const tributary_client_options* options, char* error,
                                          size_t error_size);

/* Blocks until the run is over: TRIBUTARY_OK when the coordinator completed (or stopped) it,
 * TRIBUTARY_ABORTED after tributary_client_stop() or when the coordinator's run failed,
 * TRIBUTARY_UNAVAILABLE when max_attempts connects failed, TRIBUTARY_PERMISSION_DENIED when the
 * coordinator refused this client (a denied id, or a certificate it does not accept, e.g. one
 * from another CA: "tlsv1 alert unknown ca") or this client could not verify the coordinator's
 * certificate, TRIBUTARY_FAILED_PRECONDITION when it refused this client's model layout (the
 * tensors do not match the run's) or protocol version. Refusals that waiting cannot heal end the
 * run at the first attempt instead of retrying (client.h, Client::wait()).
 * tributary_client_last_error() says why. */
int tributary_client_run(tributary_client* client);
/* Starts in the background and returns; tributary_client_wait() collects the outcome. */
int tributary_client_start(tributary_client* client);
int tributary_client_wait(tributary_client* client);
/* Asks the client to stop (Goodbye to the coordinator) and returns at once. Idempotent. */
void tributary_client_stop(tributary_client* client);

/* The message of the last non-OK status that run/start/wait returned on this handle, "" if none.
 * Valid until the next run/start/wait/destroy call on the handle. */
const char* tributary_client_last_error(const tributary_client* client);
/* Copies the client id the coordinator assigned (from the certificate; "" before joining) into
 * `buffer` (NUL-terminated, truncated to size - 1) and returns its full length. */
size_t tributary_client_id(const tributary_client* client, char* buffer, size_t size);

/* Runs the predict callback on the latest global model: the one of the last fit or evaluate task
 * received, or else the one the state dir held at create (state_dir keeps it across restarts).
 * `inputs` holds `count` >= 1 samples one after another (inputs_len values, a multiple of count);
 * the count * predict_output_size outputs are written to the start of `outputs`, which must hold
 * outputs_len >= that many. Blocks while a fit or evaluate callback runs. Returns TRIBUTARY_OK;
 * TRIBUTARY_UNIMPLEMENTED without a predict callback; TRIBUTARY_FAILED_PRECONDITION before any
 * global model (or when called from inside a callback); TRIBUTARY_INVALID_ARGUMENT naming the
 * length or pointer that is wrong; TRIBUTARY_INTERNAL when the callback failed. The reason is
 * written to `error` (NUL-terminated, "" on success) when error_size > 0, not kept as
 * tributary_client_last_error(), so predict may run on one thread while run() blocks on
 * another. */
int tributary_client_predict(tributary_client* client, const float* inputs, size_t inputs_len,
                             int64_t count, float* outputs, size_t outputs_len, char* error,
                             size_t error_size);
/* The round and model version of the model tributary_client_predict() uses (either pointer may be
 * NULL): TRIBUTARY_OK, or TRIBUTARY_FAILED_PRECONDITION (both left as they are) when there is none
 * yet. */
int tributary_client_global_model(const tributary_client* client, uint64_t* round,
                                  uint64_t* model_version);

/* Stops the client, waits for a callback in progress to return, and frees it. NULL is fine. */
void tributary_client_destroy(tributary_client* client);

/* Installs `fn` as the process's log handler: it receives the lines at `level` and above from
 * every client in the process, with `user_data`. There is one handler per process: this replaces
 * the previous one (whether set here or through tributary_client_options; the last installed
 * wins), and it stays installed, also after the client that installed it is destroyed, until
 * replaced. fn NULL or TRIBUTARY_LOG_OFF removes it, making the library silent (the state a
 * process starts in). When this returns, the previous handler is not running and will not be
 * called again, so its user_data may be freed then; `user_data` must stay valid until then.
 * Returns TRIBUTARY_OK, or TRIBUTARY_INVALID_ARGUMENT (and changes nothing) when `level` is not a
 * tributary_log_level. */
int tributary_set_log_handler(int level, tributary_log_fn fn, void* user_data);

/* "OK", "InvalidArgument", ...; "Unknown" for other values. Static storage. */
const char* tributary_status_name(int code);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TRIBUTARY_C_API_H_ */
