#include "compression/index_coding.h"

#include <bit>
#include <cstring>
#include <string>

namespace tributary {
namespace {

uint64_t LoadWord(std::span<const uint8_t> bytes, size_t w) {
  uint64_t v = 0;
  const size_t at = w * 8;
  std::memcpy(&v, bytes.data() + at, std::min<size_t>(8, bytes.size() - at));
  return v;
}

}  // namespace

size_t VarintIndexBytes(std::span<const uint32_t> idx) {
  size_t total = 0;
  uint32_t prev = 0;
  for (size_t i = 0; i < idx.size(); ++i) {
    total += VarintSize(i == 0 ? idx[0] : idx[i] - prev);
    prev = idx[i];
  }
  return total;
}

IndexMode EncodeIndices(std::span<const uint32_t> idx, size_t n, std::vector<uint8_t>* out) {
  const size_t varint = VarintIndexBytes(idx), bitmap = BitmapIndexBytes(n);
  ByteWriter w(out);
  if (varint <= bitmap) {
    w.U8(static_cast<uint8_t>(IndexMode::kVarint));
    w.U32(static_cast<uint32_t>(varint));
    out->reserve(out->size() + varint);
    uint32_t prev = 0;
    for (size_t i = 0; i < idx.size(); ++i) {
      w.Varint(i == 0 ? idx[0] : idx[i] - prev);
      prev = idx[i];
    }
    return IndexMode::kVarint;
  }
  w.U8(static_cast<uint8_t>(IndexMode::kBitmap));
  w.U32(static_cast<uint32_t>(bitmap));
  uint8_t* bits = w.Grow(bitmap);
  for (uint32_t i : idx) bits[i >> 3] |= static_cast<uint8_t>(1u << (i & 7));
  return IndexMode::kBitmap;
}

Result<IndexSection> ReadIndexSection(ByteReader& in, size_t k, size_t n) {
  uint8_t mode = 0;
  uint32_t nbytes = 0;
  if (!in.U8(&mode) || !in.U32(&nbytes))
    return Status::Corruption("truncated payload: the index section header is cut off");
  IndexSection s;
  if (!in.Take(nbytes, &s.bytes))
    return Status::Corruption("truncated payload: the index section claims " +
                              std::to_string(nbytes) + " bytes, " + std::to_string(in.remaining()) +
                              " remain");
  if (mode == static_cast<uint8_t>(IndexMode::kVarint)) {
    s.mode = IndexMode::kVarint;
    ByteReader r(s.bytes);
    uint64_t prev = 0;
    for (size_t i = 0; i < k; ++i) {
      uint32_t gap = 0;
      if (!r.Varint(&gap))
        return Status::Corruption("index " + std::to_string(i) + " of " + std::to_string(k) +
                                  ": varint truncated or longer than 32 bits");
      if (i > 0 && gap == 0)
        return Status::Corruption("index " + std::to_string(i) +
                                  " is not greater than the one before (indices must increase)");
      const uint64_t at = i == 0 ? gap : prev + gap;
      if (at >= n)
        return Status::Corruption("index " + std::to_string(i) + " is " + std::to_string(at) +
                                  ", out of range for a model of " + std::to_string(n) + " floats");
      prev = at;
    }
    if (r.remaining() != 0)
      return Status::Corruption("index section has " + std::to_string(r.remaining()) +
                                " bytes left after its " + std::to_string(k) + " indices");
    return s;
  }
  if (mode == static_cast<uint8_t>(IndexMode::kBitmap)) {
    s.mode = IndexMode::kBitmap;
    if (nbytes != BitmapIndexBytes(n))
      return Status::Corruption("index bitmap has " + std::to_string(nbytes) +
                                " bytes; a model of " + std::to_string(n) + " floats needs " +
                                std::to_string(BitmapIndexBytes(n)));
    if (n % 8 != 0 && (s.bytes.back() >> (n % 8)) != 0)
      return Status::Corruption("index bitmap sets bits past the model's " + std::to_string(n) +
                                " floats (index out of range)");
    size_t count = 0;
    for (size_t w = 0; w * 8 < s.bytes.size(); ++w) count += std::popcount(LoadWord(s.bytes, w));
    if (count != k)
      return Status::Corruption("index bitmap holds " + std::to_string(count) +
                                " indices, the payload's count is " + std::to_string(k));
    return s;
  }
  return Status::Corruption("unknown index encoding " + std::to_string(mode) +
                            " (0 = varint, 1 = bitmap)");
}

size_t IndexCursor::Next(uint32_t* out, size_t max) {
  size_t got = 0;
  if (s_.mode == IndexMode::kVarint) {
    const uint8_t* p = s_.bytes.data();
    const size_t size = s_.bytes.size();
    while (got < max && pos_ < size) {
      uint32_t v = 0;
      int shift = 0;
      uint8_t b;
      do {  // validated: well-formed and in bounds
        b = p[pos_++];
        v |= static_cast<uint32_t>(b & 0x7f) << shift;
        shift += 7;
      } while (b & 0x80);
      prev_ = started_ ? prev_ + v : v;
      started_ = true;
      out[got++] = static_cast<uint32_t>(prev_);
    }
    return got;
  }
  const size_t words = (s_.bytes.size() + 7) / 8;
  while (got < max) {
    while (word_ == 0) {
      if (pos_ >= words) return got;
      word_ = LoadWord(s_.bytes, pos_);
      word_base_ = pos_ * 64;
      ++pos_;
    }
    out[got++] = static_cast<uint32_t>(word_base_ + std::countr_zero(word_));
    word_ &= word_ - 1;
  }
  return got;
}

}  // namespace tributary
