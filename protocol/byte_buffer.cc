#include "protocol/byte_buffer.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "core/check.h"

namespace tributary {

namespace {
constexpr size_t kHugePage = size_t{2} << 20;
constexpr size_t kMapThreshold = size_t{256} << 10;

size_t RoundUpToPage(size_t n) {
  static const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return (n + page - 1) / page * page;
}
}  // namespace

void AdviseHugePages(void* data, size_t bytes) {
#ifdef MADV_HUGEPAGE
  if (data == nullptr || bytes < kHugePage) return;
  static const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const auto begin = reinterpret_cast<uintptr_t>(data);
  const uintptr_t first = (begin + page - 1) / page * page;
  const uintptr_t last = (begin + bytes) / page * page;
  if (last > first) madvise(reinterpret_cast<void*>(first), last - first, MADV_HUGEPAGE);
#else
  (void)data;
  (void)bytes;
#endif
}

ByteBuffer::~ByteBuffer() { Release(); }

ByteBuffer::ByteBuffer(ByteBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      capacity_(std::exchange(other.capacity_, 0)),
      mapped_(std::exchange(other.mapped_, false)) {}

ByteBuffer& ByteBuffer::operator=(ByteBuffer&& other) noexcept {
  if (this != &other) {
    Release();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    capacity_ = std::exchange(other.capacity_, 0);
    mapped_ = std::exchange(other.mapped_, false);
  }
  return *this;
}

void ByteBuffer::Reserve(size_t bytes) {
  if (bytes <= capacity_) return;
  if (bytes < kMapThreshold) {
    void* grown = std::realloc(data_, bytes);
    TRIB_CHECK(grown != nullptr, "ByteBuffer: out of memory");
    data_ = static_cast<uint8_t*>(grown);
    capacity_ = bytes;
    return;
  }
  const size_t mapped_bytes = RoundUpToPage(bytes);
  void* grown = nullptr;
  if (mapped_) {
    grown = mremap(data_, capacity_, mapped_bytes, MREMAP_MAYMOVE);
  } else {
    grown = mmap(nullptr, mapped_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (grown != MAP_FAILED && size_ > 0) std::memcpy(grown, data_, size_);
    if (grown != MAP_FAILED) std::free(data_);
  }
  TRIB_CHECK(grown != MAP_FAILED, "ByteBuffer: out of memory");
  data_ = static_cast<uint8_t*>(grown);
  capacity_ = mapped_bytes;
  mapped_ = true;
#ifdef MADV_HUGEPAGE
  // The whole mapping, every time: advising only part of it would split it into two VMAs, and
  // mremap cannot grow a range that spans two.
  madvise(data_, capacity_, MADV_HUGEPAGE);
#endif
}

void ByteBuffer::Append(const void* bytes, size_t n) {
  if (n == 0) return;
  if (size_ + n > capacity_) Reserve(std::max(size_ + n, capacity_ * 2));
  std::memcpy(data_ + size_, bytes, n);
  size_ += n;
}

void ByteBuffer::Release() {
  if (mapped_) {
    munmap(data_, capacity_);
  } else {
    std::free(data_);
  }
  data_ = nullptr;
  size_ = 0;
  capacity_ = 0;
  mapped_ = false;
}

}  // namespace tributary
