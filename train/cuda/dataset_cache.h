// DatasetCache: device-resident copies of the Datasets an engine trains and evaluates on, so each
// is uploaded once and batches are gathered on the GPU from an index list (only the indices cross
// the bus per step).
//
// A Dataset is identified by its address, its buffers' addresses and sizes, and a sample of its
// values; the caller must not modify a Dataset's contents in place while an engine that has seen it
// is alive (replacing or resizing it is detected). Holds up to two datasets (a client's training
// partition and its evaluation set), evicting the least recently used. Not thread-safe.
#pragma once

#include <array>
#include <cstdint>

#include "train/cuda/device_buffer.h"
#include "train/data/dataset.h"
#include "tributary/result.h"

namespace tributary::cuda {

struct DeviceDataset {
  const float* images = nullptr;    // [size, sample_size]
  const uint8_t* labels = nullptr;  // [size]
};

class DatasetCache {
 public:
  // The device copy of `data`, uploading it (synchronously) if it is not cached. Fails with
  // ResourceExhausted when the GPU has no room for it, InvalidArgument when its buffers disagree
  // with its shape.
  Result<DeviceDataset> Get(const Dataset& data, cudaStream_t stream);
  // How many uploads have happened (for tests: a dataset is uploaded once).
  int64_t uploads() const { return uploads_; }

 private:
  struct Key {
    const Dataset* dataset = nullptr;
    const float* images = nullptr;
    const uint8_t* labels = nullptr;
    size_t num_images = 0, num_labels = 0;
    uint64_t sample_hash = 0;
    friend bool operator==(const Key&, const Key&) = default;
  };
  struct Entry {
    Key key;
    uint64_t last_use = 0;
    DeviceBuffer<float> images;
    DeviceBuffer<uint8_t> labels;
  };
  static Key KeyOf(const Dataset& data);

  std::array<Entry, 2> entries_;
  uint64_t clock_ = 0;
  int64_t uploads_ = 0;
};

}  // namespace tributary::cuda
