#include "train/data/npy.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>

#include <fmt/format.h>

#include "core/check.h"

namespace tributary {
namespace {

static_assert(std::endian::native == std::endian::little, "NPY elements are read as they lie");

constexpr uint8_t kMagic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
// No cap may make elements * 8 overflow 64 bits.
constexpr uint64_t kHardElementCap = uint64_t{1} << 56;

struct DtypeInfo {
  NpyDtype dtype;
  std::string_view descr;  // what NumPy writes
  size_t size;
};
constexpr DtypeInfo kDtypes[] = {
    {NpyDtype::kBool, "|b1", 1}, {NpyDtype::kU8, "|u1", 1},  {NpyDtype::kI8, "|i1", 1},
    {NpyDtype::kU16, "<u2", 2},  {NpyDtype::kI16, "<i2", 2}, {NpyDtype::kU32, "<u4", 4},
    {NpyDtype::kI32, "<i4", 4},  {NpyDtype::kU64, "<u8", 8}, {NpyDtype::kI64, "<i8", 8},
    {NpyDtype::kF32, "<f4", 4},  {NpyDtype::kF64, "<f8", 8},
};

const DtypeInfo& Info(NpyDtype dtype) {
  for (const DtypeInfo& d : kDtypes)
    if (d.dtype == dtype) return d;
  TRIB_CHECK(false, "unknown NpyDtype");
  return kDtypes[0];
}

// Header text as it can be shown in a message: at most `max` characters, non-printable bytes as
// \xNN, so a binary file does not garble the terminal.
std::string Printable(std::string_view s, size_t max = 120) {
  std::string out;
  for (size_t i = 0; i < s.size() && i < max; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7f)
      out += static_cast<char>(c);
    else
      out += fmt::format("\\x{:02x}", c);
  }
  if (s.size() > max) out += "...";
  return out;
}

std::string ShapeToString(const std::vector<uint64_t>& shape) {
  if (shape.size() == 1) return fmt::format("({},)", shape[0]);
  return fmt::format("({})", fmt::join(shape, ", "));
}

Result<NpyDtype> DtypeFromDescr(std::string_view descr, std::string_view name) {
  for (const DtypeInfo& d : kDtypes) {
    if (descr == d.descr) return d.dtype;
    // One-byte types have no byte order; NumPy writes '|', but '<' means the same.
    if (d.size == 1 && descr.size() == 3 && descr[0] == '<' && descr.substr(1) == d.descr.substr(1))
      return d.dtype;
  }
  if (!descr.empty() && descr[0] == '>')
    return Status::InvalidArgument(
        fmt::format("{}: dtype '{}' is big-endian, which is not supported; save "
                    "a.astype(a.dtype.newbyteorder('<')) instead",
                    name, Printable(descr)));
  return Status::InvalidArgument(fmt::format(
      "{}: dtype '{}' is not supported (supported: |b1 |u1 |i1 <u2 <i2 <u4 <i4 <u8 <i8 <f4 <f8)",
      name, Printable(descr)));
}

// A cursor over the Python dict literal of the header. Only the subset NumPy writes is accepted:
// string keys, string / True / False / tuple-of-integers values, no escapes.
class HeaderText {
 public:
  HeaderText(std::string_view text, std::string_view name) : text_(text), name_(name) {}

