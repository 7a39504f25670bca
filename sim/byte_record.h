// ByteWriter and ByteReader: the simulator's own binary records (sim/rank_work.h's messages between
// ranks, sim/sim_checkpoint.h's state file), in host byte order (little-endian, as the wire format
// requires).
//
// A record is a sequence of trivially copyable values, length-prefixed byte runs (a uint64 length,
// then the bytes) and codec states. ByteReader trusts nothing it reads: every read checks the
// bytes that remain before it copies or allocates, a run's length must fit in what remains (and be
// a multiple of its unit), and a count of items must be payable by the bytes left at the items'
// smallest size; a failed read returns false and the caller says what was malformed.
//
// Not thread-safe; one object per record.
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "compression/codec.h"

namespace tributary {

class ByteWriter {
 public:
  template <class T>
  void Pod(T v) {
    static_assert(std::is_trivially_copyable_v<T>);
    out_.append(reinterpret_cast<const char*>(&v), sizeof v);
  }
  void Bytes(const void* p, size_t n) {
    Pod<uint64_t>(n);
    out_.append(static_cast<const char*>(p), n);
  }
  void Str(const std::string& s) { Bytes(s.data(), s.size()); }
  void Vec(const std::vector<uint8_t>& v) { Bytes(v.data(), v.size()); }
  // A vector of trivially copyable values, as a run of their bytes.
  template <class T>
  void PodVec(const std::vector<T>& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    Bytes(v.data(), v.size() * sizeof(T));
  }
  void State(const std::optional<CodecState>& s) {
    Pod<uint8_t>(s.has_value());
    if (!s) return;
    Str(s->spec);
    Bytes(s->residual.data(), s->residual.size() * sizeof(float));
  }
  std::string Take() { return std::move(out_); }

 private:
  std::string out_;
};

class ByteReader {
 public:
  explicit ByteReader(const std::string& in) : in_(in) {}
  template <class T>
  bool Pod(T* v) {
    if (in_.size() - pos_ < sizeof(T)) return false;
    std::memcpy(v, in_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return true;
  }
  // A length-prefixed run of bytes, of a multiple of `unit`.
  bool Span(const char** p, size_t* n, size_t unit = 1) {
    uint64_t len = 0;
    if (!Pod(&len) || len > in_.size() - pos_ || len % unit != 0) return false;
    *p = in_.data() + pos_;
    *n = static_cast<size_t>(len);
    pos_ += *n;
    return true;
  }
  bool Str(std::string* s) {
    const char* p;
    size_t n;
    if (!Span(&p, &n)) return false;
    s->assign(p, n);
    return true;
  }
  bool Vec(std::vector<uint8_t>* v) {
    const char* p;
    size_t n;
    if (!Span(&p, &n)) return false;
    v->assign(reinterpret_cast<const uint8_t*>(p), reinterpret_cast<const uint8_t*>(p) + n);
    return true;
  }
  template <class T>
  bool PodVec(std::vector<T>* v) {
    static_assert(std::is_trivially_copyable_v<T>);
    const char* p;
    size_t n;
    if (!Span(&p, &n, sizeof(T))) return false;
    v->resize(n / sizeof(T));
    if (n > 0) std::memcpy(v->data(), p, n);
    return true;
  }
  bool State(std::optional<CodecState>* s) {
    uint8_t has = 0;
    if (!Pod(&has) || has > 1) return false;
    if (!has) return true;
    CodecState st;
    const char* p;
    size_t n;
    if (!Str(&st.spec) || !Span(&p, &n, sizeof(float))) return false;
    st.residual.resize(n / sizeof(float));
    if (n > 0) std::memcpy(st.residual.data(), p, n);  // data() may be null when empty
    *s = std::move(st);
    return true;
  }
  // A count of items of at least `min_bytes` each, not more than the bytes left allow.
  bool Count(uint64_t* n, size_t min_bytes) {
    return Pod(n) && *n <= (in_.size() - pos_) / min_bytes;
  }
  bool done() const { return pos_ == in_.size(); }

 private:
  const std::string& in_;
  size_t pos_ = 0;
};

}  // namespace tributary
