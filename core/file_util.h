// File helpers with explicit bounds and crash safety.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tributary/result.h"

namespace tributary {

// Reads a whole file. Fails with OutOfRange (naming the file) when it is larger than max_bytes,
// before reading it.
Result<std::vector<uint8_t>> ReadFileBytes(const std::string& path, uint64_t max_bytes);

// Replaces `path` atomically: writes `path.tmp.<pid>`, fsyncs it, renames it over `path`, then
// fsyncs the directory. After a crash, `path` holds either the old or the new contents in full.
Status WriteFileAtomic(const std::string& path, std::span<const uint8_t> bytes);
// The same for text (reports, configs).
Status WriteFileAtomic(const std::string& path, std::string_view text);

}  // namespace tributary
