// Little-endian byte writing and bounds-checked reading for the codec wire formats.
//
// ByteWriter appends to a vector it owns. ByteReader reads from a span it does not own and never
// reads past its end: every Read* returns false (and reads nothing) when too few bytes remain, so a
// truncated payload is found before anything is trusted. Varints are LEB128, at most 5 bytes for
// a uint32 (a longer or overflowing one is rejected). Not thread-safe; cheap to copy.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

namespace tributary {

class ByteWriter {
 public:
  explicit ByteWriter(std::vector<uint8_t>* out) : out_(out) {}
  void U8(uint8_t v) { out_->push_back(v); }
  void U32(uint32_t v) { Raw(&v, 4); }
  void F32(float v) { Raw(&v, 4); }
  void Varint(uint32_t v) {
    while (v >= 0x80) {
      out_->push_back(static_cast<uint8_t>(v | 0x80));
      v >>= 7;
    }
    out_->push_back(static_cast<uint8_t>(v));
  }
  // Appends n zero bytes and returns a pointer to them (valid until the next append).
  uint8_t* Grow(size_t n) {
    const size_t at = out_->size();
    out_->resize(at + n);
    return out_->data() + at;
  }
  void Raw(const void* p, size_t n) {  // little-endian hosts only (checked in codec.cc)
    if (n == 0) return;
    std::memcpy(Grow(n), p, n);
  }

 private:
  std::vector<uint8_t>* out_;
};

class ByteReader {
 public:
  explicit ByteReader(std::span<const uint8_t> in) : in_(in) {}
  size_t remaining() const { return in_.size() - pos_; }
  size_t position() const { return pos_; }
  bool U8(uint8_t* v) {
    if (remaining() < 1) return false;
    *v = in_[pos_++];
    return true;
  }
  bool U32(uint32_t* v) { return Raw(v, 4); }
  bool F32(float* v) { return Raw(v, 4); }
  bool Raw(void* p, size_t n) {
    if (remaining() < n) return false;
    std::memcpy(p, in_.data() + pos_, n);
    pos_ += n;
    return true;
  }
  // The next n bytes, consumed; false when fewer remain.
  bool Take(size_t n, std::span<const uint8_t>* out) {
    if (remaining() < n) return false;
    *out = in_.subspan(pos_, n);
    pos_ += n;
    return true;
  }
  // False on truncation, more than 5 bytes, or a value above 2^32 - 1.
  bool Varint(uint32_t* v) {
    uint64_t x = 0;
    for (int shift = 0; shift < 35; shift += 7) {
      if (pos_ >= in_.size()) return false;
      const uint8_t b = in_[pos_++];
      x |= static_cast<uint64_t>(b & 0x7f) << shift;
      if (!(b & 0x80)) {
        if (x > 0xffffffffu) return false;
        *v = static_cast<uint32_t>(x);
        return true;
      }
    }
    return false;
  }

 private:
  std::span<const uint8_t> in_;
  size_t pos_ = 0;
};

// Bytes of v as a varint.
inline size_t VarintSize(uint32_t v) {
  size_t n = 1;
  while (v >= 0x80) v >>= 7, ++n;
  return n;
}

}  // namespace tributary
