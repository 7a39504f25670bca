// The C form of the native training API (include/tributary/native_c_api.h): the options become a
// NativeTrainingOptions and SampleArrays (copied), and the client handle is the C API's own
// (client/c_api_support.h) around the NativeTrainer. Nothing may throw across the C boundary.
#include "tributary/native_c_api.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <memory>
#include <string>

#include "client/c_api_support.h"
#include "native/sample_shape.h"
#include "tributary/native_training.h"

struct tributary_native_trainer {
  std::shared_ptr<tributary::Trainer> trainer;
  size_t num_parameters = 0;
  size_t num_classes = 0;
};

namespace tributary {
namespace {

// Copies one C sample set; the shape fields are the options' (shared by both sets).
Result<SampleArrays> ToArrays(const tributary_native_options& o, const tributary_samples& s,
                              const char* which) {
  const std::string set(which);
  SampleArrays a;
  a.height = o.height;
  a.width = o.width;
  a.channels = o.channels;
  a.num_classes = o.num_classes;
  if (s.count == 0) return a;
  if (!s.labels)
    return Status::InvalidArgument(set + ".labels is NULL with count " + std::to_string(s.count));
  if (!s.features)
    return Status::InvalidArgument(set + ".features is NULL with count " + std::to_string(s.count));
  TRIB_ASSIGN_OR_RETURN(const uint64_t sample,
                        CheckedSampleSize(o.height, o.width, o.channels, set));
  if (s.count > std::numeric_limits<uint32_t>::max() ||
      sample > (uint64_t{1} << 40) / s.count)  // 4 TiB of floats: no app holds more
    return Status::InvalidArgument(set + ".count " + std::to_string(s.count) + " samples of " +
                                   std::to_string(sample) + " values is too many");
  a.features.assign(s.features, s.features + sample * s.count);
  a.labels.assign(s.labels, s.labels + s.count);
  return a;
}

Status RefuseSet(const tributary_client_options& o) {
  const char* field = o.tensors || o.num_tensors ? "tensors"
                      : o.fit                    ? "fit"
                      : o.evaluate               ? "evaluate"
                      : o.predict                ? "predict"
                      : o.predict_output_size    ? "predict_output_size"
                      : o.split                  ? "split"
                      : o.fit_split              ? "fit_split"
                                                 : nullptr;
  if (!field) return Status::Ok();
  return Status::InvalidArgument(std::string(field) +
                                 ": leave it unset with a native trainer (the trainer gives the "
                                 "model's layout and trains, evaluates and predicts itself)");
}

}  // namespace
}  // namespace tributary

extern "C" {

void tributary_native_options_init(tributary_native_options* o) {
  if (!o) return;
  std::memset(o, 0, sizeof(*o));
  const tributary::NativeTrainingOptions d;
  o->device = "cpu";
  o->threads = d.threads;
  o->init_seed = d.init_seed;
  o->channels = 1;
}

tributary_native_trainer* tributary_native_trainer_create(const tributary_native_options* options,
                                                          char* error, size_t error_size) {
  using namespace tributary;
  tributary_native_trainer* made = nullptr;
  capi::Reported(error, error_size, [&]() -> Status {
    if (!options) return Status::InvalidArgument("options is NULL");
    NativeTrainingOptions o;
    o.model = options->model ? options->model : "";
    o.model_toml = options->model_toml ? options->model_toml : "";
    if (options->device && options->device[0]) o.device = options->device;
    o.threads = options->threads;
    o.init_seed = options->init_seed;
    TRIB_ASSIGN_OR_RETURN(SampleArrays eval, ToArrays(*options, options->eval, "eval"));
    std::unique_ptr<Trainer> trainer;
    if (options->read_train) {
      if (options->train.count != 0)
        return Status::InvalidArgument(
            "train: leave it empty with read_train (train_size counts "
            "the samples read_train gives)");
      SampleSource source;
      source.height = options->height;
      source.width = options->width;
      source.channels = options->channels;
      source.num_classes = options->num_classes;
      source.size = static_cast<int64_t>(
          std::min<size_t>(options->train_size, std::numeric_limits<int64_t>::max()));
      source.read = [read = options->read_train, data = options->read_train_data](
                        std::span<const uint32_t> indices, float* features,
                        uint8_t* labels) -> Status {
        const int rc = read(data, indices.data(), indices.size(), features, labels);
        if (rc != 0)
          return Status::Aborted("read_train returned " + std::to_string(rc) + " for a batch of " +
                                 std::to_string(indices.size()) + " samples");
        return Status::Ok();
      };
      TRIB_ASSIGN_OR_RETURN(trainer, CreateNativeTrainer(o, std::move(source), std::move(eval)));
    } else {
      TRIB_ASSIGN_OR_RETURN(SampleArrays train, ToArrays(*options, options->train, "train"));
      TRIB_ASSIGN_OR_RETURN(trainer, CreateNativeTrainer(o, std::move(train), std::move(eval)));
    }
    TRIB_ASSIGN_OR_RETURN(ModelWeights w, trainer->get_parameters());
    auto handle = std::make_unique<tributary_native_trainer>();
    handle->num_parameters = w.size();
    handle->num_classes = static_cast<size_t>(options->num_classes);
    handle->trainer = std::move(trainer);
    made = handle.release();
    return Status::Ok();
  });
  return made;
}

size_t tributary_native_trainer_num_parameters(const tributary_native_trainer* t) {
  return t ? t->num_parameters : 0;
}

size_t tributary_native_trainer_num_classes(const tributary_native_trainer* t) {
  return t ? t->num_classes : 0;
}

void tributary_native_trainer_destroy(tributary_native_trainer* t) {
  try {
    delete t;
  } catch (...) {
    // A destructor that throws would terminate; nothing else can be done here.
  }
}

tributary_client* tributary_client_create_native(const tributary_client_options* options,
                                                 tributary_native_trainer* trainer, char* error,
                                                 size_t error_size) {
  using namespace tributary;
  try {
    Status s = !options   ? Status::InvalidArgument("options is NULL")
               : !trainer ? Status::InvalidArgument("trainer is NULL")
                          : RefuseSet(*options);
    if (!s.ok()) {
      capi::CopyOut(s.ToString(), error, error_size);
      return nullptr;
    }
    tributary_client* client = capi::CreateClientHandle(*options, trainer->trainer,
                                                        trainer->num_classes, error, error_size);
    if (!client) return nullptr;  // the trainer stays the caller's
    delete trainer;
    return client;
  } catch (const std::exception& e) {
    capi::CopyOut(std::string("Internal: unexpected exception: ") + e.what(), error, error_size);
    return nullptr;
  } catch (...) {
    capi::CopyOut("Internal: unexpected exception", error, error_size);
    return nullptr;
  }
}

}  // extern "C"
