// File helpers with explicit bounds and crash safety, over an Env (core/env.h). The overloads
// without an Env use Env::Default().
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/env.h"
#include "tributary/result.h"

namespace tributary {

class Progress;

// Reads a whole file. Fails with OutOfRange (naming the file) when it is larger than max_bytes,
// before reading it.
Result<std::vector<uint8_t>> ReadFileBytes(const std::string& path, uint64_t max_bytes);

// Replaces `path` atomically: writes `path.tmp`, syncs it, renames it over `path`, then syncs the
// directory. After a crash at any point, `path` holds either the old or the new contents in full
// (a stale `path.tmp` may be left behind; the next write replaces it). On an error the temporary
// file is removed (best effort). Two writers of one path must not run at once.
Status WriteFileAtomic(Env* env, const std::string& path, std::span<const uint8_t> bytes);
Status WriteFileAtomic(const std::string& path, std::span<const uint8_t> bytes);
// The same for a large file: appends `bytes` in pieces of kProgressPieceBytes, advancing
// `progress` (core/progress.h; not owned) by each piece written; calling progress->Done() is left
// to the caller. A null `progress` is the overload above (one append).
inline constexpr size_t kProgressPieceBytes = size_t{16} << 20;
Status WriteFileAtomic(Env* env, const std::string& path, std::span<const uint8_t> bytes,
                       Progress* progress);
// The same for text (reports, configs).
Status WriteFileAtomic(Env* env, const std::string& path, std::string_view text);
Status WriteFileAtomic(const std::string& path, std::string_view text);

// NotFound "<label>: cannot read <path>: <why>" (no such file, a directory, the OS's reason) when
// `path` is not a regular file this process may read; OK otherwise. For checking the files a
// program was given before it uses them, naming the key or flag that named each (`label`).
Status CheckReadableFile(std::string_view label, const std::string& path);

}  // namespace tributary
