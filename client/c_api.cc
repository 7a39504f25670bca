// The C API (include/tributary/c_api.h): a tributary::Client around a Trainer that calls the
// app's C callbacks. Nothing may throw across the C boundary, so every entry point catches.
#include "tributary/c_api.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <exception>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "client/c_api_support.h"
#include "tributary/client.h"
#include "tributary/log.h"

// The handle a fit_split callback receives: the runtime's channel to the server part, for the
// duration of that call and on its thread only. One per client (its CallbackTrainer), so that a
// handle kept past its call is refused rather than dangling, until the client is destroyed.
struct tributary_split_exchange {
  // Null outside a fit_split call. Stored (release) after `thread` and `failure` are set, and
  // loaded (acquire) before they are read, so a call from another thread reads them only when
  // this is non-null, and is then refused.
  std::atomic<tributary::SplitExchange*> server{nullptr};
  std::thread::id thread;                    // the callback's
  std::optional<tributary::Status> failure;  // the first batch that was not answered
  size_t front_activations = 0;  // the last tributary_split_exchange_front's activations_len
};

namespace tributary {
namespace {

using capi::CopyOut;
using capi::Reported;

constexpr size_t kCallbackErrorBytes = 1024;

// A Trainer whose fit/evaluate/predict are the app's C callbacks over flat float buffers.
class CallbackTrainer final : public Trainer {
 public:
  CallbackTrainer(ModelWeights layout, const tributary_client_options& o)
      : layout_(std::move(layout)),
        fit_(o.fit),
        evaluate_(o.evaluate),
        predict_(o.predict),
        fit_split_(o.fit_split),
        predict_output_size_(o.predict_output_size),
        user_data_(o.user_data) {}

  Result<ModelWeights> get_parameters() override { return layout_; }

  Result<FitResult> fit(const ModelWeights& global, const FitConfig& config) override {
    if (!fit_)
      return Status::FailedPrecondition(
          "this client has no fit callback (it was created for split learning: split set)");
    const tributary_fit_config c = ToC(config);
    FitResult out;
    out.weights = global;  // the callback overwrites it with the new weights
    tributary_fit_result r{0, 0.0, 0.0};
    char error[kCallbackErrorBytes] = {0};
    const int rc = fit_(user_data_, &c, global.data().data(), out.weights.data().data(),
                        global.size(), &r, error, sizeof(error));
    if (rc != 0) return Failure("fit", rc, error);
    TRIB_RETURN_IF_ERROR(Finish("fit", r, &out));
    return out;
  }

  Result<FitResult> fit_split(const ModelWeights& global, const FitConfig& config,
                              SplitExchange& server) override {
    if (!fit_split_)
      return Status::Unimplemented(
          "this client has no fit_split callback (set tributary_client_options.split and "
          "fit_split)");
    const tributary_fit_config c = ToC(config);
    FitResult out;
    out.weights = global;
    tributary_fit_result r{0, 0.0, 0.0};
    char error[kCallbackErrorBytes] = {0};
    exchange_.thread = std::this_thread::get_id();
    exchange_.failure.reset();
    exchange_.server.store(&server, std::memory_order_release);
    const int rc = fit_split_(user_data_, &c, global.data().data(), out.weights.data().data(),
                              global.size(), &exchange_, &r, error, sizeof(error));
    exchange_.server.store(nullptr, std::memory_order_release);
    // A batch that was not answered ends the task with its reason, whatever the callback did.
    if (exchange_.failure) return *exchange_.failure;
    if (rc != 0) return Failure("fit_split", rc, error);
    TRIB_RETURN_IF_ERROR(Finish("fit_split", r, &out));
    return out;
  }

  Result<EvalResult> evaluate(const ModelWeights& weights, const EvalConfig& config) override {
    if (!evaluate_) return Status::FailedPrecondition("this client has no evaluate callback");
    tributary_eval_config c{config.batch_size, config.max_examples};
    tributary_eval_result r{0, 0.0, 0.0};
    char error[kCallbackErrorBytes] = {0};
    const int rc =
        evaluate_(user_data_, &c, weights.data().data(), weights.size(), &r, error, sizeof(error));
    if (rc != 0) return Failure("evaluate", rc, error);
    return EvalResult{r.loss, r.accuracy, r.num_examples, {}};
  }

