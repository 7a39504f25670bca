#include "train/data/npz.h"

#include <sys/stat.h>
#include <zip.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <vector>

#include <fmt/format.h>

namespace tributary {
namespace {

// Inflate at most this much per read, so the buffer grows only with bytes that exist.
constexpr size_t kInflateChunkBytes = size_t{1} << 20;
// Members listed in a "no such member" error.
constexpr zip_int64_t kListedMembers = 10;

struct ZipDiscard {
  void operator()(zip_t* z) const { zip_discard(z); }
};
struct ZipFileClose {
  void operator()(zip_file_t* f) const { zip_fclose(f); }
};
using Archive = std::unique_ptr<zip_t, ZipDiscard>;
using Member = std::unique_ptr<zip_file_t, ZipFileClose>;

std::string ErrorText(zip_error_t* err) {
  std::string text = zip_error_strerror(err);
  zip_error_fini(err);
  return text;
}

// Opens the archive over `src`, which it takes (it is freed on failure too).
Result<Archive> OpenArchive(zip_source_t* src, std::string_view name) {
  zip_error_t err;
  zip_error_init(&err);
  zip_t* z = zip_open_from_source(src, ZIP_RDONLY, &err);
  if (z == nullptr) {
    zip_source_free(src);
    return Status::Corruption(
        fmt::format("{}: not a readable .npz (ZIP) archive: {}", name, ErrorText(&err)));
  }
  zip_error_fini(&err);
  return Archive(z);
}

Result<Archive> OpenFile(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return Status::NotFound("no such file: " + path);
    return Status::IoError(fmt::format("cannot stat {}: {}", path, std::strerror(errno)));
  }
  if (!S_ISREG(st.st_mode)) return Status::InvalidArgument("not a regular file: " + path);
  zip_error_t err;
  zip_error_init(&err);
  zip_source_t* src = zip_source_file_create(path.c_str(), 0, -1, &err);
  if (src == nullptr)
    return Status::IoError(fmt::format("cannot open {}: {}", path, ErrorText(&err)));
  zip_error_fini(&err);
  return OpenArchive(src, path);
}

Result<Archive> OpenMemory(std::span<const uint8_t> bytes, std::string_view name) {
  zip_error_t err;
  zip_error_init(&err);
  // freep = 0: the archive reads `bytes` in place and never frees them.
  zip_source_t* src = zip_source_buffer_create(bytes.data(), bytes.size(), 0, &err);
  if (src == nullptr)
    return Status::Internal(fmt::format("{}: zip_source_buffer_create: {}", name, ErrorText(&err)));
  zip_error_fini(&err);
  return OpenArchive(src, name);
}

// An open member: its name for messages, the sizes the directory gives, the stream.
struct OpenMember {
  std::string label;  // "<file> member 'x.npy'"
  uint64_t size = 0;
  uint64_t comp_size = 0;
  Member file;
};

Result<OpenMember> Open(zip_t* z, std::string_view name, std::string_view key,
                        const NpyReadOptions& opt) {
  const std::string member = fmt::format("{}.npy", key);
  OpenMember m;
  m.label = fmt::format("{} member '{}'", name, member);
  const zip_int64_t index = zip_name_locate(z, member.c_str(), 0);
  if (index < 0) {
    std::vector<std::string> names;
    const zip_int64_t n = zip_get_num_entries(z, 0);
    for (zip_int64_t i = 0; i < n && i < kListedMembers; ++i) {
      const char* s = zip_get_name(z, static_cast<zip_uint64_t>(i), 0);
      names.push_back(s ? fmt::format("'{}'", s) : "?");
    }
    if (n > kListedMembers) names.push_back("...");
    return Status::NotFound(
        fmt::format("{}: no array '{}' (member '{}'); it holds {}", name, key, member,
                    names.empty() ? "no members" : fmt::format("{}", fmt::join(names, ", "))));
  }
  const auto i = static_cast<zip_uint64_t>(index);
  zip_stat_t st;
  zip_stat_init(&st);
  if (zip_stat_index(z, i, 0, &st) != 0)
    return Status::Corruption(
        fmt::format("{}: cannot read its entry: {}", m.label, zip_strerror(z)));
  const zip_uint64_t need = ZIP_STAT_SIZE | ZIP_STAT_COMP_SIZE | ZIP_STAT_COMP_METHOD;
  if ((st.valid & need) != need)
    return Status::Corruption(fmt::format("{}: its entry lacks sizes or a method", m.label));
  if ((st.valid & ZIP_STAT_ENCRYPTION_METHOD) && st.encryption_method != ZIP_EM_NONE)
    return Status::InvalidArgument(
        fmt::format("{}: is encrypted, which is not supported", m.label));
  if (st.comp_method != ZIP_CM_STORE && st.comp_method != ZIP_CM_DEFLATE)
    return Status::InvalidArgument(fmt::format(
        "{}: compression method {} is not supported (np.savez stores, np.savez_compressed "
        "deflates)",
        m.label, st.comp_method));
  // The largest member a valid array under the cap makes: the elements, 8 bytes each at most, and
  // the largest preamble and header.
  const uint64_t cap = std::min<uint64_t>(opt.max_elements, uint64_t{1} << 56) * 8 +
                       kNpyMaxPreambleBytes + kNpyMaxHeaderBytes;
  if (st.size > cap)
    return Status::OutOfRange(
        fmt::format("{}: {} bytes uncompressed, over the cap of {} bytes ({} elements)", m.label,
                    st.size, cap, opt.max_elements));
  m.size = st.size;
  m.comp_size = st.comp_size;
  m.file.reset(zip_fopen_index(z, i, 0));
  if (!m.file)
    return Status::Corruption(fmt::format("{}: cannot open it: {}", m.label, zip_strerror(z)));
  return m;
}

// Reads until `n` bytes arrived or the member ended; returns how many arrived.
Result<size_t> ReadUpTo(OpenMember& m, uint8_t* out, size_t n) {
  size_t done = 0;
  while (done < n) {
    const zip_int64_t got = zip_fread(m.file.get(), out + done, n - done);
    if (got < 0)
      return Status::Corruption(
          fmt::format("{}: corrupt data: {}", m.label, zip_file_strerror(m.file.get())));
    if (got == 0) break;
    done += static_cast<size_t>(got);
  }
  return done;
}

// The member's first bytes, enough for its NPY header, parsed; checks that the header accounts for
// exactly the member's size. `head` keeps the bytes read.
Result<NpyHeader> ReadHeader(OpenMember& m, const NpyReadOptions& opt, std::vector<uint8_t>* head) {
  head->resize(
      static_cast<size_t>(std::min<uint64_t>(m.size, kNpyMaxPreambleBytes + kNpyMaxHeaderBytes)));
  TRIB_ASSIGN_OR_RETURN(size_t got, ReadUpTo(m, head->data(), head->size()));
  head->resize(got);
  TRIB_ASSIGN_OR_RETURN(NpyHeader h, ParseNpyHeader(*head, m.label, opt));
  const uint64_t want = h.data_offset + h.data_bytes();
  if (want != m.size)
    return Status::Corruption(
        fmt::format("{}: its NPY header accounts for {} bytes but the archive's directory says {}",
                    m.label, want, m.size));
  return h;
}

Result<NpyArray> ReadArray(zip_t* z, std::string_view name, std::string_view key,
                           const NpyReadOptions& opt) {
  TRIB_ASSIGN_OR_RETURN(OpenMember m, Open(z, name, key, opt));
  std::vector<uint8_t> bytes;
  TRIB_ASSIGN_OR_RETURN(NpyHeader h, ReadHeader(m, opt, &bytes));
  (void)h;
  // m.size is within the cap but only a claim: reserve no more than the compressed bytes could
  // plausibly hold and grow with what really inflates.
  bytes.reserve(static_cast<size_t>(
      std::min<uint64_t>(m.size, std::max<uint64_t>(kInflateChunkBytes, 8 * m.comp_size))));
  while (bytes.size() < m.size) {
    const size_t old = bytes.size();
    const size_t chunk = static_cast<size_t>(std::min<uint64_t>(kInflateChunkBytes, m.size - old));
    bytes.resize(old + chunk);
    TRIB_ASSIGN_OR_RETURN(size_t got, ReadUpTo(m, bytes.data() + old, chunk));
    bytes.resize(old + got);
    if (got < chunk)
      return Status::Corruption(
          fmt::format("{}: truncated: expected {} bytes, got {}", m.label, m.size, bytes.size()));
  }
  // Reading to the end makes libzip check the CRC-32.
  uint8_t extra = 0;
  TRIB_ASSIGN_OR_RETURN(size_t more, ReadUpTo(m, &extra, 1));
  if (more != 0)
    return Status::Corruption(
        fmt::format("{}: holds more than the {} bytes its entry says", m.label, m.size));
  return TakeNpy(std::move(bytes), m.label, opt);
}

}  // namespace

Result<NpyArray> ReadNpzArray(const std::string& path, std::string_view key,
                              const NpyReadOptions& options) {
  TRIB_ASSIGN_OR_RETURN(Archive z, OpenFile(path));
  return ReadArray(z.get(), path, key, options);
}

Result<NpyHeader> ReadNpzArrayHeader(const std::string& path, std::string_view key,
                                     const NpyReadOptions& options) {
  TRIB_ASSIGN_OR_RETURN(Archive z, OpenFile(path));
  TRIB_ASSIGN_OR_RETURN(OpenMember m, Open(z.get(), path, key, options));
  std::vector<uint8_t> head;
  return ReadHeader(m, options, &head);
}

Result<NpyArray> ParseNpzArray(std::span<const uint8_t> bytes, std::string_view name,
                               std::string_view key, const NpyReadOptions& options) {
  TRIB_ASSIGN_OR_RETURN(Archive z, OpenMemory(bytes, name));
  return ReadArray(z.get(), name, key, options);
}

}  // namespace tributary