  Status Error(std::string_view what) const {
    return Status::Corruption(
        fmt::format("{}: malformed NPY header at character {}: {} (header: {})", name_, pos_, what,
                    Printable(text_)));
  }
  void SkipSpace() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' ||
                                   text_[pos_] == '\n' || text_[pos_] == '\r'))
      ++pos_;
  }
  bool AtEnd() const { return pos_ >= text_.size(); }
  char Peek() const { return AtEnd() ? '\0' : text_[pos_]; }
  bool Consume(char c) {
    SkipSpace();
    if (Peek() != c) return false;
    ++pos_;
    return true;
  }
  Status Expect(char c) {
    if (Consume(c)) return Status::Ok();
    return Error(fmt::format("expected '{}'", c));
  }

  Result<std::string_view> String() {
    SkipSpace();
    const char quote = Peek();
    if (quote != '\'' && quote != '"') return Error("expected a quoted string");
    const size_t start = ++pos_;
    while (!AtEnd() && text_[pos_] != quote) {
      if (text_[pos_] == '\\') return Error("escapes in strings are not supported");
      ++pos_;
    }
    if (AtEnd()) return Error("unterminated string");
    return text_.substr(start, pos_++ - start);
  }

  Result<bool> Bool() {
    SkipSpace();
    for (const auto& [word, value] : {std::pair{"True", true}, std::pair{"False", false}}) {
      const std::string_view w(word);
      if (text_.substr(pos_, w.size()) == w) {
        pos_ += w.size();
        return value;
      }
    }
    return Error("expected True or False");
  }

  // "()", "(3,)", "(3, 4)", "(3, 4,)"; Python 2's "3L" is accepted.
  Result<std::vector<uint64_t>> Tuple() {
    TRIB_RETURN_IF_ERROR(Expect('('));
    std::vector<uint64_t> dims;
    while (!Consume(')')) {
      if (!dims.empty()) TRIB_RETURN_IF_ERROR(Expect(','));
      if (Consume(')')) break;
      SkipSpace();
      uint64_t v = 0;
      const char* begin = text_.data() + pos_;
      const auto [end, ec] = std::from_chars(begin, text_.data() + text_.size(), v);
      if (ec == std::errc::result_out_of_range) return Error("a dimension does not fit in 64 bits");
      if (ec != std::errc() || end == begin) return Error("expected a non-negative integer");
      pos_ += static_cast<size_t>(end - begin);
      if (Peek() == 'L') ++pos_;
      if (dims.size() == static_cast<size_t>(kNpyMaxRank))
        return Status::InvalidArgument(
            fmt::format("{}: the shape has more than {} dimensions, which is not supported", name_,
                        kNpyMaxRank));
      dims.push_back(v);
    }
    return dims;
  }

 private:
  std::string_view text_;
  std::string_view name_;
  size_t pos_ = 0;
};

Result<NpyHeader> ParseDict(std::string_view text, std::string_view name) {
  HeaderText p(text, name);
  NpyHeader h;
  bool have_descr = false, have_order = false, have_shape = false;
  TRIB_RETURN_IF_ERROR(p.Expect('{'));
  while (!p.Consume('}')) {
    TRIB_ASSIGN_OR_RETURN(std::string_view key, p.String());
    TRIB_RETURN_IF_ERROR(p.Expect(':'));
    bool* seen = nullptr;
    if (key == "descr") {
      p.SkipSpace();
      if (p.Peek() == '[')
        return Status::InvalidArgument(
            fmt::format("{}: structured dtypes (a 'descr' list) are not supported; save a plain "
                        "numeric array",
                        name));
      TRIB_ASSIGN_OR_RETURN(std::string_view descr, p.String());
      TRIB_ASSIGN_OR_RETURN(h.dtype, DtypeFromDescr(descr, name));
      seen = &have_descr;
    } else if (key == "fortran_order") {
      TRIB_ASSIGN_OR_RETURN(h.fortran_order, p.Bool());
      seen = &have_order;
    } else if (key == "shape") {
      TRIB_ASSIGN_OR_RETURN(h.shape, p.Tuple());
      seen = &have_shape;
    } else {
      return p.Error(fmt::format("unknown key '{}' (expected 'descr', 'fortran_order', 'shape')",
                                 Printable(key)));
    }
    if (*seen) return p.Error(fmt::format("key '{}' appears twice", key));
    *seen = true;
    if (p.Consume('}')) break;
    TRIB_RETURN_IF_ERROR(p.Expect(','));
  }
  p.SkipSpace();
  if (!p.AtEnd()) return p.Error("text after the closing '}'");
  for (const auto& [have, key] :
       {std::pair{have_descr, "descr"}, std::pair{have_order, "fortran_order"},
        std::pair{have_shape, "shape"}})
    if (!have) return p.Error(fmt::format("key '{}' is missing", key));
  return h;
}

