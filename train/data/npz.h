// NPZ reader: NumPy's archive of arrays (np.savez, np.savez_compressed).
//
// A .npz file is a ZIP archive whose members are .npy files (train/data/npy.h) named after their
// keys: np.savez(f, x=a, y=b) writes members "x.npy" and "y.npy". np.savez stores them,
// np.savez_compressed deflates them; both are read (with libzip, Debian's libzip-dev). Members are
// looked up by key; other members are ignored.
//
// The bytes are untrusted. A member's uncompressed size, as the archive's directory gives it, is
// checked before anything is allocated: it must be at most what NpyReadOptions::max_elements
// elements of 8 bytes plus the largest header take, and it must equal the size its own NPY header
// announces. The member is then inflated in bounded (1 MiB) chunks, so the buffer grows only with
// bytes that really arrived, and it is read to its end so that libzip checks its CRC-32. Members
// that are encrypted or compressed other than stored or deflated are refused.
//
// Errors name the file (or the `name` given to ParseNpzArray) and the member:
//   NotFound      the file does not exist, or holds no member for the key (the message lists the
//                 members it has)
//   IoError       the OS failed to open or read it
//   Corruption    not a ZIP archive, a corrupt member (bad CRC, truncated), sizes that disagree, or
//                 anything ParseNpy reports
//   InvalidArgument  an encrypted member or an unsupported compression method; unsupported NPY
//   OutOfRange    a member over the caps
// All functions are thread-safe (they share no state).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "train/data/npy.h"
#include "tributary/result.h"

namespace tributary {

// The array saved under `key` in the .npz at `path` (member "<key>.npy"). options.max_items
// applies as for ReadNpyFile (the whole member is still inflated, to check its CRC).
Result<NpyArray> ReadNpzArray(const std::string& path, std::string_view key,
                              const NpyReadOptions& options = {});
// Only the NPY header of that member (its first bytes; the rest is not inflated).
Result<NpyHeader> ReadNpzArrayHeader(const std::string& path, std::string_view key,
                                     const NpyReadOptions& options = {});

// The same for an archive held in memory. `name` labels error messages.
Result<NpyArray> ParseNpzArray(std::span<const uint8_t> bytes, std::string_view name,
                               std::string_view key, const NpyReadOptions& options = {});

}  // namespace tributary
