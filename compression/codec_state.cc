#include "compression/codec_state.h"

#include <cmath>
#include <string>

#include "compression/byte_io.h"

namespace tributary {
namespace {

constexpr uint32_t kMagic = 0x53435254;  // "TRCS"
constexpr uint32_t kVersion = 1;
constexpr uint32_t kMaxSpecBytes = 256;

}  // namespace

std::vector<uint8_t> SerializeCodecState(const CodecState& state) {
  std::vector<uint8_t> out;
  out.reserve(16 + state.spec.size() + state.residual.size() * 4);
  ByteWriter w(&out);
  w.U32(kMagic);
  w.U32(kVersion);
  w.U32(static_cast<uint32_t>(state.spec.size()));
  w.Raw(state.spec.data(), state.spec.size());
  w.U32(static_cast<uint32_t>(state.residual.size()));
  w.Raw(state.residual.data(), state.residual.size() * 4);
  return out;
}

Result<CodecState> ParseCodecState(std::span<const uint8_t> bytes, size_t max_floats) {
  ByteReader r(bytes);
  uint32_t magic = 0, version = 0, spec_len = 0, count = 0;
  if (!r.U32(&magic) || magic != kMagic)
    return Status::Corruption("codec state: not a codec state file (bad magic)");
  if (!r.U32(&version) || version != kVersion)
    return Status::Corruption("codec state: version " + std::to_string(version) +
                              " is not the supported " + std::to_string(kVersion));
  if (!r.U32(&spec_len)) return Status::Corruption("codec state: truncated before the spec");
  if (spec_len > kMaxSpecBytes)
    return Status::Corruption("codec state: spec of " + std::to_string(spec_len) +
                              " bytes exceeds the cap of " + std::to_string(kMaxSpecBytes));
  CodecState st;
  st.spec.resize(spec_len);
  if (!r.Raw(st.spec.data(), spec_len)) return Status::Corruption("codec state: truncated spec");
  if (!r.U32(&count)) return Status::Corruption("codec state: truncated before the count");
  if (count > max_floats)
    return Status::Corruption("codec state: " + std::to_string(count) +
                              " residual values exceed the cap of " + std::to_string(max_floats));
  if (r.remaining() != static_cast<size_t>(count) * 4)
    return Status::Corruption("codec state: " + std::to_string(count) + " values need " +
                              std::to_string(size_t{count} * 4) + " bytes, the file has " +
                              std::to_string(r.remaining()));
  st.residual.resize(count);
  r.Raw(st.residual.data(), size_t{count} * 4);
  for (size_t i = 0; i < st.residual.size(); ++i)
    if (!std::isfinite(st.residual[i]))
      return Status::Corruption("codec state: residual value " + std::to_string(i) +
                                " is non-finite");
  return st;
}

}  // namespace tributary