uint32_t LoadLittleEndian(const uint8_t* p, size_t n) {
  uint32_t v = 0;
  for (size_t i = n; i-- > 0;) v = (v << 8) | p[i];
  return v;
}

// Reads the preamble: the version and the offset of the first element (the header's end).
// `bytes` needs to hold only the preamble.
Result<NpyHeader> ParsePreamble(std::span<const uint8_t> bytes, std::string_view name) {
  const size_t magic_bytes = std::min(bytes.size(), sizeof(kMagic));
  if (!std::equal(kMagic, kMagic + magic_bytes, bytes.begin()))
    return Status::Corruption(fmt::format(
        "{}: wrong magic '{}': not a .npy file (expected '\\x93NUMPY')", name,
        Printable(std::string_view(reinterpret_cast<const char*>(bytes.data()), magic_bytes))));
  if (bytes.size() < 10)
    return Status::Corruption(fmt::format(
        "{}: truncated NPY preamble: expected at least 10 bytes, got {}", name, bytes.size()));
  NpyHeader h;
  h.major_version = bytes[6];
  const int minor = bytes[7];
  if (h.major_version < 1 || h.major_version > 3 || minor != 0)
    return Status::Corruption(
        fmt::format("{}: NPY version {}.{} is not supported (1.0, 2.0 and 3.0 are)", name,
                    h.major_version, minor));
  const size_t len_bytes = h.major_version == 1 ? 2 : 4;
  if (bytes.size() < 8 + len_bytes)
    return Status::Corruption(fmt::format("{}: truncated NPY preamble: expected {} bytes, got {}",
                                          name, 8 + len_bytes, bytes.size()));
  const uint32_t header_len = LoadLittleEndian(bytes.data() + 8, len_bytes);
  if (header_len > kNpyMaxHeaderBytes)
    return Status::OutOfRange(fmt::format("{}: NPY header of {} bytes is over the cap of {} bytes",
                                          name, header_len, kNpyMaxHeaderBytes));
  h.data_offset = 8 + len_bytes + header_len;
  return h;
}

// Bytes of the data to read: all of it, or the first options.max_items items.
struct Extent {
  std::vector<uint64_t> shape;  // the shape of what is read
  uint64_t bytes = 0;
  bool limited = false;  // fewer items than the file holds
};

Extent ExtentToRead(const NpyHeader& h, const NpyReadOptions& opt) {
  Extent e{h.shape, h.data_bytes(), false};
  if (opt.max_items > 0 && !h.shape.empty() && opt.max_items < h.shape[0]) {
    const uint64_t item_bytes = h.data_bytes() / h.shape[0];
    e.shape[0] = opt.max_items;
    e.bytes = opt.max_items * item_bytes;
    e.limited = true;
  }
  return e;
}

// Checks the bytes after the header against what the header promises.
Status CheckDataSize(const NpyHeader& h, const Extent& e, uint64_t present, std::string_view name) {
  if (present < e.bytes)
    return Status::Corruption(fmt::format(
        "{}: truncated: expected {} bytes of data after the {}-byte header (shape {}, {}), got {}",
        name, e.bytes, h.data_offset, ShapeToString(e.shape), NpyDescr(h.dtype), present));
  if (!e.limited && present > e.bytes)
    return Status::Corruption(fmt::format(
        "{}: shape mismatch: the header (shape {}, {}) accounts for {} bytes of data, but {} "
        "follow it",
        name, ShapeToString(h.shape), NpyDescr(h.dtype), e.bytes, present));
  return Status::Ok();
}

// A file descriptor closed on destruction.
class File {
 public:
  File() = default;
  ~File() { Reset(-1); }
  File(const File&) = delete;
  File& operator=(const File&) = delete;
  int fd() const { return fd_; }
  void Reset(int fd) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_ = -1;
};

