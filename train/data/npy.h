// NPY reader: NumPy's array file format (np.save), versions 1.0, 2.0 and 3.0.
//
// A .npy file is the magic "\x93NUMPY", a major and a minor version byte, the header length
// (little-endian uint16 in version 1.0, uint32 in 2.0 and 3.0), the header, then the elements. The
// header is a Python dict literal such as
//   {'descr': '<f4', 'fortran_order': False, 'shape': (60000, 28, 28), }
// padded with spaces and ended by '\n'. Supported element types ('descr'): '|b1' (bool), '|u1',
// '|i1', '<u2', '<i2', '<u4', '<i4', '<u8', '<i8', '<f4', '<f8' (1-byte types also with '<').
// Big-endian ('>f4'), structured, string and object dtypes, and fortran_order True for arrays of
// rank 2 or more, are refused with an error that says how to convert the array in NumPy.
//
// The bytes are untrusted. The header is at most kNpyMaxHeaderBytes; the rank at most
// kNpyMaxRank. Before anything is allocated the reader checks the product of the shape (with
// saturating arithmetic: no overflow) against NpyReadOptions::max_elements and the bytes it needs
// against the bytes actually present (the file's size for ReadNpyFile).
//
// Errors name the file (or the `name` given to ParseNpy) and what was wrong:
//   NotFound      the file does not exist
//   IoError       the OS failed to open or read it
//   Corruption    wrong magic, unknown version, malformed header (with the offending text),
//                 truncated ("expected N bytes of data, got M"), trailing bytes
//   InvalidArgument  a valid .npy this reader does not support (dtype, fortran order, rank)
//   OutOfRange    the shape holds more elements than max_elements
// All functions are thread-safe (they share no state). Little-endian hosts only (x86, ARM).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tributary/result.h"

namespace tributary {

inline constexpr size_t kNpyMaxHeaderBytes = 64 * 1024;
inline constexpr int kNpyMaxRank = 8;
// The magic, version and header-length bytes of the largest (version 2.0 and 3.0) preamble.
inline constexpr size_t kNpyMaxPreambleBytes = 12;

enum class NpyDtype { kBool, kU8, kI8, kU16, kI16, kU32, kI32, kU64, kI64, kF32, kF64 };

// The 'descr' NumPy writes for `dtype` ("<f4", "|u1", ...), and the bytes of one element.
std::string_view NpyDescr(NpyDtype dtype);
size_t NpyItemSize(NpyDtype dtype);

struct NpyReadOptions {
  // Cap on the product of the shape, checked before allocating.
  uint64_t max_elements = 100'000'000;
  // When > 0, read at most this many items along the first dimension and stop there; shape[0] of
  // the result is then min(shape[0], max_items). Bytes after the items read are not inspected.
  uint64_t max_items = 0;
};

// What the header says, and where the data starts.
struct NpyHeader {
  int major_version = 1;
  NpyDtype dtype = NpyDtype::kF32;
  bool fortran_order = false;
  std::vector<uint64_t> shape;  // empty for a 0-d (scalar) array
  size_t data_offset = 0;       // bytes before the first element

  uint64_t num_elements() const;  // 1 for a scalar
  uint64_t data_bytes() const { return num_elements() * NpyItemSize(dtype); }
};

// An array: its header and its elements, little-endian, row-major (C order).
struct NpyArray {
  NpyDtype dtype = NpyDtype::kF32;
  std::vector<uint64_t> shape;
  std::vector<uint8_t> data;  // size() == num_elements() * NpyItemSize(dtype)

  uint64_t num_elements() const;
};

// Parses the preamble and header at the start of `bytes`, which may hold just the header (the
// elements are not looked at). Also checks the shape against options.max_elements; data_bytes()
// of the result is then at most max_elements * 8.
Result<NpyHeader> ParseNpyHeader(std::span<const uint8_t> bytes, std::string_view name,
                                 const NpyReadOptions& options = {});

// Parses a whole .npy image held in memory. `name` labels error messages.
Result<NpyArray> ParseNpy(std::span<const uint8_t> bytes, std::string_view name,
                          const NpyReadOptions& options = {});

// ParseNpy over bytes it takes: the elements stay in the same buffer (moved down over the header),
// so no second copy of them is made.
Result<NpyArray> TakeNpy(std::vector<uint8_t> bytes, std::string_view name,
                         const NpyReadOptions& options = {});

// Reads a .npy file: the header first, then (after the size checks) exactly the elements asked for.
Result<NpyArray> ReadNpyFile(const std::string& path, const NpyReadOptions& options = {});
// Reads only the header of a .npy file (at most kNpyMaxPreambleBytes + kNpyMaxHeaderBytes), and
// checks that the file holds the data it announces.
Result<NpyHeader> ReadNpyFileHeader(const std::string& path, const NpyReadOptions& options = {});

// Serializes an array as NPY version 1.0 (for tests and tools). `shape` must multiply to
// data.size() / NpyItemSize(dtype). With `fortran_order` only the header says so (tests).
std::vector<uint8_t> EncodeNpy(NpyDtype dtype, std::span<const uint64_t> shape,
                               std::span<const uint8_t> data, bool fortran_order = false);

// The elements as float32, in order. Unsigned-byte arrays are scaled by 1/255 when `scale_bytes`
// (as image pixels are); other types keep their values (bool: 0 or 1). InvalidArgument, naming
// `name` and the element, for a NaN or an infinity, or an f8 value out of float32's range.
Result<std::vector<float>> NpyToFloats(const NpyArray& array, std::string_view name,
                                       bool scale_bytes);

// The elements as class labels in [0, 256): integer or bool elements, or floating-point ones that
// are exact integers. InvalidArgument naming `name`, the element's index and its value otherwise.
Result<std::vector<uint8_t>> NpyToLabels(const NpyArray& array, std::string_view name);

}  // namespace tributary
