// Bounded cereal archives for message bodies.
//
// Messages are written with cereal's stock BinaryOutputArchive (host byte order, which must be
// little-endian; see message_codec.cc) and read back with BoundedInputArchive, which reads the same
// format from a byte span but trusts nothing in it:
//   - every read checks the bytes that remain; reading past the end throws;
//   - containers go through the Capped* field wrappers below, whose loaders check the size tag
//     against both the field's schema cap and the bytes that remain *before* resizing, so a size
//     tag of 2^60 is an error, never an allocation (cereal's stock loaders trust the tag,
//     USCiLab/cereal#103);
//   - cereal's stock std::string / std::vector / std::map loaders are deleted for this archive, so
//     a message that forgets a wrapper does not compile;
//   - bool is refused at compile time (a byte other than 0 or 1 would be undefined behaviour).
// Errors are thrown as WireException (a protocol error code plus a message naming the field) and
// turned into a Status by EncodeMessage / DecodeMessage; no exception escapes protocol/.
//
// Thread safety: an archive is used by one thread; the wrappers hold references and live only for
// one serialize() call.
#pragma once

#include <cereal/cereal.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <map>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "core/shared_bytes.h"
#include "protocol/byte_buffer.h"
#include "protocol/shared_floats.h"
#include "protocol/wire.h"

namespace tributary::wire {

class WireException : public std::runtime_error {
 public:
  WireException(ErrorCode code, const std::string& message)
      : std::runtime_error(message), code_(code) {}
  ErrorCode code() const { return code_; }