Status ReadExactly(int fd, uint8_t* out, size_t n, const std::string& path, size_t* got) {
  *got = 0;
  while (*got < n) {
    const ssize_t r = ::read(fd, out + *got, std::min<size_t>(n - *got, size_t{1} << 30));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0)
      return Status::IoError(fmt::format("{}: read failed: {}", path, std::strerror(errno)));
    if (r == 0) break;
    *got += static_cast<size_t>(r);
  }
  return Status::Ok();
}

// Opens `path` and parses its header; the descriptor is left just past the header.
Result<NpyHeader> OpenAndReadHeader(const std::string& path, const NpyReadOptions& opt, File* file,
                                    uint64_t* file_size) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return Status::NotFound("no such file: " + path);
    return Status::IoError(fmt::format("cannot open {}: {}", path, std::strerror(errno)));
  }
  file->Reset(fd);
  struct stat st {};
  if (::fstat(fd, &st) != 0)
    return Status::IoError(fmt::format("cannot stat {}: {}", path, std::strerror(errno)));
  if (!S_ISREG(st.st_mode)) return Status::InvalidArgument("not a regular file: " + path);
  *file_size = static_cast<uint64_t>(st.st_size);

  std::vector<uint8_t> head(kNpyMaxPreambleBytes);
  size_t got = 0;
  TRIB_RETURN_IF_ERROR(ReadExactly(fd, head.data(), head.size(), path, &got));
  head.resize(got);
  TRIB_ASSIGN_OR_RETURN(NpyHeader pre, ParsePreamble(head, path));
  if (pre.data_offset > *file_size)
    return Status::Corruption(fmt::format("{}: truncated NPY header: expected {} bytes, got {}",
                                          path, pre.data_offset, *file_size));
  // The header is bounded (kNpyMaxHeaderBytes) and present in the file: read it whole.
  const size_t have = head.size();
  head.resize(pre.data_offset);
  if (pre.data_offset > have) {
    TRIB_RETURN_IF_ERROR(ReadExactly(fd, head.data() + have, pre.data_offset - have, path, &got));
    if (got < pre.data_offset - have)
      return Status::Corruption(fmt::format("{}: truncated NPY header: expected {} bytes, got {}",
                                            path, pre.data_offset, have + got));
  } else if (::lseek(fd, static_cast<off_t>(pre.data_offset), SEEK_SET) < 0) {
    return Status::IoError(fmt::format("{}: seek failed: {}", path, std::strerror(errno)));
  }
  return ParseNpyHeader(head, path, opt);
}

template <typename T>
T Load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

// Calls fn(index, value as double) for every element, stopping at the first error.
template <typename Fn>
Status ForEachValue(const NpyArray& a, Fn&& fn) {
  const uint8_t* p = a.data.data();
  const size_t n = a.data.size() / NpyItemSize(a.dtype);
  auto each = [&](auto tag) -> Status {
    using T = decltype(tag);
    for (size_t i = 0; i < n; ++i) TRIB_RETURN_IF_ERROR(fn(i, Load<T>(p + i * sizeof(T))));
    return Status::Ok();
  };
  switch (a.dtype) {
    case NpyDtype::kBool:
    case NpyDtype::kU8:
      return each(uint8_t{});
    case NpyDtype::kI8:
      return each(int8_t{});
    case NpyDtype::kU16:
      return each(uint16_t{});
    case NpyDtype::kI16:
      return each(int16_t{});
    case NpyDtype::kU32:
      return each(uint32_t{});
    case NpyDtype::kI32:
      return each(int32_t{});
    case NpyDtype::kU64:
      return each(uint64_t{});
    case NpyDtype::kI64:
      return each(int64_t{});
    case NpyDtype::kF32:
      return each(float{});
    case NpyDtype::kF64:
      return each(double{});
  }
  return Status::Internal("unknown NpyDtype");
}

}  // namespace

std::string_view NpyDescr(NpyDtype dtype) { return Info(dtype).descr; }
size_t NpyItemSize(NpyDtype dtype) { return Info(dtype).size; }