  // count * predict_output_size outputs; the caller (tributary_client_predict) checked the sizes.
  Result<std::vector<float>> predict(const ModelWeights& weights, std::span<const float> inputs,
                                     int64_t count) override {
    if (!predict_) return Status::Unimplemented("this client has no predict callback");
    std::vector<float> out(static_cast<size_t>(count) * predict_output_size_, 0.0f);
    char error[kCallbackErrorBytes] = {0};
    const int rc = predict_(user_data_, weights.data().data(), weights.size(), inputs.data(),
                            inputs.size(), count, out.data(), out.size(), error, sizeof(error));
    if (rc != 0) return Failure("predict", rc, error);
    return out;
  }

 private:
  // Valid while `f` is (its optimizer's name is borrowed).
  static tributary_fit_config ToC(const FitConfig& f) {
    return {f.epochs,      f.batch_size, f.lr,   f.momentum,          f.weight_decay,
            f.proximal_mu, f.max_steps,  f.seed, f.optimizer.c_str(), f.beta1,
            f.beta2,       f.eps};
  }

  // Reads the callback's result into `out`.
  static Status Finish(const char* which, const tributary_fit_result& r, FitResult* out) {
    if (r.num_examples < 0)
      return Status::InvalidArgument(std::string("the ") + which +
                                     " callback returned num_examples " +
                                     std::to_string(r.num_examples));
    out->num_examples = r.num_examples;
    out->metrics = {{"train_loss", r.loss}, {"train_accuracy", r.accuracy}};
    return Status::Ok();
  }

  static Status Failure(const char* which, int rc, char* error) {
    error[kCallbackErrorBytes - 1] = '\0';  // whatever the callback wrote, stop at the buffer
    std::string why = error[0] ? error : "no reason given";
    return Status::Internal(std::string("the ") + which + " callback failed (returned " +
                            std::to_string(rc) + "): " + why);
  }

  ModelWeights layout_;
  tributary_fit_fn fit_;
  tributary_evaluate_fn evaluate_;
  tributary_predict_fn predict_;
  tributary_fit_split_fn fit_split_;
  size_t predict_output_size_;
  void* user_data_;
  tributary_split_exchange exchange_;  // fit_split's (see the struct)
};

std::string Str(const char* s) { return s ? std::string(s) : std::string(); }

static_assert(TRIBUTARY_LOG_TRACE == static_cast<int>(LogLevel::kTrace) &&
              TRIBUTARY_LOG_DEBUG == static_cast<int>(LogLevel::kDebug) &&
              TRIBUTARY_LOG_INFO == static_cast<int>(LogLevel::kInfo) &&
              TRIBUTARY_LOG_WARN == static_cast<int>(LogLevel::kWarn) &&
              TRIBUTARY_LOG_ERROR == static_cast<int>(LogLevel::kError) &&
              TRIBUTARY_LOG_OFF == static_cast<int>(LogLevel::kOff));

Result<LogLevel> ToLogLevel(int level) {
  if (level < TRIBUTARY_LOG_TRACE || level > TRIBUTARY_LOG_OFF)
    return Status::InvalidArgument("log_level: " + std::to_string(level) +
                                   " is not a tributary_log_level (0 trace .. 5 off)");
  return static_cast<LogLevel>(level);
}

LogCallback ToLogCallback(tributary_log_fn fn, void* user_data) {
  return [fn, user_data](LogLevel level, std::string_view message) {
    const std::string line(message);  // the C side needs the NUL
    fn(user_data, static_cast<int>(level), line.c_str());
  };
}

Result<ClientOptions> ToOptions(const tributary_client_options& o) {
  ClientOptions out;
  out.coordinator = Str(o.coordinator);
  out.server_name = Str(o.server_name);
  out.ca_cert_file = Str(o.ca_cert_file);
  out.cert_file = Str(o.cert_file);
  out.key_file = Str(o.key_file);
  out.state_dir = Str(o.state_dir);
  if (o.device && o.device[0]) out.device = o.device;
  out.num_examples = o.num_examples;
  out.backoff.initial_delay = std::chrono::milliseconds(o.backoff_initial_ms);
  out.backoff.max_delay = std::chrono::milliseconds(o.backoff_max_ms);
  out.backoff.multiplier = o.backoff_multiplier;
  out.backoff.jitter = o.backoff_jitter;
  out.backoff.max_attempts = o.max_attempts;
  out.backoff.seed = o.backoff_seed;
  out.heartbeat_interval = std::chrono::milliseconds(o.heartbeat_interval_ms);
  out.connect_timeout = std::chrono::milliseconds(o.connect_timeout_ms);
  out.split = o.split != 0;
  TRIB_ASSIGN_OR_RETURN(out.log_level, ToLogLevel(o.log_level));
  if (o.log_fn) out.log_callback = ToLogCallback(o.log_fn, o.log_user_data);
  return out;
}

Result<ModelWeights> ToLayout(const tributary_client_options& o) {
  if (!o.tensors || o.num_tensors == 0)
    return Status::InvalidArgument("tensors: the model layout is required (num_tensors >= 1)");
  ModelWeights::LayoutSpec spec;
  for (size_t i = 0; i < o.num_tensors; ++i) {
    const tributary_tensor& t = o.tensors[i];
    if (!t.name) return Status::InvalidArgument("tensors[" + std::to_string(i) + "].name is NULL");
    if (t.rank > 0 && !t.shape)
      return Status::InvalidArgument("tensors[" + std::to_string(i) + "].shape is NULL");
    spec.emplace_back(t.name, std::vector<int64_t>(t.shape, t.shape + t.rank));
  }
  TRIB_ASSIGN_OR_RETURN(ModelWeights w, ModelWeights::Create(spec));
  return w;
}

}  // namespace
}  // namespace tributary