 private:
  ErrorCode code_;
};

class BoundedInputArchive
    : public cereal::InputArchive<BoundedInputArchive, cereal::AllowEmptyClassElision> {
 public:
  explicit BoundedInputArchive(std::span<const uint8_t> bytes)
      : cereal::InputArchive<BoundedInputArchive, cereal::AllowEmptyClassElision>(this),
        pos_(bytes.data()),
        end_(bytes.data() + bytes.size()) {}

  size_t remaining() const { return static_cast<size_t>(end_ - pos_); }

  // What keeps the input bytes alive beyond the decode, when something does (a received message
  // buffer handed over by MessageAssembler). With one, SharedBytes fields point into the input
  // instead of copying it.
  void set_owner(std::shared_ptr<const void> owner) { owner_ = std::move(owner); }
  const std::shared_ptr<const void>& owner() const { return owner_; }

  // Copies `size` bytes out; throws MALFORMED_MESSAGE when fewer remain.
  void loadBinary(void* data, size_t size) {
    if (size > remaining()) {
      throw WireException(ErrorCode::kMalformedMessage,
                          "truncated: needs " + std::to_string(size) + " more bytes but only " +
                              std::to_string(remaining()) + " remain");
    }
    if (size > 0) std::memcpy(data, pos_, size);
    pos_ += size;
  }

  // Returns the next `size` bytes in place and skips them; throws like loadBinary.
  const uint8_t* Consume(size_t size) {
    const uint8_t* at = pos_;
    if (size > remaining()) loadBinary(nullptr, size);  // throws
    pos_ += size;
    return at;
  }

  // Reads a cereal size tag (uint64).
  uint64_t LoadSize() {
    uint64_t n = 0;
    loadBinary(&n, sizeof n);
    return n;
  }

  // Throws MALFORMED_MESSAGE naming `field` unless count <= cap and `count` elements of at least
  // `min_wire_bytes` each fit in the bytes that remain. Call before allocating for `count`.
  void CheckCount(const char* field, uint64_t count, uint64_t cap, uint64_t min_wire_bytes) {
    if (count > cap) {
      throw WireException(ErrorCode::kMalformedMessage,
                          std::string(field) + ": size " + std::to_string(count) +
                              " exceeds the cap of " + std::to_string(cap));
    }
    if (min_wire_bytes > 0 && count > remaining() / min_wire_bytes) {
      throw WireException(ErrorCode::kMalformedMessage,
                          std::string(field) + ": size " + std::to_string(count) +
                              " needs at least " + std::to_string(min_wire_bytes) +
                              " bytes each but only " + std::to_string(remaining()) +
                              " bytes remain");
    }
  }

 private:
  const uint8_t* pos_;
  const uint8_t* end_;
  std::shared_ptr<const void> owner_;
};

// Arithmetic fields (not bool: see the header comment).
template <class T>
requires(std::is_arithmetic_v<T> &&
         !std::is_same_v<T, bool>) void CEREAL_LOAD_FUNCTION_NAME(BoundedInputArchive& ar, T& t) {
  ar.loadBinary(&t, sizeof(T));
}
void CEREAL_LOAD_FUNCTION_NAME(BoundedInputArchive& ar, bool& t) = delete;

// Unchecked containers never reach this archive.
template <class C, class Tr, class A>
void CEREAL_LOAD_FUNCTION_NAME(BoundedInputArchive&, std::basic_string<C, Tr, A>&) = delete;
template <class T, class A>
void CEREAL_LOAD_FUNCTION_NAME(BoundedInputArchive&, std::vector<T, A>&) = delete;
template <class K, class V, class C, class A>
void CEREAL_LOAD_FUNCTION_NAME(BoundedInputArchive&, std::map<K, V, C, A>&) = delete;

// Throws MALFORMED_MESSAGE on the sending side, so we never send what a peer would refuse.
inline void CheckEncodeCap(const char* field, uint64_t size, uint64_t cap) {
  if (size > cap) {
    throw WireException(ErrorCode::kMalformedMessage,
                        std::string(field) + ": size " + std::to_string(size) +
                            " exceeds the cap of " + std::to_string(cap));
  }
}

// ---- Field wrappers. Use them inside serialize(): ar(Capped("device", device, kMaxNameBytes)).

struct CappedString {
  const char* field;
  std::string& value;
  uint64_t max_len;
};

template <class T>
requires(std::is_arithmetic_v<T> && !std::is_same_v<T, bool>) struct CappedVector {
  const char* field;
  std::vector<T>& value;
  uint64_t max_count;
};

// A SharedFloats field: the same bytes on the wire as a CappedVector<float>.
struct CappedSharedFloats {
  const char* field;
  SharedFloats& value;
  uint64_t max_count;
};

// A SharedBytes field: the same bytes on the wire as a CappedVector<uint8_t>.
struct CappedSharedBytes {
  const char* field;
  SharedBytes& value;
  uint64_t max_count;
};

struct CappedStringList {
  const char* field;
  std::vector<std::string>& value;
  uint64_t max_count;
  uint64_t max_len;  // of each string
};

struct CappedStringDoubleMap {
  const char* field;
  std::map<std::string, double>& value;
  uint64_t max_count;
  uint64_t max_key_len;
};

// A list of structs with their own serialize(). Each element takes at least min_wire_bytes on the
// wire (the sum of its fixed-size fields and size tags), which bounds the count by the bytes that
// remain before the list is allocated.
template <class T>
struct CappedObjectList {
  const char* field;
  std::vector<T>& value;
  uint64_t max_count;
  uint64_t min_wire_bytes;
};

template <class T>
CappedObjectList<T> CappedObjects(const char* field, std::vector<T>& v, uint64_t max_count,
                                  uint64_t min_wire_bytes) {
  return {field, v, max_count, min_wire_bytes};
}

inline CappedString Capped(const char* field, std::string& v, uint64_t max_len) {
  return {field, v, max_len};
}
template <class T>
CappedVector<T> Capped(const char* field, std::vector<T>& v, uint64_t max_count) {
  return {field, v, max_count};
}
inline CappedSharedFloats Capped(const char* field, SharedFloats& v, uint64_t max_count) {
  return {field, v, max_count};
}
inline CappedSharedBytes Capped(const char* field, SharedBytes& v, uint64_t max_count) {
  return {field, v, max_count};
}
inline CappedStringList Capped(const char* field, std::vector<std::string>& v, uint64_t max_count,
                               uint64_t max_len) {
  return {field, v, max_count, max_len};
}
inline CappedStringDoubleMap Capped(const char* field, std::map<std::string, double>& v,
                                    uint64_t max_count, uint64_t max_key_len) {
  return {field, v, max_count, max_key_len};
}

namespace detail {

template <class Archive>
void SaveString(Archive& ar, const char* field, const std::string& s, uint64_t max_len) {
  CheckEncodeCap(field, s.size(), max_len);
  ar(cereal::make_size_tag(static_cast<cereal::size_type>(s.size())));
  ar(cereal::binary_data(s.data(), s.size()));
}

inline void LoadString(BoundedInputArchive& ar, const char* field, std::string& s,
                       uint64_t max_len) {
  const uint64_t n = ar.LoadSize();
  ar.CheckCount(field, n, max_len, 1);
  s.resize(static_cast<size_t>(n));
  ar.loadBinary(s.data(), static_cast<size_t>(n));
}

}  // namespace detail

template <class Archive>
void CEREAL_SAVE_FUNCTION_NAME(Archive& ar, const CappedString& f) {
  detail::SaveString(ar, f.field, f.value, f.max_len);
}
inline void CEREAL_LOAD_FUNCTION_NAME(BoundedInputArchive& ar, CappedString& f) {
  detail::LoadString(ar, f.field, f.value, f.max_len);
}

template <class Archive, class T>
void CEREAL_SAVE_FUNCTION_NAME(Archive& ar, const CappedVector<T>& f) {
  CheckEncodeCap(f.field, f.value.size(), f.max_count);
  ar(cereal::make_size_tag(static_cast<cereal::size_type>(f.value.size())));
  ar(cereal::binary_data(f.value.data(), f.value.size() * sizeof(T)));
}
namespace detail {

// Reads T values from unaligned bytes (memcpy), so vector::assign can fill a vector in one pass
// without zero-filling it first.
template <class T>
class UnalignedIterator {
 public:
  using iterator_category = std::random_access_iterator_tag;
  using value_type = T;
  using difference_type = std::ptrdiff_t;
  using pointer = const T*;
  using reference = T;

