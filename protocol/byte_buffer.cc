#include "protocol/byte_buffer.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <utility>
#include <vector>

#include "core/check.h"

namespace tributary {

namespace {
constexpr size_t kHugePage = size_t{2} << 20;
constexpr size_t kMapThreshold = size_t{256} << 10;

size_t RoundUpToPage(size_t n) {
  static const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return (n + page - 1) / page * page;
}

// Released mappings kept for reuse, so a process that moves one large message after another
// writes into warm pages instead of faulting fresh ones in.
class MappingCache {
 public:
  static MappingCache& Get() {
    static MappingCache* cache = new MappingCache();  // never destroyed: used until exit
    return *cache;
  }

  // A cached mapping: the smallest one of at least `bytes`, else the largest (for the caller to
  // mremap up); {nullptr, 0} when the cache is empty.
  std::pair<uint8_t*, size_t> Take(size_t bytes) {
    std::lock_guard<std::mutex> lock(mu_);
    if (entries_.empty()) return {nullptr, 0};
    size_t best = entries_.size();
    size_t largest = 0;
    for (size_t i = 0; i < entries_.size(); ++i) {
      if (entries_[i].second >= bytes &&
          (best == entries_.size() || entries_[i].second < entries_[best].second)) {
        best = i;
      }
      if (entries_[i].second > entries_[largest].second) largest = i;
    }
    if (best == entries_.size()) best = largest;
    const std::pair<uint8_t*, size_t> taken = entries_[best];
    entries_.erase(entries_.begin() + static_cast<ptrdiff_t>(best));
    cached_ -= taken.second;
    return taken;
  }

  // Keeps the mapping when it fits under the limit (evicting the oldest entries), else unmaps it.
  void Give(uint8_t* data, size_t bytes) {
    std::vector<std::pair<uint8_t*, size_t>> evicted;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (bytes > limit_) {
        evicted.emplace_back(data, bytes);
      } else {
        while (!entries_.empty() && (cached_ + bytes > limit_ || entries_.size() >= kMaxEntries)) {
          cached_ -= entries_.front().second;
          evicted.push_back(entries_.front());
          entries_.erase(entries_.begin());
        }
        entries_.emplace_back(data, bytes);
        cached_ += bytes;
      }
    }
    for (const auto& [p, n] : evicted) munmap(p, n);
  }

  void SetLimit(size_t bytes) {
    std::vector<std::pair<uint8_t*, size_t>> evicted;
    {
      std::lock_guard<std::mutex> lock(mu_);
      limit_ = bytes;
      while (!entries_.empty() && cached_ > limit_) {
        cached_ -= entries_.front().second;
        evicted.push_back(entries_.front());
        entries_.erase(entries_.begin());
      }
    }
    for (const auto& [p, n] : evicted) munmap(p, n);
  }

 private:
  static constexpr size_t kMaxEntries = 8;
  std::mutex mu_;
  std::vector<std::pair<uint8_t*, size_t>> entries_;  // GUARDED_BY(mu_), oldest first
  size_t cached_ = 0;                                 // GUARDED_BY(mu_)
  size_t limit_ = ByteBuffer::kDefaultCacheBytes;     // GUARDED_BY(mu_)
};
}  // namespace

void ByteBuffer::SetCacheLimit(size_t bytes) { MappingCache::Get().SetLimit(bytes); }

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
  size_t new_capacity = mapped_bytes;
  if (mapped_) {
    grown = mremap(data_, capacity_, mapped_bytes, MREMAP_MAYMOVE);
  } else {
    auto [cached, cached_bytes] = MappingCache::Get().Take(mapped_bytes);
    if (cached != nullptr && cached_bytes >= mapped_bytes) {
      grown = cached;
      new_capacity = cached_bytes;
    } else if (cached != nullptr) {
      grown = mremap(cached, cached_bytes, mapped_bytes, MREMAP_MAYMOVE);
      if (grown == MAP_FAILED) munmap(cached, cached_bytes);
    } else {
      grown =
          mmap(nullptr, mapped_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    }
    if (grown != MAP_FAILED && size_ > 0) std::memcpy(grown, data_, size_);
    if (grown != MAP_FAILED) std::free(data_);
  }
  TRIB_CHECK(grown != MAP_FAILED, "ByteBuffer: out of memory");
  data_ = static_cast<uint8_t*>(grown);
  capacity_ = new_capacity;
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

void ByteBuffer::CommitAppended(size_t n) {
  TRIB_CHECK(n <= capacity_ - size_, "ByteBuffer: committed past the reserved space");
  size_ += n;
}

void ByteBuffer::Release() {
  if (mapped_) {
    MappingCache::Get().Give(data_, capacity_);
  } else {
    std::free(data_);
  }
  data_ = nullptr;
  size_ = 0;
  capacity_ = 0;
  mapped_ = false;
}

}  // namespace tributary