struct tributary_client {
  std::unique_ptr<tributary::Client> client;
  bool has_predict = false;
  size_t predict_output_size = 0;
  std::mutex mu;
  std::string last_error;  // GUARDED_BY(mu)

  int Record(const tributary::Status& s) {
    std::lock_guard<std::mutex> lock(mu);
    last_error = s.ok() ? std::string() : s.ToString();
    return static_cast<int>(s.code());
  }
};

namespace {

template <class F>
int Guarded(tributary_client* c, F&& f) {
  if (!c) return TRIBUTARY_INVALID_ARGUMENT;
  try {
    return c->Record(f());
  } catch (const std::exception& e) {
    return c->Record(tributary::Status::Internal(std::string("unexpected exception: ") + e.what()));
  } catch (...) {
    return c->Record(tributary::Status::Internal("unexpected exception"));
  }
}

}  // namespace

namespace tributary::capi {

void CopyOut(const std::string& text, char* buffer, size_t size) {
  if (!buffer || size == 0) return;
  const size_t n = std::min(text.size(), size - 1);
  std::memcpy(buffer, text.data(), n);
  buffer[n] = '\0';
}

tributary_client* CreateClientHandle(const tributary_client_options& options,
                                     std::shared_ptr<Trainer> trainer, size_t predict_output_size,
                                     char* error, size_t error_size) {
  try {
    Result<ClientOptions> opts = ToOptions(options);
    if (!opts.ok()) {
      CopyOut(opts.status().ToString(), error, error_size);
      return nullptr;
    }
    Result<std::unique_ptr<Client>> client = Client::Create(std::move(*opts), std::move(trainer));
    if (!client.ok()) {
      CopyOut(client.status().ToString(), error, error_size);
      return nullptr;
    }
    auto* handle = new tributary_client();
    handle->client = std::move(*client);
    handle->has_predict = predict_output_size > 0;
    handle->predict_output_size = predict_output_size;
    CopyOut("", error, error_size);
    return handle;
  } catch (const std::exception& e) {
    CopyOut(std::string("Internal: unexpected exception: ") + e.what(), error, error_size);
    return nullptr;
  } catch (...) {
    CopyOut("Internal: unexpected exception", error, error_size);
    return nullptr;
  }
}

}  // namespace tributary::capi

namespace {

// The exchange behind a handle, if `fn` may use it now (not NULL, within its fit_split call, on
// that call's thread); FailedPrecondition or InvalidArgument naming `fn` otherwise.
tributary::Result<tributary::SplitExchange*> ServerOf(tributary_split_exchange* exchange,
                                                      const std::string& fn) {
  using tributary::Status;
  if (!exchange) return Status::InvalidArgument(fn + ": exchange is NULL");
  tributary::SplitExchange* server = exchange->server.load(std::memory_order_acquire);
  if (!server)
    return Status::FailedPrecondition(fn +
                                      ": this exchange is no longer valid (use it only during "
                                      "the fit_split call it was given to)");
  if (std::this_thread::get_id() != exchange->thread)
    return Status::FailedPrecondition(
        fn +
        ": called from another thread than fit_split's (the exchange carries one batch at a "
        "time, from the thread that runs fit_split)");
  return server;
}

// A failed exchange's status, kept as the task's failure (the first one).
tributary::Status Failed(tributary_split_exchange* exchange, tributary::Status s) {
  if (!exchange->failure) exchange->failure = s;
  return s;
}

}  // namespace

