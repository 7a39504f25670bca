// IDX reader: the array format of MNIST and Fashion-MNIST, plain or gzip-compressed.
//
// An IDX file is a 4-byte magic (0x00, 0x00, element type, rank), `rank` big-endian uint32
// dimensions, then the elements in row-major order. Only unsigned-byte elements (type 0x08) are
// supported, which is what (Fashion-)MNIST uses: 0x00000803 for images (n x rows x cols) and
// 0x00000801 for labels (n).
//
// The bytes are untrusted. Before anything is allocated the reader checks the product of the
// dimensions against IdxReadOptions::max_elements and, for plain files, against the bytes actually
// present. A gzip stream's decompressed size is unknown until it has been inflated, so gzip data
// is inflated in bounded (1 MiB) chunks: at most 8x the compressed file size is reserved up front
// and beyond that the output grows only with bytes that really arrived. A stream that holds fewer
// or more bytes than its header promises is an error, never a giant allocation.
//
// Errors name the file (or the `name` given to ParseIdx) and what was wrong:
//   NotFound      the file does not exist
//   IoError       the OS failed to open or read it
//   Corruption    wrong magic (with its value), unsupported type, wrong rank, truncated
//                 ("expected N bytes, got M"), trailing bytes, corrupt gzip
//   OutOfRange    the header claims more elements than max_elements
// All functions are thread-safe (they share no state).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tributary/result.h"

namespace tributary {

// IDX magic numbers for unsigned-byte arrays.
inline constexpr uint32_t kIdxMagicUbyteRank1 = 0x00000801;  // labels
inline constexpr uint32_t kIdxMagicUbyteRank3 = 0x00000803;  // images
inline constexpr uint8_t kIdxTypeUbyte = 0x08;
inline constexpr int kIdxMaxRank = 8;

struct IdxReadOptions {
  // Cap on the product of the dimensions, checked before allocating.
  uint64_t max_elements = 100'000'000;
  // Required rank (1 for labels, 3 for images); 0 accepts any rank in 1..kIdxMaxRank.
  int expected_rank = 0;
  // When > 0, read at most this many items along the first dimension and stop there; dims[0] of
  // the result is then min(dims[0], max_items). Bytes after the items read are not inspected.
  uint64_t max_items = 0;
};

// An IDX array of unsigned bytes.
struct IdxArray {
  std::vector<uint32_t> dims;
  std::vector<uint8_t> data;  // row-major, size() == product of dims

  uint64_t num_elements() const;
};

// Reads an IDX file. Files starting with the gzip magic (0x1f 0x8b) are inflated with zlib
// whatever their name; others are read as plain IDX. A read that takes more than a second logs its
// progress over the file's bytes (core/progress.h: "reading <path>: 12.0/25.2 MiB (47%), 1.0 s").
Result<IdxArray> ReadIdxFile(const std::string& path, const IdxReadOptions& options = {});

// Parses a plain (uncompressed) IDX image held in memory. `name` labels error messages.
Result<IdxArray> ParseIdx(std::span<const uint8_t> bytes, std::string_view name,
                          const IdxReadOptions& options = {});

// Serializes an unsigned-byte IDX array (for tests and tools). dims must multiply to data.size().
std::vector<uint8_t> EncodeIdx(std::span<const uint32_t> dims, std::span<const uint8_t> data);

}  // namespace tributary
