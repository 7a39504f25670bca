// The index section of a sparse payload: which k of the model's n values are carried, in
// increasing order, in whichever of two encodings is smaller:
//   varint  (mode 0): the first index, then each index minus the one before (>= 1), as LEB128
//                     varints; sum of VarintSize(gap) bytes.
//   bitmap  (mode 1): ceil(n / 8) bytes, bit i (LSB first) set when index i is carried; the
//                     padding bits past n are zero.
// Section layout: u8 mode, u32 byte count, then the bytes (5 + that count bytes in all).
//
// Validation checks everything before anything is decoded: a known mode, a byte count that fits
// the payload, exactly k indices using exactly the bytes, every index < n, strictly increasing.
// Functions are pure and thread-safe; IndexCursor is a small non-owning reader for one thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "compression/byte_io.h"
#include "tributary/result.h"

namespace tributary {

enum class IndexMode : uint8_t { kVarint = 0, kBitmap = 1 };

inline constexpr size_t kIndexHeaderBytes = 5;

// Bytes of the varint encoding of increasing `idx` (without the header).
size_t VarintIndexBytes(std::span<const uint32_t> idx);
inline size_t BitmapIndexBytes(size_t n) { return (n + 7) / 8; }

// Appends the section for increasing indices `idx`, all < n; returns the mode it chose.
IndexMode EncodeIndices(std::span<const uint32_t> idx, size_t n, std::vector<uint8_t>* out);

struct IndexSection {
  IndexMode mode = IndexMode::kVarint;
  std::span<const uint8_t> bytes;
};

// Reads and fully validates a section of k indices into a model of n from `in`; Corruption naming
// the problem otherwise.
Result<IndexSection> ReadIndexSection(ByteReader& in, size_t k, size_t n);

// Streams the indices of a validated section in order.
class IndexCursor {
 public:
  explicit IndexCursor(const IndexSection& s) : s_(s) {}
  // Writes up to `max` next indices to out; returns how many (0 at the end).
  size_t Next(uint32_t* out, size_t max);

 private:
  IndexSection s_;
  size_t pos_ = 0;     // byte (varint) or 64-bit word (bitmap) position
  uint64_t prev_ = 0;  // varint: the last index; bitmap: unused
  bool started_ = false;
  uint64_t word_ = 0;  // bitmap: bits of the current word not yet returned
  size_t word_base_ = 0;
};

}  // namespace tributary