extern "C" {

void tributary_client_options_init(tributary_client_options* o) {
  if (!o) return;
  std::memset(o, 0, sizeof(*o));
  const tributary::ClientOptions d;
  o->device = "cpu";
  o->backoff_initial_ms = static_cast<uint32_t>(d.backoff.initial_delay.count());
  o->backoff_max_ms = static_cast<uint32_t>(d.backoff.max_delay.count());
  o->backoff_multiplier = d.backoff.multiplier;
  o->backoff_jitter = d.backoff.jitter;
  o->connect_timeout_ms = static_cast<uint32_t>(d.connect_timeout.count());
  o->log_level = static_cast<int>(d.log_level);
  o->predict = nullptr;  // no prediction unless the app gives a callback
  o->predict_output_size = 0;
  o->split = 0;  // whole-model training unless the app asks for split learning
  o->fit_split = nullptr;
}

tributary_client* tributary_client_create(const tributary_client_options* options, char* error,
                                          size_t error_size) {
  using namespace tributary;
  try {
    if (!options) {
      CopyOut("InvalidArgument: options is NULL", error, error_size);
      return nullptr;
    }
    if (options->split && !options->fit_split) {
      CopyOut("InvalidArgument: fit_split: the fit_split callback is required when split is set",
              error, error_size);
      return nullptr;
    }
    if (!options->split && !options->fit) {
      CopyOut("InvalidArgument: fit: the fit callback is required", error, error_size);
      return nullptr;
    }
    if (options->predict && options->predict_output_size == 0) {
      CopyOut(
          "InvalidArgument: predict_output_size: must be >= 1 (the values the predict callback "
          "writes per sample) when predict is set",
          error, error_size);
      return nullptr;
    }
    Result<ModelWeights> layout = ToLayout(*options);
    if (!layout.ok()) {
      CopyOut(layout.status().ToString(), error, error_size);
      return nullptr;
    }
    auto trainer = std::make_shared<CallbackTrainer>(std::move(*layout), *options);
    return capi::CreateClientHandle(*options, std::move(trainer),
                                    options->predict ? options->predict_output_size : 0, error,
                                    error_size);
  } catch (const std::exception& e) {
    CopyOut(std::string("Internal: unexpected exception: ") + e.what(), error, error_size);
    return nullptr;
  } catch (...) {
    CopyOut("Internal: unexpected exception", error, error_size);
    return nullptr;
  }
}

int tributary_client_run(tributary_client* c) {
  return Guarded(c, [&] { return c->client->run(); });
}

int tributary_client_start(tributary_client* c) {
  return Guarded(c, [&] { return c->client->start(); });
}

int tributary_client_wait(tributary_client* c) {
  return Guarded(c, [&] { return c->client->wait(); });
}

void tributary_client_stop(tributary_client* c) {
  if (!c) return;
  try {
    c->client->stop();
  } catch (...) {
    // Only allocation can fail here; there is nothing better to do than not stopping.
  }
}

const char* tributary_client_last_error(const tributary_client* c) {
  if (!c) return "InvalidArgument: client is NULL";
  auto* mc = const_cast<tributary_client*>(c);
  std::lock_guard<std::mutex> lock(mc->mu);
  return mc->last_error.c_str();
}

size_t tributary_client_id(const tributary_client* c, char* buffer, size_t size) {
  if (!c) {
    tributary::CopyOut("", buffer, size);
    return 0;
  }
  const std::string id = c->client->client_id();
  tributary::CopyOut(id, buffer, size);
  return id.size();
}

int tributary_client_predict(tributary_client* c, const float* inputs, size_t inputs_len,
                             int64_t count, float* outputs, size_t outputs_len, char* error,
                             size_t error_size) {
  using namespace tributary;
  return Reported(error, error_size, [&]() -> Status {
    if (!c) return Status::InvalidArgument("tributary_client_predict: client is NULL");
    if (!c->has_predict)
      return Status::Unimplemented(
          "tributary_client_predict: this client has no predict callback (set "
          "tributary_client_options.predict and predict_output_size before "
          "tributary_client_create)");
    if (count < 1)
      return Status::InvalidArgument("tributary_client_predict: count must be >= 1, got " +
                                     std::to_string(count));
    const auto n = static_cast<uint64_t>(count);
    if (!inputs || inputs_len == 0 || inputs_len % n != 0)
      return Status::InvalidArgument(
          "tributary_client_predict: inputs must hold count samples of the same size: inputs_len " +
          std::to_string(inputs_len) + (inputs ? "" : " (inputs is NULL)") + " for count " +
          std::to_string(count));
    const uint64_t k = c->predict_output_size;
    if (n > SIZE_MAX / k)
      return Status::InvalidArgument("tributary_client_predict: count " + std::to_string(count) +
                                     " times predict_output_size " + std::to_string(k) +
                                     " overflows");
    const uint64_t needed = n * k;
    if (!outputs || outputs_len < needed)
      return Status::InvalidArgument(
          "tributary_client_predict: outputs_len " + std::to_string(outputs_len) +
          (outputs ? "" : " (outputs is NULL)") + " is too small: " + std::to_string(count) +
          " samples of predict_output_size " + std::to_string(k) + " need " +
          std::to_string(needed) + " floats");
    Result<std::vector<float>> r = c->client->predict({inputs, inputs_len}, count);
    if (!r.ok()) return r.status();
    if (r->size() != needed)
      return Status::Internal("tributary_client_predict: the predict callback produced " +
                              std::to_string(r->size()) + " values, expected " +
                              std::to_string(needed));
    std::copy(r->begin(), r->end(), outputs);
    return Status::Ok();
  });
}

int tributary_client_global_model(const tributary_client* c, uint64_t* round,
                                  uint64_t* model_version) {
  if (!c) return TRIBUTARY_INVALID_ARGUMENT;
  try {
    const std::optional<tributary::GlobalModelInfo> info = c->client->global_model();
    if (!info) return TRIBUTARY_FAILED_PRECONDITION;
    if (round) *round = info->round;
    if (model_version) *model_version = info->model_version;
    return TRIBUTARY_OK;
  } catch (...) {
    return TRIBUTARY_INTERNAL;  // only allocation can fail here
  }
}

void tributary_client_destroy(tributary_client* c) {
  try {
    delete c;
  } catch (...) {
    // A destructor that throws would terminate; nothing else can be done here.
  }
}

int tributary_split_exchange_batch(tributary_split_exchange* exchange, const float* activations,
                                   size_t activations_len, const uint8_t* labels, size_t count,
                                   float* gradient, size_t gradient_len, double* loss_sum,
                                   int64_t* correct, char* error, size_t error_size) {
  using namespace tributary;
  return Reported(error, error_size, [&]() -> Status {
    TRIB_ASSIGN_OR_RETURN(SplitExchange * server,
                          ServerOf(exchange, "tributary_split_exchange_batch"));
    if (count == 0 || !labels)
      return Status::InvalidArgument(
          "tributary_split_exchange_batch: count must be >= 1 with labels given, got count " +
          std::to_string(count) + (labels ? "" : " (labels is NULL)"));
    if (!activations || activations_len == 0 || activations_len % count != 0)
      return Status::InvalidArgument(
          "tributary_split_exchange_batch: activations must hold count samples of the same "
          "size: activations_len " +
          std::to_string(activations_len) + (activations ? "" : " (activations is NULL)") +
          " for count " + std::to_string(count));
    if (!gradient || gradient_len < activations_len)
      return Status::InvalidArgument(
          "tributary_split_exchange_batch: gradient_len " + std::to_string(gradient_len) +
          (gradient ? "" : " (gradient is NULL)") + " is too small: the gradient has " +
          std::to_string(activations_len) + " values, one per activation");
    Result<CutGradient> g = server->Exchange({activations, activations_len}, {labels, count});
    if (!g.ok()) return Failed(exchange, g.status());
    if (g->gradient.size() != activations_len)
      return Status::Internal("tributary_split_exchange_batch: the gradient has " +
                              std::to_string(g->gradient.size()) + " values for " +
                              std::to_string(activations_len) + " activations");
    std::copy(g->gradient.begin(), g->gradient.end(), gradient);
    if (loss_sum) *loss_sum = g->loss_sum;
    if (correct) *correct = g->correct;
    return Status::Ok();
  });
}

int tributary_split_exchange_front(tributary_split_exchange* exchange, const float* activations,
                                   size_t activations_len, size_t count, float* middle,
                                   size_t middle_len, char* error, size_t error_size) {
  using namespace tributary;
  return Reported(error, error_size, [&]() -> Status {
    TRIB_ASSIGN_OR_RETURN(SplitExchange * server,
                          ServerOf(exchange, "tributary_split_exchange_front"));
    if (count == 0 || !activations || activations_len == 0 || activations_len % count != 0)
      return Status::InvalidArgument(
          "tributary_split_exchange_front: activations must hold count >= 1 samples of the same "
          "size: activations_len " +
          std::to_string(activations_len) + (activations ? "" : " (activations is NULL)") +
          " for count " + std::to_string(count));
    if (!middle || middle_len == 0 || middle_len % count != 0)
      return Status::InvalidArgument(
          "tributary_split_exchange_front: middle must hold count "
          "samples of the head's input: middle_len " +
          std::to_string(middle_len) + (middle ? "" : " (middle is NULL)") + " for count " +
          std::to_string(count));
    const Status s = server->ExchangeFront({activations, activations_len},
                                           static_cast<int64_t>(count), {middle, middle_len});
    if (s.ok()) exchange->front_activations = activations_len;
    return s.ok() ? s : Failed(exchange, s);
  });
}

int tributary_split_exchange_head(tributary_split_exchange* exchange, const float* head_gradient,
                                  size_t head_gradient_len, double loss_sum, int64_t correct,
                                  float* gradient, size_t gradient_len, char* error,
                                  size_t error_size) {
  using namespace tributary;
  return Reported(error, error_size, [&]() -> Status {
    TRIB_ASSIGN_OR_RETURN(SplitExchange * server,
                          ServerOf(exchange, "tributary_split_exchange_head"));
    if (!head_gradient || head_gradient_len == 0)
      return Status::InvalidArgument("tributary_split_exchange_head: head_gradient is " +
                                     std::string(head_gradient ? "empty" : "NULL"));
    if (!gradient)
      return Status::InvalidArgument("tributary_split_exchange_head: gradient is NULL");
    // The gradient at the cut has as many values as the front's activations: checked before the
    // head's gradient is sent, so a buffer too small costs nothing on the server's side.
    if (gradient_len < exchange->front_activations)
      return Status::InvalidArgument(
          "tributary_split_exchange_head: gradient_len " + std::to_string(gradient_len) +
          " is too small: the gradient at the cut has " +
          std::to_string(exchange->front_activations) + " values (the front's activations)");
    Result<CutGradient> g =
        server->ExchangeHead({head_gradient, head_gradient_len}, loss_sum, correct);
    if (!g.ok()) return Failed(exchange, g.status());
    if (g->gradient.size() > gradient_len)
      return Failed(exchange,
                    Status::InvalidArgument("tributary_split_exchange_head: gradient_len " +
                                            std::to_string(gradient_len) +
                                            " is too small: the gradient "
                                            "at the cut has " +
                                            std::to_string(g->gradient.size()) + " values"));
    std::copy(g->gradient.begin(), g->gradient.end(), gradient);
    return Status::Ok();
  });
}

int tributary_set_log_handler(int level, tributary_log_fn fn, void* user_data) {
  using namespace tributary;
  try {
    Result<LogLevel> lvl = ToLogLevel(level);
    if (!lvl.ok()) return static_cast<int>(lvl.status().code());
    SetLogHandler(*lvl, fn ? ToLogCallback(fn, user_data) : LogCallback());
    return TRIBUTARY_OK;
  } catch (...) {
    return TRIBUTARY_INTERNAL;  // only allocation can fail here
  }
}

const char* tributary_status_name(int code) {
  if (code < 0 || code > TRIBUTARY_INTERNAL) return "Unknown";
  // StatusCodeName returns views into string literals, so .data() is NUL-terminated.
  return tributary::StatusCodeName(static_cast<tributary::StatusCode>(code)).data();
}

}  // extern "C"