uint64_t NpyHeader::num_elements() const {
  uint64_t n = 1;
  for (uint64_t d : shape) n *= d;
  return n;
}

uint64_t NpyArray::num_elements() const {
  uint64_t n = 1;
  for (uint64_t d : shape) n *= d;
  return n;
}

Result<NpyHeader> ParseNpyHeader(std::span<const uint8_t> bytes, std::string_view name,
                                 const NpyReadOptions& opt) {
  TRIB_ASSIGN_OR_RETURN(NpyHeader pre, ParsePreamble(bytes, name));
  if (bytes.size() < pre.data_offset)
    return Status::Corruption(fmt::format("{}: truncated NPY header: expected {} bytes, got {}",
                                          name, pre.data_offset, bytes.size()));
  const size_t text_start = pre.major_version == 1 ? 10 : 12;
  const std::string_view text(reinterpret_cast<const char*>(bytes.data()) + text_start,
                              pre.data_offset - text_start);
  TRIB_ASSIGN_OR_RETURN(NpyHeader h, ParseDict(text, name));
  h.major_version = pre.major_version;
  h.data_offset = pre.data_offset;
  if (h.fortran_order && h.shape.size() >= 2)
    return Status::InvalidArgument(
        fmt::format("{}: fortran_order is True (shape {}), which is not supported; save "
                    "np.ascontiguousarray(a) instead",
                    name, ShapeToString(h.shape)));
  // Saturate at cap + 1 so the product of up to kNpyMaxRank dims never overflows (a zero dim still
  // makes it 0).
  const uint64_t cap = std::min(opt.max_elements, kHardElementCap);
  unsigned __int128 elements = 1;
  for (uint64_t d : h.shape) {
    elements *= d;
    if (elements > cap) elements = cap + 1u;
  }
  if (elements > cap)
    return Status::OutOfRange(fmt::format("{}: shape {} holds more elements than the cap of {}",
                                          name, ShapeToString(h.shape), cap));
  return h;
}

Result<NpyArray> ParseNpy(std::span<const uint8_t> bytes, std::string_view name,
                          const NpyReadOptions& opt) {
  TRIB_ASSIGN_OR_RETURN(NpyHeader h, ParseNpyHeader(bytes, name, opt));
  const Extent e = ExtentToRead(h, opt);
  TRIB_RETURN_IF_ERROR(CheckDataSize(h, e, bytes.size() - h.data_offset, name));
  NpyArray a;
  a.dtype = h.dtype;
  a.shape = e.shape;
  const uint8_t* begin = bytes.data() + h.data_offset;
  a.data.assign(begin, begin + e.bytes);
  return a;
}

Result<NpyArray> TakeNpy(std::vector<uint8_t> bytes, std::string_view name,
                         const NpyReadOptions& opt) {
  TRIB_ASSIGN_OR_RETURN(NpyHeader h, ParseNpyHeader(bytes, name, opt));
  const Extent e = ExtentToRead(h, opt);
  TRIB_RETURN_IF_ERROR(CheckDataSize(h, e, bytes.size() - h.data_offset, name));
  NpyArray a;
  a.dtype = h.dtype;
  a.shape = e.shape;
  bytes.erase(bytes.begin(), bytes.begin() + static_cast<ptrdiff_t>(h.data_offset));
  bytes.resize(e.bytes);
  a.data = std::move(bytes);
  return a;
}

Result<NpyHeader> ReadNpyFileHeader(const std::string& path, const NpyReadOptions& opt) {
  File file;
  uint64_t size = 0;
  TRIB_ASSIGN_OR_RETURN(NpyHeader h, OpenAndReadHeader(path, opt, &file, &size));
  TRIB_RETURN_IF_ERROR(CheckDataSize(h, ExtentToRead(h, opt), size - h.data_offset, path));
  return h;
}

