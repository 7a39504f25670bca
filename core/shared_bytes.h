// SharedBytes: an immutable, reference-counted byte vector.
//
// The byte-buffer sibling of SharedFloats (shared_floats.h), for a model payload that travels
// encoded (ModelPayload::encoded, e.g. a q8-quantized global model): the coordinator encodes the
// model once per round and every client's message points at that one buffer.
//
// Ownership: the bytes' owner (a vector, or a received message buffer) is owned jointly by every
// SharedBytes that points into it and freed with the last. It is never written after construction
// (there is no mutable access), so a decoder that loads a new buffer replaces the pointer rather
// than writing through it.
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
      : SharedBytes(std::make_shared<const std::vector<uint8_t>>(std::move(bytes))) {}
  SharedBytes(std::initializer_list<uint8_t> bytes)  // NOLINT(google-explicit-constructor)
      : SharedBytes(std::vector<uint8_t>(bytes)) {}
  // Shares `bytes` (null means empty).
  explicit SharedBytes(std::shared_ptr<const std::vector<uint8_t>> bytes)
      : span_(bytes ? std::span<const uint8_t>(*bytes) : std::span<const uint8_t>()),
        owner_(std::move(bytes)) {}
  // Bytes that live inside memory `owner` keeps alive (and nobody writes): e.g. the part of a
  // received message body that holds an update, without copying it out of the receive buffer.
  SharedBytes(std::shared_ptr<const void> owner, std::span<const uint8_t> bytes)
      : span_(bytes), owner_(std::move(owner)) {}

  std::span<const uint8_t> span() const { return span_; }
  size_t size() const { return span_.size(); }
  bool empty() const { return span_.empty(); }
  const uint8_t* data() const { return span_.data(); }
  // A contiguous range: converts to std::span<const uint8_t>.
  const uint8_t* begin() const { return span_.data(); }
  const uint8_t* end() const { return span_.data() + span_.size(); }
  // What keeps the bytes alive (null when empty).
  const std::shared_ptr<const void>& shared() const { return owner_; }
  // A copy of the bytes.
  std::vector<uint8_t> ToVector() const { return {span_.begin(), span_.end()}; }

  // Compares the bytes, not the pointers.
  friend bool operator==(const SharedBytes& a, const SharedBytes& b) {
    if (a.span_.data() == b.span_.data() && a.span_.size() == b.span_.size()) return true;
    return std::equal(a.span_.begin(), a.span_.end(), b.span_.begin(), b.span_.end());
  }

 private:
  std::span<const uint8_t> span_;
  std::shared_ptr<const void> owner_;
};

}  // namespace tributary
