// SharedBytes: an immutable, reference-counted byte vector.
//
// The byte-buffer sibling of SharedFloats (shared_floats.h), for a model payload that travels
// encoded (ModelPayload::encoded, e.g. a q8-quantized global model): the coordinator encodes the
// model once per round and every client's message points at that one buffer.
//
// Ownership: the vector is owned jointly by every SharedBytes that points at it and freed with the
// last. It is never written after construction (there is no mutable access), so a decoder that
// loads a new buffer replaces the pointer rather than writing through it.
//
// Thread safety: like std::shared_ptr<const std::vector<uint8_t>>.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <span>
#include <utility>
#include <vector>

namespace tributary {

class SharedBytes {
 public:
  SharedBytes() = default;
  // Takes the vector over without copying it.
  SharedBytes(std::vector<uint8_t>&& bytes)  // NOLINT(google-explicit-constructor)
      : bytes_(std::make_shared<const std::vector<uint8_t>>(std::move(bytes))) {}
  SharedBytes(std::initializer_list<uint8_t> bytes)  // NOLINT(google-explicit-constructor)
      : SharedBytes(std::vector<uint8_t>(bytes)) {}
  // Shares `bytes` (null means empty).
  explicit SharedBytes(std::shared_ptr<const std::vector<uint8_t>> bytes)
      : bytes_(std::move(bytes)) {}

  std::span<const uint8_t> span() const {
    return bytes_ ? std::span<const uint8_t>(*bytes_) : std::span<const uint8_t>();
  }
  size_t size() const { return bytes_ ? bytes_->size() : 0; }
  bool empty() const { return size() == 0; }
  const uint8_t* data() const { return span().data(); }
  // The shared vector itself (null when empty).
  const std::shared_ptr<const std::vector<uint8_t>>& shared() const { return bytes_; }

  // Compares the bytes, not the pointers.
  friend bool operator==(const SharedBytes& a, const SharedBytes& b) {
    if (a.bytes_ == b.bytes_) return true;
    const std::span<const uint8_t> x = a.span(), y = b.span();
    return std::equal(x.begin(), x.end(), y.begin(), y.end());
  }

 private:
  std::shared_ptr<const std::vector<uint8_t>> bytes_;
};

}  // namespace tributary
