// SharedFloats: an immutable, reference-counted float vector with copy-on-write.
//
// The coordinator sends the same model to every client it selects. A ModelPayload holding a
// std::vector<float> would copy the model into every client's message, so coordinator memory
// would grow with clients per round (1,000 clients x a 400 KB model = 400 MB). SharedFloats makes
// copying a payload cost a reference count: every copy points at one vector, which nobody can
// change while it is shared.
//
// Ownership: the vector is owned jointly by every SharedFloats that points at it and freed with
// the last. Building from std::vector<float>&& moves the vector in (no float is copied).
// mutable_values() gives write access; when the vector is shared (or came in as a pointer to const
// that this class did not create) it first copies it, so writing never changes what another
// holder sees.
//
// Thread safety: like std::shared_ptr. Different SharedFloats objects pointing at one vector may be
// read, copied and destroyed from different threads at once (the vector is never written while
// shared). One SharedFloats object must not be written (assigned, mutable_values()) while another
// thread uses that same object.
#pragma once

#include <algorithm>
#include <cstddef>
#include <initializer_list>
#include <memory>
#include <span>
#include <utility>
#include <vector>

namespace tributary {

class SharedFloats {
 public:
  SharedFloats() = default;
  // Takes the vector over without copying it. Implicit, so a payload can be built from a vector
  // temporary: ModelPayload{fingerprint, std::move(floats)}.
  SharedFloats(std::vector<float>&& values)  // NOLINT(google-explicit-constructor)
      : values_(std::make_shared<std::vector<float>>(std::move(values))), writable_(true) {}
  // A fresh vector holding `values` (tests, small payloads): payload.values = {1.0f, 2.0f}.
  SharedFloats(std::initializer_list<float> values)  // NOLINT(google-explicit-constructor)
      : SharedFloats(std::vector<float>(values)) {}
  // Shares `values` (null means empty). mutable_values() will copy it before the first write.
  explicit SharedFloats(std::shared_ptr<const std::vector<float>> values)
      : values_(std::move(values)), writable_(false) {}

  std::span<const float> span() const {
    return values_ ? std::span<const float>(*values_) : std::span<const float>();
  }
  size_t size() const { return values_ ? values_->size() : 0; }
  bool empty() const { return size() == 0; }
  const float* data() const { return span().data(); }
  std::span<const float>::iterator begin() const { return span().begin(); }
  std::span<const float>::iterator end() const { return span().end(); }
  const float& operator[](size_t i) const { return (*values_)[i]; }

  // The shared vector itself (null when empty), e.g. to build another payload around it.
  const std::shared_ptr<const std::vector<float>>& shared() const { return values_; }
  // True when this object is the only holder, so mutable_values() will not copy.
  bool unique() const { return values_ && writable_ && values_.use_count() == 1; }

  // Write access. Copies the floats first unless this object is the only holder of a vector it
  // created (copy-on-write), so other holders never see the change. The reference is valid until
  // this object is next assigned or copied from.
  std::vector<float>& mutable_values() {
    if (!unique()) {
      values_ = values_ ? std::make_shared<std::vector<float>>(*values_)
                        : std::make_shared<std::vector<float>>();
      writable_ = true;
    }
    return Writable();
  }

  // Write access to a vector whose contents are unspecified, for a caller that overwrites them all
  // (a decoder): the current vector when this object is its only holder (its capacity is reused),
  // otherwise a fresh empty one; the shared vector is never copied.
  std::vector<float>& mutable_values_for_overwrite() {
    if (!unique()) {
      values_ = std::make_shared<std::vector<float>>();
      writable_ = true;
    }
    return Writable();
  }

  // Compares the floats, not the pointers (as std::vector does).
  friend bool operator==(const SharedFloats& a, const SharedFloats& b) {
    if (a.values_ == b.values_) return true;
    const std::span<const float> x = a.span(), y = b.span();
    return std::equal(x.begin(), x.end(), y.begin(), y.end());
  }

 private:
  std::vector<float>& Writable() {
    // Sound: writable_ means this class created the vector non-const (make_shared above), and
    // unique() means nobody else can observe the write.
    return const_cast<std::vector<float>&>(*values_);
  }

  std::shared_ptr<const std::vector<float>> values_;
  bool writable_ = false;  // the pointee was created here as a non-const vector
};

}  // namespace tributary