Result<NpyArray> ReadNpyFile(const std::string& path, const NpyReadOptions& opt) {
  File file;
  uint64_t size = 0;
  TRIB_ASSIGN_OR_RETURN(NpyHeader h, OpenAndReadHeader(path, opt, &file, &size));
  const Extent e = ExtentToRead(h, opt);
  // Compared with the file's size before the buffer is allocated.
  TRIB_RETURN_IF_ERROR(CheckDataSize(h, e, size - h.data_offset, path));
  NpyArray a;
  a.dtype = h.dtype;
  a.shape = e.shape;
  a.data.resize(e.bytes);
  size_t got = 0;
  TRIB_RETURN_IF_ERROR(ReadExactly(file.fd(), a.data.data(), a.data.size(), path, &got));
  if (got < a.data.size())
    return Status::Corruption(
        fmt::format("{}: truncated: expected {} bytes of data, got {}", path, a.data.size(), got));
  return a;
}

std::vector<uint8_t> EncodeNpy(NpyDtype dtype, std::span<const uint64_t> shape,
                               std::span<const uint8_t> data, bool fortran_order) {
  uint64_t n = 1;
  for (uint64_t d : shape) n *= d;
  TRIB_CHECK_EQ(n * NpyItemSize(dtype), data.size(), "NPY shape does not match the data size");
  const std::vector<uint64_t> dims(shape.begin(), shape.end());
  std::string header =
      fmt::format("{{'descr': '{}', 'fortran_order': {}, 'shape': {}, }}", NpyDescr(dtype),
                  fortran_order ? "True" : "False", ShapeToString(dims));
  // NumPy pads the preamble plus header to a multiple of 64 bytes, ending in '\n'.
  const size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  TRIB_CHECK(header.size() <= 0xffff, "NPY header too long for version 1.0");
  std::vector<uint8_t> out(std::begin(kMagic), std::end(kMagic));
  out.push_back(1);
  out.push_back(0);
  out.push_back(static_cast<uint8_t>(header.size() & 0xff));
  out.push_back(static_cast<uint8_t>(header.size() >> 8));
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

Result<std::vector<float>> NpyToFloats(const NpyArray& a, std::string_view name, bool scale_bytes) {
  std::vector<float> out;
  out.reserve(a.data.size() / NpyItemSize(a.dtype));
  if (scale_bytes && a.dtype == NpyDtype::kU8) {
    // A table of byte / 255 (exact division, so 255 maps to exactly 1.0f), as for IDX images.
    float scale[256];
    for (int b = 0; b < 256; ++b) scale[b] = static_cast<float>(b) / 255.0f;
    for (uint8_t b : a.data) out.push_back(scale[b]);
    return out;
  }
  TRIB_RETURN_IF_ERROR(ForEachValue(a, [&](size_t i, auto v) -> Status {
    if constexpr (std::is_floating_point_v<decltype(v)>) {
      // Checked before the conversion: a double out of float's range does not convert.
      if (!std::isfinite(v) || std::fabs(v) > std::numeric_limits<float>::max())
        return Status::InvalidArgument(
            fmt::format("{}: element {} is {}, not a finite float32 value", name, i, v));
    }
    out.push_back(static_cast<float>(v));
    return Status::Ok();
  }));
  return out;
}

Result<std::vector<uint8_t>> NpyToLabels(const NpyArray& a, std::string_view name) {
  std::vector<uint8_t> out;
  out.reserve(a.data.size() / NpyItemSize(a.dtype));
  TRIB_RETURN_IF_ERROR(ForEachValue(a, [&](size_t i, auto v) -> Status {
    using T = decltype(v);
    bool ok = false;
    if constexpr (std::is_floating_point_v<T>)
      ok = v >= 0 && v <= 255 && v == std::floor(v);
    else if constexpr (std::is_signed_v<T>)
      ok = v >= 0 && v <= 255;
    else
      ok = v <= 255;
    if (!ok)
      return Status::InvalidArgument(fmt::format(
          "{}: label {} of example {} is not an integer in [0, 255] (at most 256 classes)", name, v,
          i));
    out.push_back(static_cast<uint8_t>(v));
    return Status::Ok();
  }));
  return out;
}

}  // namespace tributary
