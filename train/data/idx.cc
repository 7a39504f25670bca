#include "train/data/idx.h"

#include <sys/stat.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "core/check.h"
#include "core/progress.h"

namespace tributary {
namespace {

// Inflate (or copy) at most this much per read, so the output grows only with bytes that exist.
constexpr size_t kChunkBytes = size_t{1} << 20;
// For gzip input, reserve up to this multiple of the compressed size up front: enough for IDX
// data (Fashion-MNIST inflates 1.8x, MNIST 4.7x) to avoid regrowth copies, while keeping what a
// lying header can make us allocate proportional to the bytes on disk.
constexpr uint64_t kGzipReserveRatio = 8;

// A forward-only stream of bytes with a known remaining length where that is cheap to know.
class ByteSource {
 public:
  virtual ~ByteSource() = default;
  // Reads up to `n` bytes into `out`; returns how many, 0 only at the end of the data.
  virtual Result<size_t> Read(uint8_t* out, size_t n) = 0;
  // Bytes not yet read, or -1 when unknown without reading them (gzip).
  virtual int64_t KnownRemaining() const = 0;

  // Reads until `n` bytes arrived or the data ended; returns how many arrived.
  Result<size_t> ReadFully(uint8_t* out, size_t n) {
    size_t done = 0;
    while (done < n) {
      TRIB_ASSIGN_OR_RETURN(size_t got, Read(out + done, n - done));
      if (got == 0) break;
      done += got;
    }
    return done;
  }
};

class MemorySource final : public ByteSource {
 public:
  explicit MemorySource(std::span<const uint8_t> bytes) : bytes_(bytes) {}
  Result<size_t> Read(uint8_t* out, size_t n) override {
    const size_t k = std::min(n, bytes_.size() - pos_);
    std::copy_n(bytes_.data() + pos_, k, out);
    pos_ += k;
    return k;
  }
  int64_t KnownRemaining() const override { return static_cast<int64_t>(bytes_.size() - pos_); }

 private:
  std::span<const uint8_t> bytes_;
  size_t pos_ = 0;
};

// zlib's gz* API inflates gzip data and reads anything else transparently (gzdirect() == 1).
class GzFileSource final : public ByteSource {
 public:
  // `progress`, when not null, is set to the file offset read so far after every read.
  GzFileSource(gzFile file, std::string path, uint64_t file_size, Progress* progress)
      : file_(file), path_(std::move(path)), file_size_(file_size), progress_(progress) {}
  ~GzFileSource() override { gzclose_r(file_); }
  GzFileSource(const GzFileSource&) = delete;
  GzFileSource& operator=(const GzFileSource&) = delete;

  Result<size_t> Read(uint8_t* out, size_t n) override {
    const int got = gzread(file_, out, static_cast<unsigned>(std::min(n, kChunkBytes)));
    if (got < 0 || (got == 0 && !Healthy())) return ZlibError();
    consumed_ += static_cast<uint64_t>(got);
    const z_off_t offset = gzoffset(file_);  // in the file, compressed or not
    if (progress_ != nullptr && offset >= 0) progress_->Set(static_cast<uint64_t>(offset));
    return static_cast<size_t>(got);
  }
  // Only known for plain files: what is left of the file on disk.
  int64_t KnownRemaining() const override {
    if (!gzdirect(file_)) return -1;
    return consumed_ >= file_size_ ? 0 : static_cast<int64_t>(file_size_ - consumed_);
  }

 private:
  bool Healthy() {
    int errnum = Z_OK;
    gzerror(file_, &errnum);
    return errnum == Z_OK;
  }
  Status ZlibError() {
    int errnum = Z_OK;
    const char* msg = gzerror(file_, &errnum);
    if (errnum == Z_ERRNO)
      return Status::IoError(fmt::format("{}: read failed: {}", path_, std::strerror(errno)));
    // Z_BUF_ERROR here means the gzip stream ended mid-way ("unexpected end of file").
    return Status::Corruption(fmt::format("{}: corrupt gzip data after {} decompressed bytes: {}",
                                          path_, consumed_, msg ? msg : "unknown zlib error"));
  }

