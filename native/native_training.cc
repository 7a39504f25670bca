// CreateNativeTrainer (include/tributary/native_training.h): the app's arrays become the engine's
// Dataset, the model is resolved against their shape, and NativeTrainer does the training.
#include "tributary/native_training.h"

#include <limits>
#include <utility>

#include "native/sample_shape.h"
#include "train/data/dataset.h"
#include "train/device.h"
#include "train/model_file.h"
#include "train/native_trainer.h"

namespace tributary {
namespace {

// Checks one set's arrays and moves them into a Dataset; null when the set is empty.
Result<std::shared_ptr<const Dataset>> ToDataset(SampleArrays a, const char* which) {
  const std::string set(which);
  if (a.labels.empty()) {
    if (!a.features.empty())
      return Status::InvalidArgument(set + ".features holds " + std::to_string(a.features.size()) +
                                     " values but " + set + ".labels is empty");
    return std::shared_ptr<const Dataset>();
  }
  TRIB_ASSIGN_OR_RETURN(const uint64_t sample,
                        CheckedSampleSize(a.height, a.width, a.channels, set));
  if (a.num_classes < 2 || a.num_classes > 256)
    return Status::InvalidArgument(set + ".num_classes must be in [2, 256], got " +
                                   std::to_string(a.num_classes));
  const uint64_t count = a.labels.size();
  if (sample > std::numeric_limits<uint64_t>::max() / count || a.features.size() != sample * count)
    return Status::InvalidArgument(set + ".features holds " + std::to_string(a.features.size()) +
                                   " values; " + std::to_string(count) + " samples of " +
                                   std::to_string(sample) + " values need " +
                                   std::to_string(sample * count));
  if (count > std::numeric_limits<uint32_t>::max())
    return Status::InvalidArgument(set + ": at most 2^32 - 1 samples, got " +
                                   std::to_string(count));
  for (size_t i = 0; i < a.labels.size(); ++i) {
    if (a.labels[i] >= a.num_classes)
      return Status::InvalidArgument(set + ".labels[" + std::to_string(i) + "] is " +
                                     std::to_string(a.labels[i]) + ", not below num_classes " +
                                     std::to_string(a.num_classes));
  }
  auto d = std::make_shared<Dataset>();
  d->name = set;
  d->height = a.height;
  d->width = a.width;
  d->channels = a.channels;
  d->num_classes = a.num_classes;
  d->images = std::move(a.features);
  d->labels = std::move(a.labels);
  return std::shared_ptr<const Dataset>(std::move(d));
}

// The model for samples of `shape` and `classes` (options.model or options.model_toml).
Result<ModelSpec> ResolveModel(const NativeTrainingOptions& options, Shape3 shape, int classes) {
  if (options.model.empty() && options.model_toml.empty())
    return Status::InvalidArgument(
        "model: give a model file's path or a built-in model's name (or model_toml)");
  Result<ModelSpec> spec =
      options.model_toml.empty()
          ? ResolveModelSpec(options.model, shape, classes)
          : ResolveModelText(options.model_toml,
                             options.model.empty() ? "model_toml" : options.model, shape, classes);
  if (!spec.ok()) return spec.status().WithContext("model");
  return spec;
}

// The trainer as the app asked for it: its epoch callback set.
std::unique_ptr<Trainer> WithProgress(const NativeTrainingOptions& options,
                                      std::unique_ptr<NativeTrainer> trainer) {
  if (options.on_epoch) {
    trainer->set_epoch_callback([cb = options.on_epoch](const EpochReport& r) {
      cb(NativeEpochProgress{r.epoch, r.epochs, r.loss, r.accuracy, r.samples_per_second});
    });
  }
  return std::unique_ptr<Trainer>(std::move(trainer));
}

}  // namespace

Result<std::unique_ptr<Trainer>> CreateNativeTrainer(const NativeTrainingOptions& options,
                                                     SampleArrays train, SampleArrays eval) {
  TRIB_ASSIGN_OR_RETURN(std::shared_ptr<const Dataset> train_set,
                        ToDataset(std::move(train), "train"));
  TRIB_ASSIGN_OR_RETURN(std::shared_ptr<const Dataset> eval_set,
                        ToDataset(std::move(eval), "eval"));
  if (!train_set && !eval_set)
    return Status::InvalidArgument("train and eval are both empty: give samples to train on");
  const Dataset& shape = train_set ? *train_set : *eval_set;
  if (train_set && eval_set &&
      (eval_set->sample_size() != train_set->sample_size() ||
       eval_set->num_classes != train_set->num_classes))
    return Status::InvalidArgument("eval's samples (" + std::to_string(eval_set->sample_size()) +
                                   " values, " + std::to_string(eval_set->num_classes) +
                                   " classes) are not train's (" +
                                   std::to_string(train_set->sample_size()) + " values, " +
                                   std::to_string(train_set->num_classes) + " classes)");
  TRIB_ASSIGN_OR_RETURN(
      ModelSpec spec,
      ResolveModel(options, Shape3{shape.height, shape.width, shape.channels}, shape.num_classes));
  TRIB_ASSIGN_OR_RETURN(int threads, ResolveCpuThreads(options.threads));
  Result<EngineFactory> factory = SelectEngineFactory(options.device, threads);
  if (!factory.ok()) return factory.status().WithContext("device");
  TRIB_ASSIGN_OR_RETURN(std::unique_ptr<NativeTrainer> trainer,
                        NativeTrainer::Create(spec, std::move(train_set), std::move(eval_set),
                                              options.init_seed, std::move(*factory)));
  return WithProgress(options, std::move(trainer));
}

Result<std::unique_ptr<Trainer>> CreateNativeTrainer(const NativeTrainingOptions& options,
                                                     SampleSource train, SampleArrays eval) {
  if (!train.read) return Status::InvalidArgument("train.read: the source has no read function");
  TRIB_RETURN_IF_ERROR(
      CheckedSampleSize(train.height, train.width, train.channels, "train").status());
  if (train.num_classes < 2 || train.num_classes > 256)
    return Status::InvalidArgument("train.num_classes must be in [2, 256], got " +
                                   std::to_string(train.num_classes));
  if (options.device != "cpu")
    return Status::InvalidArgument(
        "device: a sample source trains on the CPU engine (\"cpu\"), "
        "not '" +
        options.device + "'");
  TRIB_ASSIGN_OR_RETURN(std::shared_ptr<const Dataset> eval_set,
                        ToDataset(std::move(eval), "eval"));
  const Shape3 shape{train.height, train.width, train.channels};
  if (eval_set &&
      (eval_set->sample_size() != shape.numel() || eval_set->num_classes != train.num_classes))
    return Status::InvalidArgument("eval's samples (" + std::to_string(eval_set->sample_size()) +
                                   " values, " + std::to_string(eval_set->num_classes) +
                                   " classes) are not the source's (" +
                                   std::to_string(shape.numel()) + " values, " +
                                   std::to_string(train.num_classes) + " classes)");
  TRIB_ASSIGN_OR_RETURN(ModelSpec spec, ResolveModel(options, shape, train.num_classes));
  TRIB_ASSIGN_OR_RETURN(int threads, ResolveCpuThreads(options.threads));
  BatchSource source{spec.input, train.num_classes, train.size, std::move(train.read)};
  Result<std::unique_ptr<NativeTrainer>> trainer = NativeTrainer::CreateStreaming(
      spec, std::move(source), std::move(eval_set), options.init_seed,
      [threads](const ModelSpec& s, int64_t b) { return CreateCpuEngine(s, b, threads); });
  if (!trainer.ok()) return trainer.status().WithContext("train");
  return WithProgress(options, std::move(*trainer));
}

}  // namespace tributary