  explicit UnalignedIterator(const uint8_t* p) : p_(p) {}
  T operator*() const {
    T v;
    std::memcpy(&v, p_, sizeof(T));
    return v;
  }
  UnalignedIterator& operator++() {
    p_ += sizeof(T);
    return *this;
  }
  UnalignedIterator operator++(int) {
    UnalignedIterator old = *this;
    p_ += sizeof(T);
    return old;
  }
  UnalignedIterator& operator--() {
    p_ -= sizeof(T);
    return *this;
  }
  UnalignedIterator& operator+=(difference_type n) {
    p_ += n * static_cast<difference_type>(sizeof(T));
    return *this;
  }
  UnalignedIterator& operator-=(difference_type n) { return *this += -n; }
  friend UnalignedIterator operator+(UnalignedIterator it, difference_type n) { return it += n; }
  friend UnalignedIterator operator-(UnalignedIterator it, difference_type n) { return it -= n; }
  friend bool operator<(const UnalignedIterator& a, const UnalignedIterator& b) {
    return a.p_ < b.p_;
  }
  friend difference_type operator-(const UnalignedIterator& a, const UnalignedIterator& b) {
    return (a.p_ - b.p_) / static_cast<difference_type>(sizeof(T));
  }
  friend bool operator==(const UnalignedIterator& a, const UnalignedIterator& b) {
    return a.p_ == b.p_;
  }