  gzFile file_;
  std::string path_;
  uint64_t file_size_;
  uint64_t consumed_ = 0;
  Progress* progress_;
};

uint32_t LoadBigEndian32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

std::string DimsToString(const std::vector<uint32_t>& dims) {
  return fmt::format("{}", fmt::join(dims, " x "));
}

// `reserve_cap` bounds the up-front reservation for data of unknown length (gzip).
Result<IdxArray> ParseFrom(ByteSource& src, std::string_view name, const IdxReadOptions& opt,
                           uint64_t reserve_cap) {
  uint8_t magic[4] = {};
  TRIB_ASSIGN_OR_RETURN(size_t got, src.ReadFully(magic, 4));
  if (got < 4)
    return Status::Corruption(
        fmt::format("{}: truncated IDX header: expected 4 magic bytes, got {}", name, got));
  const uint32_t magic_value = LoadBigEndian32(magic);
  if (magic[0] != 0 || magic[1] != 0)
    return Status::Corruption(fmt::format(
        "{}: wrong magic 0x{:08x}: not an IDX file (expected 0x{:08x} images or 0x{:08x} labels)",
        name, magic_value, kIdxMagicUbyteRank3, kIdxMagicUbyteRank1));
  if (magic[2] != kIdxTypeUbyte)
    return Status::Corruption(
        fmt::format("{}: wrong magic 0x{:08x}: element type 0x{:02x} is not supported (only "
                    "unsigned byte 0x08)",
                    name, magic_value, magic[2]));
  const int rank = magic[3];
  if (rank < 1 || rank > kIdxMaxRank)
    return Status::Corruption(fmt::format("{}: wrong magic 0x{:08x}: rank {} is not in 1..{}", name,
                                          magic_value, rank, kIdxMaxRank));
  if (opt.expected_rank != 0 && rank != opt.expected_rank)
    return Status::Corruption(fmt::format(
        "{}: wrong magic 0x{:08x}: expected 0x{:08x} (rank-{} unsigned-byte IDX)", name,
        magic_value, 0x0800u | static_cast<uint32_t>(opt.expected_rank), opt.expected_rank));

  uint8_t dim_bytes[4 * kIdxMaxRank] = {};
  const size_t header_dims = 4 * static_cast<size_t>(rank);
  TRIB_ASSIGN_OR_RETURN(got, src.ReadFully(dim_bytes, header_dims));
  if (got < header_dims)
    return Status::Corruption(
        fmt::format("{}: truncated IDX header: expected {} bytes of dimensions, got {}", name,
                    header_dims, got));
  IdxArray out;
  out.dims.resize(rank);
  // Saturate at cap + 1 so that the product of up to 8 uint32 dims never overflows (a zero dim
  // still makes it 0).
  unsigned __int128 elements = 1;
  for (int d = 0; d < rank; ++d) {
    out.dims[d] = LoadBigEndian32(dim_bytes + 4 * static_cast<size_t>(d));
    elements *= out.dims[d];
    if (elements > opt.max_elements) elements = opt.max_elements + 1u;
  }
  if (elements > opt.max_elements)
    return Status::OutOfRange(
        fmt::format("{}: header claims {} elements, over the cap of {} elements", name,
                    DimsToString(out.dims), opt.max_elements));

  // Optionally stop after the first max_items items.
  const uint64_t item_elements =
      out.dims[0] == 0 ? 0 : static_cast<uint64_t>(elements) / out.dims[0];
  const bool limited = opt.max_items > 0 && opt.max_items < out.dims[0];
  if (limited) out.dims[0] = static_cast<uint32_t>(opt.max_items);
  const uint64_t want = limited ? opt.max_items * item_elements : static_cast<uint64_t>(elements);
  const size_t header_bytes = 4 + header_dims;

  const int64_t known = src.KnownRemaining();
  if (known >= 0) {
    // Plain data: compare with the bytes on hand before allocating.
    if (static_cast<uint64_t>(known) < want)
      return Status::Corruption(fmt::format(
          "{}: truncated: expected {} bytes of data after the {}-byte header ({}), got {}", name,
          want, header_bytes, DimsToString(out.dims), known));
    if (!limited && static_cast<uint64_t>(known) > want)
      return Status::Corruption(fmt::format(
          "{}: dims mismatch: header ({}) accounts for {} bytes of data, but {} follow the header",
          name, DimsToString(out.dims), want, known));
    out.data.resize(want);
    TRIB_ASSIGN_OR_RETURN(got, src.ReadFully(out.data.data(), want));
    if (got < want)
      return Status::Corruption(
          fmt::format("{}: truncated: expected {} bytes of data, got {}", name, want, got));
    return out;
  }

  // Compressed data: grow with what actually inflates, one bounded chunk at a time.
  out.data.reserve(static_cast<size_t>(std::min(want, reserve_cap)));
  while (out.data.size() < want) {
    const size_t old = out.data.size();
    const size_t chunk = static_cast<size_t>(std::min<uint64_t>(kChunkBytes, want - old));
    out.data.resize(old + chunk);
    TRIB_ASSIGN_OR_RETURN(got, src.ReadFully(out.data.data() + old, chunk));
    out.data.resize(old + got);
    if (got < chunk) break;
  }
  if (out.data.size() < want)
    return Status::Corruption(fmt::format(
        "{}: truncated: expected {} bytes of data after the {}-byte header ({}), got {}", name,
        want, header_bytes, DimsToString(out.dims), out.data.size()));
  if (!limited) {
    // Reading past the end also makes zlib verify the gzip trailer (CRC-32 and length).
    uint8_t extra = 0;
    TRIB_ASSIGN_OR_RETURN(got, src.ReadFully(&extra, 1));
    if (got != 0)
      return Status::Corruption(fmt::format(
          "{}: dims mismatch: header ({}) accounts for {} bytes of data, but the stream holds more",
          name, DimsToString(out.dims), want));
  }
  out.data.shrink_to_fit();
  return out;
}

}  // namespace

uint64_t IdxArray::num_elements() const {
  uint64_t n = 1;
  for (uint32_t d : dims) n *= d;
  return dims.empty() ? 0 : n;
}

Result<IdxArray> ReadIdxFile(const std::string& path, const IdxReadOptions& options) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return Status::NotFound("no such file: " + path);
    return Status::IoError(fmt::format("cannot stat {}: {}", path, std::strerror(errno)));
  }
  if (!S_ISREG(st.st_mode)) return Status::InvalidArgument("not a regular file: " + path);
  gzFile file = gzopen(path.c_str(), "rb");
  if (file == nullptr)
    return Status::IoError(fmt::format("cannot open {}: {}", path, std::strerror(errno)));
  gzbuffer(file, 256 * 1024);
  // Progress over the bytes of the file (compressed or not), checked on every read: a read is up
  // to a 1 MiB chunk, so the clock costs nothing next to it.
  Progress::Options every_read = Progress::Defaults();
  every_read.check_every = 1;
  Progress progress("reading " + path, static_cast<uint64_t>(st.st_size), "bytes", every_read);
  GzFileSource src(file, path, static_cast<uint64_t>(st.st_size), &progress);
  Result<IdxArray> array =
      ParseFrom(src, path, options, kGzipReserveRatio * static_cast<uint64_t>(st.st_size));
  if (array.ok()) progress.Done();
  return array;
}

Result<IdxArray> ParseIdx(std::span<const uint8_t> bytes, std::string_view name,
                          const IdxReadOptions& options) {
  MemorySource src(bytes);
  return ParseFrom(src, name, options, /*reserve_cap=*/0);  // the size is known: no guessing
}

std::vector<uint8_t> EncodeIdx(std::span<const uint32_t> dims, std::span<const uint8_t> data) {
  TRIB_CHECK(!dims.empty() && dims.size() <= static_cast<size_t>(kIdxMaxRank), "bad IDX rank");
  uint64_t n = 1;
  for (uint32_t d : dims) n *= d;
  TRIB_CHECK_EQ(n, data.size(), "IDX dims do not match the data size");
  std::vector<uint8_t> out = {0, 0, kIdxTypeUbyte, static_cast<uint8_t>(dims.size())};
  for (uint32_t d : dims)
    for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<uint8_t>(d >> shift));
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

}  // namespace tributary
