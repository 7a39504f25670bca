// ByteBuffer: a growable byte buffer for large message bodies, plus AdviseHugePages.
//
// Why not std::vector<uint8_t>: on the VMs we run on, the first touch of fresh memory costs about
// 30 ms per MB with 4 KiB pages (a 64 MiB buffer: ~2 s) but ~0.2 ms per MB with 2 MiB transparent
// huge pages, and a vector that grows copies its bytes into new pages each time. A large
// ByteBuffer (>= 256 KiB) lives in its own anonymous mapping, grows with mremap (which moves page
// tables, not bytes) and asks for huge pages (madvise(MADV_HUGEPAGE), honoured when THP is
// "madvise" or "always"); a small one uses malloc. It never zero-fills.
//
// Thread safety: a ByteBuffer is a value owned by one thread at a time; AdviseHugePages is
// thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace tributary {

// Asks the kernel to back the page-aligned interior of [data, data + bytes) with transparent huge
// pages. Only worth it (and only done) for ranges of at least 2 MiB; a no-op where unsupported.
void AdviseHugePages(void* data, size_t bytes);

class ByteBuffer {
 public:
  // Released large buffers are kept (up to this many bytes in total, process-wide, at most 8
  // buffers) and handed to the next large ByteBuffer: a process that moves one big update after
  // another then writes into warm pages instead of faulting in fresh ones.
  static constexpr size_t kDefaultCacheBytes = size_t{256} << 20;
  // Changes that cap (0 disables the cache); thread-safe.
  static void SetCacheLimit(size_t bytes);

  ByteBuffer() = default;
  ~ByteBuffer();
  ByteBuffer(ByteBuffer&& other) noexcept;
  ByteBuffer& operator=(ByteBuffer&& other) noexcept;
  ByteBuffer(const ByteBuffer&) = delete;
  ByteBuffer& operator=(const ByteBuffer&) = delete;

  const uint8_t* data() const { return data_; }
  uint8_t* data() { return data_; }
  size_t size() const { return size_; }
  size_t capacity() const { return capacity_; }
  bool empty() const { return size_ == 0; }
  std::span<const uint8_t> span() const { return {data_, size_}; }

  // Makes room for at least `bytes` in total (aborts on allocation failure, like std::vector).
  void Reserve(size_t bytes);
  void Append(const void* bytes, size_t n);
  // Counts n bytes that the caller wrote at data() + size() (n <= capacity() - size()) as part
  // of the buffer, e.g. a socket read straight into reserved space.
  void CommitAppended(size_t n);
  void Clear() { size_ = 0; }
  // Frees the memory.
  void Release();

 private:
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
  size_t capacity_ = 0;
  bool mapped_ = false;  // data_ is an mmap of capacity_ bytes (else malloc)
};

}  // namespace tributary