 private:
  const uint8_t* p_;
};

}  // namespace detail

template <class T>
void CEREAL_LOAD_FUNCTION_NAME(BoundedInputArchive& ar, CappedVector<T>& f) {
  const uint64_t n = ar.LoadSize();
  ar.CheckCount(f.field, n, f.max_count, sizeof(T));
  const size_t bytes = static_cast<size_t>(n) * sizeof(T);
  const uint8_t* src = ar.Consume(bytes);
  if (f.value.capacity() < n) {
    f.value = std::vector<T>();  // drop old contents rather than copy them into the new block
    f.value.reserve(static_cast<size_t>(n));
    AdviseHugePages(f.value.data(), bytes);
  }
  if constexpr (sizeof(T) == 1) {
    f.value.assign(reinterpret_cast<const T*>(src), reinterpret_cast<const T*>(src) + n);
  } else {
    f.value.assign(detail::UnalignedIterator<T>(src), detail::UnalignedIterator<T>(src + bytes));
  }
}

template <class Archive>
void CEREAL_SAVE_FUNCTION_NAME(Archive& ar, const CappedSharedFloats& f) {
  CheckEncodeCap(f.field, f.value.size(), f.max_count);
  ar(cereal::make_size_tag(static_cast<cereal::size_type>(f.value.size())));
  ar(cereal::binary_data(f.value.data(), f.value.size() * sizeof(float)));
}
// Checks the size tag like CappedVector's loader, before allocating. Decodes into the payload's
// own vector when it is the only holder (keeping its capacity), else into a fresh one: a vector
// shared with another message is never written.
inline void CEREAL_LOAD_FUNCTION_NAME(BoundedInputArchive& ar, CappedSharedFloats& f) {
  CappedVector<float> inner{f.field, f.value.mutable_values_for_overwrite(), f.max_count};
  CEREAL_LOAD_FUNCTION_NAME(ar, inner);
}

template <class Archive>
void CEREAL_SAVE_FUNCTION_NAME(Archive& ar, const CappedSharedBytes& f) {
  CheckEncodeCap(f.field, f.value.size(), f.max_count);
  ar(cereal::make_size_tag(static_cast<cereal::size_type>(f.value.size())));
  ar(cereal::binary_data(f.value.data(), f.value.size()));
}
// Checks the size tag like CappedVector's loader, before allocating. When the archive's input has
// an owner the bytes are shared in place; otherwise they are copied into a fresh vector (a
// SharedBytes is never written through).
inline void CEREAL_LOAD_FUNCTION_NAME(BoundedInputArchive& ar, CappedSharedBytes& f) {
  if (ar.owner()) {
    const uint64_t n = ar.LoadSize();
    ar.CheckCount(f.field, n, f.max_count, 1);
    const uint8_t* src = ar.Consume(static_cast<size_t>(n));
    f.value = SharedBytes(ar.owner(), std::span<const uint8_t>(src, static_cast<size_t>(n)));
    return;
  }
  std::vector<uint8_t> bytes;
  CappedVector<uint8_t> inner{f.field, bytes, f.max_count};
  CEREAL_LOAD_FUNCTION_NAME(ar, inner);
  f.value = SharedBytes(std::move(bytes));
}

template <class Archive>
void CEREAL_SAVE_FUNCTION_NAME(Archive& ar, const CappedStringList& f) {
  CheckEncodeCap(f.field, f.value.size(), f.max_count);
  ar(cereal::make_size_tag(static_cast<cereal::size_type>(f.value.size())));
  for (const std::string& s : f.value) detail::SaveString(ar, f.field, s, f.max_len);
}
inline void CEREAL_LOAD_FUNCTION_NAME(BoundedInputArchive& ar, CappedStringList& f) {
  const uint64_t n = ar.LoadSize();
  ar.CheckCount(f.field, n, f.max_count, sizeof(uint64_t));  // each string has a size tag
  f.value.assign(static_cast<size_t>(n), std::string());
  for (std::string& s : f.value) detail::LoadString(ar, f.field, s, f.max_len);
}

template <class Archive, class T>
void CEREAL_SAVE_FUNCTION_NAME(Archive& ar, const CappedObjectList<T>& f) {
  CheckEncodeCap(f.field, f.value.size(), f.max_count);
  ar(cereal::make_size_tag(static_cast<cereal::size_type>(f.value.size())));
  for (const T& v : f.value) ar(v);
}
template <class T>
void CEREAL_LOAD_FUNCTION_NAME(BoundedInputArchive& ar, CappedObjectList<T>& f) {
  const uint64_t n = ar.LoadSize();
  ar.CheckCount(f.field, n, f.max_count, std::max<uint64_t>(1, f.min_wire_bytes));
  f.value.assign(static_cast<size_t>(n), T());
  for (T& v : f.value) ar(v);
}

// The same layout as cereal's std::map in a binary archive: size tag, then key, value pairs.
template <class Archive>
void CEREAL_SAVE_FUNCTION_NAME(Archive& ar, const CappedStringDoubleMap& f) {
  CheckEncodeCap(f.field, f.value.size(), f.max_count);
  ar(cereal::make_size_tag(static_cast<cereal::size_type>(f.value.size())));
  for (const auto& [key, value] : f.value) {
    detail::SaveString(ar, f.field, key, f.max_key_len);
    ar(value);
  }
}
inline void CEREAL_LOAD_FUNCTION_NAME(BoundedInputArchive& ar, CappedStringDoubleMap& f) {
  const uint64_t n = ar.LoadSize();
  ar.CheckCount(f.field, n, f.max_count, sizeof(uint64_t) + sizeof(double));
  f.value.clear();
  for (uint64_t i = 0; i < n; ++i) {
    std::string key;
    double value = 0;
    detail::LoadString(ar, f.field, key, f.max_key_len);
    ar(value);
    if (!f.value.emplace(std::move(key), value).second) {
      throw WireException(ErrorCode::kMalformedMessage, std::string(f.field) + ": duplicate key");
    }
  }
}

}  // namespace tributary::wire
