#include "train/cuda/dataset_cache.h"

#include <bit>
#include <cstring>
#include <string>

namespace tributary::cuda {

DatasetCache::Key DatasetCache::KeyOf(const Dataset& data) {
  Key k;
  k.dataset = &data;
  k.images = data.images.data();
  k.labels = data.labels.data();
  k.num_images = data.images.size();
  k.num_labels = data.labels.size();
  // 64 values spread over the images plus 64 labels: cheap enough for every step, and it catches a
  // Dataset that was destroyed and replaced by another at the same address with the same sizes.
  uint64_t h = 1469598103934665603ull;
  auto mix = [&h](uint64_t v) { h = (h ^ v) * 1099511628211ull; };
  for (size_t i = 0; i < 64 && k.num_images > 0; ++i)
    mix(std::bit_cast<uint32_t>(data.images[(k.num_images - 1) * i / 63]));
  for (size_t i = 0; i < 64 && k.num_labels > 0; ++i) mix(data.labels[(k.num_labels - 1) * i / 63]);
  k.sample_hash = h;
  return k;
}

Result<DeviceDataset> DatasetCache::Get(const Dataset& data, cudaStream_t stream) {
  if (data.sample_size() <= 0 ||
      data.images.size() != static_cast<size_t>(data.size() * data.sample_size()))
    return Status::InvalidArgument(
        "dataset " + data.name + " holds " + std::to_string(data.images.size()) +
        " image values, not size x sample size = " + std::to_string(data.size()) + " x " +
        std::to_string(data.sample_size()));
  const Key key = KeyOf(data);
  ++clock_;
  Entry* victim = &entries_[0];
  for (Entry& e : entries_) {
    if (e.key == key && e.images.size() == key.num_images) {
      e.last_use = clock_;
      return DeviceDataset{e.images.data(), e.labels.data()};
    }
    if (e.last_use < victim->last_use) victim = &e;
  }
  // Free the old copy before allocating the new one, so two large datasets need not fit at once.
  victim->images.Reset();
  victim->labels.Reset();
  victim->key = Key{};
  TRIB_RETURN_IF_ERROR(
      victim->images.Upload(data.images, stream).WithContext("uploading dataset " + data.name));
  TRIB_RETURN_IF_ERROR(
      victim->labels.Upload(data.labels, stream).WithContext("uploading dataset " + data.name));
  victim->key = key;
  victim->last_use = clock_;
  ++uploads_;
  return DeviceDataset{victim->images.data(), victim->labels.data()};
}

}  // namespace tributary::cuda
