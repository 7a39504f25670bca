#include "tributary/safetensors.h"

#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>

#include "core/file_util.h"

namespace tributary {
namespace {

void PutU64Le(std::vector<uint8_t>& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}

uint64_t GetU64Le(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

}  // namespace

std::vector<uint8_t> SerializeSafetensors(const ModelWeights& weights,
                                          const SafetensorsMetadata& metadata) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) {
    nlohmann::ordered_json meta = nlohmann::ordered_json::object();
    for (const auto& [k, v] : metadata) meta[k] = v;
    header["__metadata__"] = std::move(meta);
  }
  for (const TensorInfo& t : weights.tensors()) {
    header[t.name] = {
        {"dtype", "F32"},
        {"shape", t.shape},
        {"data_offsets", {t.offset * sizeof(float), (t.offset + t.numel) * sizeof(float)}}};
  }
  std::string text = header.dump();
  // Pad with spaces so the data starts 8-byte aligned, as the reference writer does.
  while ((8 + text.size()) % 8 != 0) text.push_back(' ');
  std::vector<uint8_t> out;
  out.reserve(8 + text.size() + weights.size_bytes());
  PutU64Le(out, text.size());
  out.insert(out.end(), text.begin(), text.end());
  const auto* p = reinterpret_cast<const uint8_t*>(weights.data().data());
  out.insert(out.end(), p, p + weights.size_bytes());  // little-endian hosts only (x86, ARM)
  return out;
}

Result<ModelWeights> ParseSafetensors(std::span<const uint8_t> bytes,
                                      SafetensorsMetadata* metadata) {
  if (bytes.size() < 8)
    return Status::Corruption("safetensors: " + std::to_string(bytes.size()) +
                              " bytes is too short for the 8-byte header length");
  const uint64_t header_len = GetU64Le(bytes.data());
  if (header_len > kMaxSafetensorsHeaderBytes)
    return Status::Corruption("safetensors: header length " + std::to_string(header_len) +
                              " exceeds the cap of " + std::to_string(kMaxSafetensorsHeaderBytes));
  if (header_len > bytes.size() - 8)
    return Status::Corruption("safetensors: header length " + std::to_string(header_len) +
                              " exceeds the " + std::to_string(bytes.size() - 8) +
                              " bytes present");
  const char* text = reinterpret_cast<const char*>(bytes.data() + 8);
  nlohmann::json header =
      nlohmann::json::parse(text, text + header_len, nullptr, /*allow_exceptions=*/false);
  if (header.is_discarded() || !header.is_object())
    return Status::Corruption("safetensors: header is not a JSON object");
  const uint64_t data_len = bytes.size() - 8 - header_len;
  const uint8_t* data = bytes.data() + 8 + header_len;

  struct Entry {
    std::string name;
    std::vector<int64_t> shape;
    uint64_t begin, end;
  };
  std::vector<Entry> entries;
  for (auto it = header.begin(); it != header.end(); ++it) {
    const std::string& name = it.key();
    const nlohmann::json& v = it.value();
    if (name == "__metadata__") {
      if (!v.is_object()) return Status::Corruption("safetensors: __metadata__ is not an object");
      for (auto m = v.begin(); m != v.end(); ++m) {
        if (!m.value().is_string())
          return Status::Corruption("safetensors: metadata value for '" + m.key() +
                                    "' is not a string");
        if (metadata) (*metadata)[m.key()] = m.value().get<std::string>();
      }
      continue;
    }
    auto bad = [&](const std::string& what) {
      return Status::Corruption("safetensors: tensor '" + name + "' " + what);
    };
    if (!v.is_object()) return bad("is not an object");
    auto dtype = v.find("dtype");
    auto shape = v.find("shape");
    auto offsets = v.find("data_offsets");
    if (dtype == v.end() || shape == v.end() || offsets == v.end())
      return bad("lacks dtype, shape or data_offsets");
    if (!dtype->is_string()) return bad("has a non-string dtype");
    if (*dtype != "F32")
      return bad("has dtype " + dtype->get<std::string>() + "; only F32 is supported");
    if (!shape->is_array() || shape->size() > 16) return bad("has a malformed shape");
    if (!offsets->is_array() || offsets->size() != 2 || !(*offsets)[0].is_number_unsigned() ||
        !(*offsets)[1].is_number_unsigned())
      return bad("has malformed data_offsets");
    Entry e{name, {}, (*offsets)[0].get<uint64_t>(), (*offsets)[1].get<uint64_t>()};
    uint64_t numel = 1;
    for (const auto& d : *shape) {
      if (!d.is_number_unsigned()) return bad("has a non-integer or negative dimension");
      uint64_t dim = d.get<uint64_t>();
      if (dim != 0 && numel > data_len / dim) return bad("has a shape larger than the data");
      numel *= dim;
      e.shape.push_back(static_cast<int64_t>(dim));
    }
    if (e.begin > e.end || e.end > data_len) return bad("has data_offsets outside the data");
    if (e.end - e.begin != numel * sizeof(float))
      return bad("has " + std::to_string(e.end - e.begin) + " data bytes but its shape needs " +
                 std::to_string(numel * sizeof(float)));
    entries.push_back(std::move(e));
  }
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  uint64_t cursor = 0;
  for (const Entry& e : entries) {
    if (e.begin != cursor)
      return Status::Corruption(
          "safetensors: tensor '" + e.name + "' " +
          (e.begin < cursor ? "overlaps the previous tensor" : "leaves a gap before it"));
    cursor = e.end;
  }
  if (cursor != data_len)
    return Status::Corruption("safetensors: tensors cover " + std::to_string(cursor) + " of " +
                              std::to_string(data_len) + " data bytes");
  ModelWeights::LayoutSpec spec;
  spec.reserve(entries.size());
  for (const Entry& e : entries) spec.emplace_back(e.name, e.shape);
  TRIB_ASSIGN_OR_RETURN(ModelWeights w, ModelWeights::Create(spec));
  if (w.size_bytes() != data_len) return Status::Internal("safetensors: layout size mismatch");
  if (data_len) std::memcpy(w.data().data(), data, data_len);
  return w;
}

Status SaveSafetensors(const ModelWeights& weights, const std::string& path,
                       const SafetensorsMetadata& metadata) {
  std::vector<uint8_t> bytes = SerializeSafetensors(weights, metadata);
  return WriteFileAtomic(path, bytes);
}

Result<ModelWeights> LoadSafetensors(const std::string& path, SafetensorsMetadata* metadata) {
  TRIB_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, ReadFileBytes(path, uint64_t{1} << 40));
  Result<ModelWeights> w = ParseSafetensors(bytes, metadata);
  if (!w.ok()) return w.status().WithContext(path);
  return w;
}

}  // namespace tributary
