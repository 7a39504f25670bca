// ByteBuffer: contents survive growth across the malloc -> mmap switch and many mremaps (which
// once failed when huge-page advice split the mapping), moves transfer ownership.
#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "protocol/byte_buffer.h"

namespace tributary {
namespace {

TEST(ByteBufferTest, GrowsFromSmallToManyMegabytesKeepingEveryByte) {
  ByteBuffer b;
  std::vector<uint8_t> piece(100'000);
  size_t total = 0;
  for (int i = 0; i < 400; ++i) {  // 40 MB in 100 KB appends: malloc, then mmap + mremap
    std::iota(piece.begin(), piece.end(), static_cast<uint8_t>(i));
    b.Append(piece.data(), piece.size());
    total += piece.size();
  }
  ASSERT_EQ(b.size(), total);
  EXPECT_GE(b.capacity(), total);
  for (int i = 0; i < 400; ++i) {
    const uint8_t* p = b.data() + size_t(i) * piece.size();
    EXPECT_EQ(p[0], static_cast<uint8_t>(i));
    EXPECT_EQ(p[99'999], static_cast<uint8_t>(i + 99'999));
  }
}

TEST(ByteBufferTest, ReserveThenAppendAndMove) {
  ByteBuffer a;
  a.Reserve(8 << 20);
  EXPECT_EQ(a.size(), 0u);
  EXPECT_GE(a.capacity(), size_t{8} << 20);
  const std::vector<uint8_t> bytes = {1, 2, 3};
  a.Append(bytes.data(), bytes.size());
  ByteBuffer b = std::move(a);
  EXPECT_EQ(a.size(), 0u);  // NOLINT(bugprone-use-after-move): moved-from is empty by contract
  EXPECT_EQ(a.data(), nullptr);
  ASSERT_EQ(b.size(), 3u);
  EXPECT_EQ(b.data()[2], 3);
  b.Clear();
  EXPECT_TRUE(b.empty());
  b.Release();
  EXPECT_EQ(b.capacity(), 0u);
}

TEST(ByteBufferTest, ReleasedLargeBuffersAreReusedUntilTheCacheIsDisabled) {
  uint8_t* first = nullptr;
  {
    ByteBuffer a;
    a.Reserve(16 << 20);
    a.Append("x", 1);
    first = a.data();
  }
  ByteBuffer b;
  b.Reserve(4 << 20);  // the cached 16 MiB mapping is big enough
  EXPECT_EQ(b.data(), first);
  EXPECT_GE(b.capacity(), size_t{16} << 20);
  b.Release();
  ByteBuffer::SetCacheLimit(0);  // drops what is cached
  ByteBuffer c;
  c.Reserve(4 << 20);
  EXPECT_LT(c.capacity(), size_t{16} << 20);
  ByteBuffer::SetCacheLimit(ByteBuffer::kDefaultCacheBytes);
}

}  // namespace
}  // namespace tributary
