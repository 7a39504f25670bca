#include "train/model_file.h"

#include "train/model_split.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>
#include <span>
#include <vector>

#include "core/config.h"
#include "core/config_schema.h"
#include "core/file_util.h"

namespace tributary {
namespace {

// Bounds on what a file may ask for, far above anything the native engine trains in reasonable
// time, so a typo fails here instead of asking for terabytes. With an input of at most 2^31 values
// and 1024 layers of padding at most 1024, every shape product LayerOutputShapes forms stays below
// 2^63.
constexpr int64_t kMaxSize = int64_t{1} << 20;    // units, filters, classes, an input dimension
constexpr int64_t kMaxWindow = 1024;              // kernel, padding, pooling size
constexpr int64_t kMaxValues = int64_t{1} << 31;  // per example, in the input and out of a layer
constexpr int64_t kMaxParameters = int64_t{1} << 32;
constexpr size_t kMaxNameBytes = 128;

// The lowercase type a file writes: "dense", "conv2d", "maxpool2d", "relu", "flatten".
std::string TypeName(LayerKind kind) {
  std::string s(LayerKindName(kind));
  for (char& c : s)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return s;
}

constexpr LayerKind kKinds[] = {LayerKind::kDense,     LayerKind::kConv2D,
                                LayerKind::kMaxPool2D, LayerKind::kReLU,
                                LayerKind::kFlatten,   LayerKind::kSigmoid,
                                LayerKind::kTanh,      LayerKind::kGelu,
                                LayerKind::kAvgPool2D, LayerKind::kGlobalAvgPool,
                                LayerKind::kGroupNorm, LayerKind::kLayerNorm,
                                LayerKind::kConv1D,    LayerKind::kDepthwiseConv2D,
                                LayerKind::kEmbedding, LayerKind::kLstm,
                                LayerKind::kGru,       LayerKind::kDropout,
                                LayerKind::kAdd};

// Every type a file may write, in kKinds' order: "dense, conv2d, ... and embedding" (`last_joiner`
// "and" or "or").
std::string TypeList(std::string_view last_joiner) {
  std::string out;
  for (size_t i = 0; i < std::size(kKinds); ++i) {
    if (i > 0) out += i + 1 == std::size(kKinds) ? fmt::format(" {} ", last_joiner) : ", ";
    out += TypeName(kKinds[i]);
  }
  return out;
}

std::optional<LayerKind> KindOf(std::string_view type) {
  std::string lower(type);
  for (char& c : lower)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  for (LayerKind k : kKinds)
    if (TypeName(k) == lower) return k;
  return std::nullopt;
}

// The keys a layer of `kind` takes.
std::span<const std::string_view> KeysOf(LayerKind kind) {
  static constexpr std::string_view kDense[] = {"type", "units", "name", "frozen"};
  static constexpr std::string_view kConv[] = {"type",    "filters", "kernel",
                                               "padding", "name",    "frozen"};
  static constexpr std::string_view kDepthwise[] = {"type", "kernel", "padding", "name", "frozen"};
  static constexpr std::string_view kPool[] = {"type", "size"};
  static constexpr std::string_view kBare[] = {"type"};
  static constexpr std::string_view kGroupNorm[] = {"type", "groups", "name", "frozen"};
  static constexpr std::string_view kLayerNorm[] = {"type", "name", "frozen"};
  static constexpr std::string_view kEmbedding[] = {"type", "vocab", "dim",
                                                    "pad",  "name",  "frozen"};
  static constexpr std::string_view kRecurrent[] = {"type", "units", "return_sequences", "name",
                                                    "frozen"};
  static constexpr std::string_view kDropout[] = {"type", "rate"};
  static constexpr std::string_view kAdd[] = {"type", "from"};
  switch (kind) {
    case LayerKind::kDense:
      return kDense;
    case LayerKind::kConv2D:
    case LayerKind::kConv1D:
      return kConv;
    case LayerKind::kDepthwiseConv2D:
      return kDepthwise;
    case LayerKind::kMaxPool2D:
    case LayerKind::kAvgPool2D:
      return kPool;
    case LayerKind::kGroupNorm:
      return kGroupNorm;
    case LayerKind::kLayerNorm:
      return kLayerNorm;
    case LayerKind::kEmbedding:
      return kEmbedding;
    case LayerKind::kLstm:
    case LayerKind::kGru:
      return kRecurrent;
    case LayerKind::kDropout:
      return kDropout;
    case LayerKind::kAdd:
      return kAdd;
    case LayerKind::kReLU:
    case LayerKind::kFlatten:
    case LayerKind::kSigmoid:
    case LayerKind::kTanh:
    case LayerKind::kGelu:
    case LayerKind::kGlobalAvgPool:
      break;
  }
  return kBare;
}

// An unnamed layer's name is this and its number among the layers of the same prefix: fc1, conv1
// (conv2d, conv1d and depthwiseconv2d count together), norm1, embed1, lstm1, gru1.
std::string_view DefaultNamePrefix(LayerKind kind) {
  if (kind == LayerKind::kDense) return "fc";
  if (IsConv(kind) || kind == LayerKind::kDepthwiseConv2D) return "conv";
  if (kind == LayerKind::kEmbedding) return "embed";
  if (kind == LayerKind::kLstm) return "lstm";
  if (kind == LayerKind::kGru) return "gru";
  return "norm";
}

// "a, b and c".
std::string ListText(std::span<const std::string_view> items) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += i + 1 == items.size() ? " and " : ", ";
    out += items[i];
  }
  return out;
}

// InvalidArgument "source:line: what", without the line when `at` has none.
Status Bad(const std::string& source, const toml::node* at, std::string_view what) {
  const auto line = at ? at->source().begin.line : 0;
  if (line > 0) return Status::InvalidArgument(fmt::format("{}:{}: {}", source, line, what));
  return Status::InvalidArgument(fmt::format("{}: {}", source, what));
}

// The integer at `key` of `table` in [lo, hi]; nullopt when absent. `owner` ("layer 2 (Dense)")
// leads the error, when not empty.
Result<std::optional<int64_t>> ReadInt(const std::string& source, const toml::table& table,
                                       std::string_view key, int64_t lo, int64_t hi,
                                       const std::string& owner) {
  const toml::node* n = table.get(key);
  if (!n) return std::optional<int64_t>();
  const std::string lead = owner.empty() ? "" : owner + ": ";
  std::optional<int64_t> v = n->value_exact<int64_t>();
  if (!v) return Bad(source, n, fmt::format("{}key '{}' must be an integer", lead, key));
  if (*v < lo && lo == 1)
    return Bad(source, n, fmt::format("{}key '{}' must be positive, not {}", lead, key, *v));
  if (*v < lo || *v > hi)
    return Bad(source, n,
               fmt::format("{}key '{}' = {} is out of range [{}, {}]", lead, key, *v, lo, hi));
  return v;
}

Result<int64_t> RequireInt(const std::string& source, const toml::table& table,
                           std::string_view key, int64_t lo, int64_t hi, const std::string& owner) {
  TRIB_ASSIGN_OR_RETURN(std::optional<int64_t> v, ReadInt(source, table, key, lo, hi, owner));
  if (!v) return Bad(source, &table, fmt::format("{}: missing key '{}'", owner, key));
  return *v;
}

bool IsPrintable(std::string_view s) {
  return !s.empty() && s.size() <= kMaxNameBytes &&
         std::all_of(s.begin(), s.end(), [](char c) { return c >= 0x20 && c <= 0x7e; });
}

// Whether `name` can prefix tensor names: letters, digits, '_', '-' and '.', not '.' at an end.
bool IsTensorPrefix(std::string_view name) {
  if (name.empty() || name.size() > kMaxNameBytes || name.front() == '.' || name.back() == '.')
    return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-' || c == '.';
  });
}

std::string InputText(const Shape3& s) {
  if (s.h == 1 && s.w == 1) return fmt::format("[{}]", s.c);
  return fmt::format("[{}, {}, {}]", s.h, s.w, s.c);
}

Result<Shape3> ReadInput(const std::string& source, const toml::node& n) {
  const toml::array* a = n.as_array();
  auto bad = [&] {
    return Bad(source, &n,
               fmt::format("key 'input' must be [features] or [height, width, channels], "
                           "positive integers up to {}",
                           kMaxSize));
  };
  if (!a || (a->size() != 1 && a->size() != 3)) return bad();
  int64_t d[3] = {1, 1, 1};
  for (size_t i = 0; i < a->size(); ++i) {
    std::optional<int64_t> v = (*a)[i].value_exact<int64_t>();
    if (!v || *v < 1 || *v > kMaxSize) return bad();
    d[i] = *v;
  }
  const Shape3 s = a->size() == 1 ? Shape3{1, 1, d[0]} : Shape3{d[0], d[1], d[2]};
  if (s.numel() > kMaxValues)
    return Bad(source, &n,
               fmt::format("key 'input' {} has {} values per example; at most {}", InputText(s),
                           s.numel(), kMaxValues));
  return s;
}

// One [[layers]] entry, without its default name. `last` lets a Dense layer leave out its units,
// which are then `classes`.
Result<LayerSpec> ReadLayer(const std::string& source, const toml::table& t, size_t index,
                            bool last, int classes) {
  std::string owner = "layer " + std::to_string(index);
  const toml::node* type_node = t.get("type");
  if (!type_node)
    return Bad(source, &t, fmt::format("{}: missing key 'type' ({})", owner, TypeList("or")));
  std::optional<std::string> type = type_node->value_exact<std::string>();
  if (!type) return Bad(source, type_node, owner + ": key 'type' must be a string");
  std::optional<LayerKind> kind = KindOf(*type);
  if (!kind)
    return Bad(
        source, type_node,
        fmt::format("{}: unknown type '{}' (the types are {})", owner, *type, TypeList("and")));
  owner += " (" + std::string(LayerKindName(*kind)) + ")";
  const std::span<const std::string_view> keys = KeysOf(*kind);
  for (const auto& [key, node] : t) {
    if (std::find(keys.begin(), keys.end(), key.str()) != keys.end()) continue;
    const std::string takes =
        keys.size() == 1 ? "only its type" : ListText(keys);  // relu and flatten: only `type`
    return Bad(source, &node,
               fmt::format("{}: unknown key '{}' (a {} layer takes {})", owner, key.str(),
                           TypeName(*kind), takes));
  }

  LayerSpec l;
  l.kind = *kind;
  switch (*kind) {
    case LayerKind::kDense: {
      TRIB_ASSIGN_OR_RETURN(std::optional<int64_t> units,
                            ReadInt(source, t, "units", 1, kMaxSize, owner));
      if (!units && !last)
        return Bad(source, &t,
                   owner +
                       ": missing key 'units' (only the last layer may leave it out, to produce "
                       "one logit per class)");
      l.out_features = units ? *units : classes;
      break;
    }
    case LayerKind::kConv2D:
    case LayerKind::kConv1D: {
      TRIB_ASSIGN_OR_RETURN(l.out_channels, RequireInt(source, t, "filters", 1, kMaxSize, owner));
      TRIB_ASSIGN_OR_RETURN(l.kernel, RequireInt(source, t, "kernel", 1, kMaxWindow, owner));
      TRIB_ASSIGN_OR_RETURN(std::optional<int64_t> padding,
                            ReadInt(source, t, "padding", 0, kMaxWindow, owner));
      l.padding = padding.value_or(0);
      break;
    }
    case LayerKind::kDepthwiseConv2D: {
      TRIB_ASSIGN_OR_RETURN(l.kernel, RequireInt(source, t, "kernel", 1, kMaxWindow, owner));
      TRIB_ASSIGN_OR_RETURN(std::optional<int64_t> padding,
                            ReadInt(source, t, "padding", 0, kMaxWindow, owner));
      l.padding = padding.value_or(0);
      break;
    }
    case LayerKind::kMaxPool2D:
    case LayerKind::kAvgPool2D: {
      TRIB_ASSIGN_OR_RETURN(l.kernel, RequireInt(source, t, "size", 1, kMaxWindow, owner));
      break;
    }
    case LayerKind::kGroupNorm: {
      TRIB_ASSIGN_OR_RETURN(l.groups, RequireInt(source, t, "groups", 1, kMaxValues, owner));
      break;
    }
    case LayerKind::kEmbedding: {
      // Token ids travel as float32, which holds every integer up to 2^24 exactly.
      TRIB_ASSIGN_OR_RETURN(l.vocab, RequireInt(source, t, "vocab", 1, int64_t{1} << 24, owner));
      TRIB_ASSIGN_OR_RETURN(l.out_features, RequireInt(source, t, "dim", 1, kMaxSize, owner));
      TRIB_ASSIGN_OR_RETURN(std::optional<int64_t> pad,
                            ReadInt(source, t, "pad", 0, (int64_t{1} << 24) - 1, owner));
      l.pad = pad.value_or(-1);
      break;
    }
    case LayerKind::kAdd: {
      // LayerOutputShapes checks that it names an earlier layer of the same shape.
      TRIB_ASSIGN_OR_RETURN(l.from, RequireInt(source, t, "from", 0,
                                               static_cast<int64_t>(kMaxModelLayers) - 1, owner));
      break;
    }
    case LayerKind::kDropout: {
      const toml::node* n = t.get("rate");
      if (n == nullptr) return Bad(source, &t, owner + ": missing key 'rate'");
      std::optional<double> rate = n->value<double>();
      if (!rate || !(*rate >= 0.0 && *rate < 1.0))
        return Bad(source, n, owner + ": key 'rate' must be a number in [0, 1)");
      l.rate = static_cast<float>(*rate);
      break;
    }
    case LayerKind::kLstm:
    case LayerKind::kGru: {
      TRIB_ASSIGN_OR_RETURN(l.out_features, RequireInt(source, t, "units", 1, kMaxSize, owner));
      if (const toml::node* n = t.get("return_sequences")) {
        std::optional<bool> all = n->value_exact<bool>();
        if (!all) return Bad(source, n, owner + ": key 'return_sequences' must be true or false");
        l.return_sequences = *all;
      }
      break;
    }
    case LayerKind::kReLU:
    case LayerKind::kFlatten:
    case LayerKind::kSigmoid:
    case LayerKind::kTanh:
    case LayerKind::kGelu:
    case LayerKind::kGlobalAvgPool:
    case LayerKind::kLayerNorm:
      break;
  }
  if (const toml::node* n = t.get("frozen")) {
    std::optional<bool> frozen = n->value_exact<bool>();
    if (!frozen) return Bad(source, n, owner + ": key 'frozen' must be true or false");
    l.frozen = *frozen;
  }
  if (const toml::node* n = t.get("name")) {
    std::optional<std::string> name = n->value_exact<std::string>();
    if (!name) return Bad(source, n, owner + ": key 'name' must be a string");
    if (!IsTensorPrefix(*name))
      return Bad(source, n,
                 fmt::format("{}: name '{}' must be 1 to {} letters, digits, '_', '-' or '.', "
                             "without a '.' at either end",
                             owner, *name, kMaxNameBytes));
    l.name = *name;
  }
  return l;
}

// The model's name when the file gives none: the stem of its path ("models/logreg.toml": logreg).
std::string DefaultName(const std::string& source) {
  const std::string stem = std::filesystem::path(source).stem().string();
  return IsPrintable(stem) ? stem : "model";
}

// Fails when a layer's output or the parameter count is beyond the bounds above.
Status CheckSizes(const std::string& source, const ModelSpec& spec,
                  const std::vector<Shape3>& shapes) {
  // In double: a conv2d after a flatten can ask for more than 2^63 parameters, and the bound is
  // all that matters here.
  double params = 0;
  Shape3 in = spec.input;
  for (size_t i = 0; i < spec.layers.size(); ++i) {
    const LayerSpec& l = spec.layers[i];
    const Shape3& out = shapes[i];
    if (out.numel() > kMaxValues)
      return Bad(source, nullptr,
                 fmt::format("layer {} ({}) outputs {} values per example; at most {}", i,
                             LayerKindName(l.kind), out.numel(), kMaxValues));
    if (l.kind == LayerKind::kDense)
      params += static_cast<double>(l.out_features) * static_cast<double>(in.numel() + 1);
    if (IsConv(l.kind))  // taps fit int64: kernel <= 2^10, w and c <= 2^20 (or kMaxValues) each
      params +=
          static_cast<double>(l.out_channels) * (static_cast<double>(ConvTapsOf(l, in).taps()) + 1);
    if (IsNorm(l.kind)) params += 2.0 * static_cast<double>(in.c);
    if (l.kind == LayerKind::kDepthwiseConv2D)
      params += static_cast<double>(in.c) * (static_cast<double>(l.kernel * l.kernel) + 1);
    if (l.kind == LayerKind::kEmbedding)
      params += static_cast<double>(l.vocab) * static_cast<double>(l.out_features);
    if (IsRecurrent(l.kind))
      params += static_cast<double>(GatesPerUnit(l.kind)) * static_cast<double>(l.out_features) *
                (static_cast<double>(in.w) * static_cast<double>(in.c) +
                 static_cast<double>(l.out_features) + 2.0);
    if (params > static_cast<double>(kMaxParameters))
      return Bad(source, nullptr,
                 fmt::format("the model has over {} parameters by layer {} ({})", kMaxParameters, i,
                             LayerKindName(l.kind)));
    in = out;
  }
  return Status::Ok();
}

}  // namespace

Result<ModelSpec> ParseModelToml(std::string_view text, std::string_view source_name,
                                 Shape3 default_input, int default_classes) {
  const std::string source(source_name);
  if (text.size() > kMaxModelFileBytes)
    return Status::OutOfRange(fmt::format("{}: a model file is at most {} bytes, not {}", source,
                                          kMaxModelFileBytes, text.size()));
  TRIB_ASSIGN_OR_RETURN(Config doc, Config::Parse(text, source));
  const toml::table& top = doc.table();
  for (const auto& [key, node] : top) {
    const std::string_view k = key.str();
    if (k != "name" && k != "input" && k != "classes" && k != "cut" && k != "loss" && k != "layers")
      return Bad(source, &node,
                 fmt::format("unknown key '{}' (a model file has name, input, classes, cut, loss "
                             "and layers)",
                             k));
  }

  ModelSpec spec;
  spec.name = DefaultName(source);
  if (const toml::node* n = top.get("name")) {
    std::optional<std::string> name = n->value_exact<std::string>();
    if (!name || !IsPrintable(*name))
      return Bad(source, n,
                 fmt::format("key 'name' must be a string of 1 to {} printable characters",
                             kMaxNameBytes));
    spec.name = *name;
  }
  spec.input = default_input;
  if (const toml::node* n = top.get("input")) {
    TRIB_ASSIGN_OR_RETURN(spec.input, ReadInput(source, *n));
  }
  spec.num_classes = default_classes;
  TRIB_ASSIGN_OR_RETURN(std::optional<int64_t> classes,
                        ReadInt(source, top, "classes", 1, kMaxSize, ""));
  if (classes) spec.num_classes = static_cast<int>(*classes);

  const toml::node* layers_node = top.get("layers");
  if (!layers_node) return Bad(source, nullptr, "missing key 'layers' (the model's [[layers]])");
  const toml::array* layers = layers_node->as_array();
  if (!layers || layers->empty())
    return Bad(source, layers_node,
               "key 'layers' must be a non-empty array of tables ([[layers]])");
  if (layers->size() > kMaxModelLayers)
    return Bad(source, layers_node,
               fmt::format("the model has {} layers; at most {}", layers->size(), kMaxModelLayers));

  std::map<std::string, size_t, std::less<>> owner_of;  // tensor prefix -> layer index
  std::map<std::string_view, int64_t> numbered;  // unnamed layers so far, by DefaultNamePrefix
  for (size_t i = 0; i < layers->size(); ++i) {
    const toml::node& node = (*layers)[i];
    const toml::table* t = node.as_table();
    if (!t)
      return Bad(source, &node,
                 fmt::format("layer {} must be a table ([[layers]] or {{ type = ... }})", i));
    TRIB_ASSIGN_OR_RETURN(LayerSpec l,
                          ReadLayer(source, *t, i, i + 1 == layers->size(), spec.num_classes));
    if (ParameterTensorCount(l.kind) > 0) {
      const std::string_view prefix = DefaultNamePrefix(l.kind);
      const int64_t nth = ++numbered[prefix];
      const bool named = !l.name.empty();
      if (!named) l.name = std::string(prefix) + std::to_string(nth);
      auto [it, inserted] = owner_of.emplace(l.name, i);
      if (!inserted)
        return Bad(source, t,
                   fmt::format("layer {} ({}): {} '{}' is already layer {}'s (tensor names must "
                               "differ)",
                               i, LayerKindName(l.kind), named ? "name" : "its default name",
                               l.name, it->second));
    }
    spec.layers.push_back(std::move(l));
  }

  Result<std::vector<Shape3>> shapes = LayerOutputShapes(spec);
  if (!shapes.ok()) {
    // LayerOutputShapes leads with "model NAME: "; here the file names the model.
    std::string msg = shapes.status().message();
    const std::string lead = "model " + spec.name + ": ";
    if (msg.starts_with(lead)) msg.erase(0, lead.size());
    return Bad(source, nullptr, msg);
  }
  TRIB_RETURN_IF_ERROR(CheckSizes(source, spec, *shapes));
  if (const toml::node* n = top.get("loss")) {
    std::optional<std::string> loss = n->value_exact<std::string>();
    std::optional<LossKind> kind = loss ? LossKindOf(*loss) : std::nullopt;
    if (!kind)
      return Bad(source, n,
                 "key 'loss' must be \"cross_entropy\" (softmax cross-entropy, the default), "
                 "\"mse\" (mean squared error) or \"bce\" (binary cross-entropy), each against "
                 "the one-hot label");
    spec.loss = *kind;
  }
  TRIB_ASSIGN_OR_RETURN(std::optional<int64_t> cut, ReadInt(source, top, "cut", 1, kMaxSize, ""));
  if (cut) {
    spec.cut = *cut;
    Result<SplitModel> split = CutModel(spec, static_cast<size_t>(*cut));
    if (!split.ok()) {
      std::string msg = split.status().message();
      const std::string lead = "model " + spec.name + ": ";
      if (msg.starts_with(lead)) msg.erase(0, lead.size());
      return Bad(source, top.get("cut"), msg);
    }
  }
  return spec;
}

Result<ModelSpec> LoadModelFile(const std::string& path, Shape3 default_input,
                                int default_classes) {
  Result<std::vector<uint8_t>> bytes = ReadFileBytes(path, kMaxModelFileBytes);
  if (!bytes.ok()) return bytes.status().WithContext("model file");
  return ParseModelToml(
      std::string_view(reinterpret_cast<const char*>(bytes->data()), bytes->size()), path,
      default_input, default_classes);
}

bool IsModelFilePath(std::string_view model) {
  return model.find('/') != std::string_view::npos || model.ends_with(".toml");
}

Result<ModelSpec> ResolveModelSpec(std::string_view model, Shape3 data_shape, int data_classes) {
  if (!IsModelFilePath(model)) {
    const std::vector<std::string> names = ModelNames();
    if (std::find(names.begin(), names.end(), model) == names.end()) {
      std::string known;
      for (const std::string& n : names) known += (known.empty() ? "" : ", ") + n;
      return Status::InvalidArgument(
          fmt::format("unknown model '{}': give a built-in model ({}) or a model file (a path "
                      "ending in .toml; docs/models.md)",
                      model, known));
    }
    return ModelSpecByName(model, data_shape, data_classes);
  }
  const std::string path(model);
  TRIB_ASSIGN_OR_RETURN(ModelSpec spec, LoadModelFile(path, data_shape, data_classes));
  TRIB_RETURN_IF_ERROR(CheckModelFitsData(spec, path, data_shape, data_classes));
  return spec;
}

Result<ModelSpec> ResolveModelText(std::string_view text, std::string_view source_name,
                                   Shape3 data_shape, int data_classes) {
  if (text.size() > kMaxModelFileBytes)
    return Status::OutOfRange(fmt::format("{}: the model file's text is {} bytes; the cap is {}",
                                          source_name, text.size(), kMaxModelFileBytes));
  TRIB_ASSIGN_OR_RETURN(ModelSpec spec,
                        ParseModelToml(text, source_name, data_shape, data_classes));
  TRIB_RETURN_IF_ERROR(CheckModelFitsData(spec, source_name, data_shape, data_classes));
  return spec;
}

Status CheckModelFitsData(const ModelSpec& spec, std::string_view source_name, Shape3 data_shape,
                          int data_classes) {
  // A flat input takes the data as the engine holds it: height * width * channels values.
  const bool flat_fits =
      spec.input.h == 1 && spec.input.w == 1 && spec.input.c == data_shape.numel();
  if (spec.input != data_shape && !flat_fits)
    return Status::InvalidArgument(
        fmt::format("{}: model '{}' takes input {}, but the data's examples are {}", source_name,
                    spec.name, InputText(spec.input), InputText(data_shape)));
  if (spec.num_classes != data_classes)
    return Status::InvalidArgument(fmt::format("{}: model '{}' has {} classes, but the data has {}",
                                               source_name, spec.name, spec.num_classes,
                                               data_classes));
  return Status::Ok();
}

std::optional<LossKind> LossKindOf(std::string_view name) {
  if (name == "cross_entropy") return LossKind::kSoftmaxCrossEntropy;
  if (name == "mse") return LossKind::kMeanSquaredError;
  if (name == "bce") return LossKind::kBinaryCrossEntropy;
  return std::nullopt;
}

std::string_view LossKindName(LossKind kind) {
  switch (kind) {
    case LossKind::kSoftmaxCrossEntropy:
      return "cross_entropy";
    case LossKind::kMeanSquaredError:
      return "mse";
    case LossKind::kBinaryCrossEntropy:
      return "bce";
  }
  return "?";
}

std::string ModelSpecToToml(const ModelSpec& spec) {
  std::string out =
      "# A model for Tributary's native engine (docs/models.md); its tensors are named\n"
      "# \"<name>.weight\" and \"<name>.bias\". Leave out input and classes to take the data's.\n";
  out += "name = " + TomlString(spec.name) + "\n";
  out += "input = " + InputText(spec.input) + "\n";
  out += fmt::format("classes = {}\n", spec.num_classes);
  if (spec.cut != 0) out += fmt::format("cut = {}\n", spec.cut);
  if (spec.loss != LossKind::kSoftmaxCrossEntropy)
    out += fmt::format("loss = \"{}\"\n", LossKindName(spec.loss));
  for (const LayerSpec& l : spec.layers) {
    out += fmt::format("\n[[layers]]\ntype = \"{}\"\n", TypeName(l.kind));
    if (l.frozen) out += "frozen = true\n";
    switch (l.kind) {
      case LayerKind::kDense:
        out += fmt::format("units = {}\nname = {}\n", l.out_features, TomlString(l.name));
        break;
      case LayerKind::kConv2D:
      case LayerKind::kConv1D:
        out += fmt::format("filters = {}\nkernel = {}\npadding = {}\nname = {}\n", l.out_channels,
                           l.kernel, l.padding, TomlString(l.name));
        break;
      case LayerKind::kDepthwiseConv2D:
        out += fmt::format("kernel = {}\npadding = {}\nname = {}\n", l.kernel, l.padding,
                           TomlString(l.name));
        break;
      case LayerKind::kMaxPool2D:
      case LayerKind::kAvgPool2D:
        out += fmt::format("size = {}\n", l.kernel);
        break;
      case LayerKind::kGroupNorm:
        out += fmt::format("groups = {}\nname = {}\n", l.groups, TomlString(l.name));
        break;
      case LayerKind::kLayerNorm:
        out += fmt::format("name = {}\n", TomlString(l.name));
        break;
      case LayerKind::kEmbedding:
        out += fmt::format("vocab = {}\ndim = {}\nname = {}\n", l.vocab, l.out_features,
                           TomlString(l.name));
        if (l.pad >= 0) out += fmt::format("pad = {}\n", l.pad);
        break;
      case LayerKind::kLstm:
      case LayerKind::kGru:
        out += fmt::format("units = {}\nreturn_sequences = {}\nname = {}\n", l.out_features,
                           l.return_sequences, TomlString(l.name));
        break;
      case LayerKind::kDropout:
        out += fmt::format("rate = {}\n", l.rate);
        break;
      case LayerKind::kAdd:
        out += fmt::format("from = {}\n", l.from);
        break;
      case LayerKind::kReLU:
      case LayerKind::kFlatten:
      case LayerKind::kSigmoid:
      case LayerKind::kTanh:
      case LayerKind::kGelu:
      case LayerKind::kGlobalAvgPool:
        break;
    }
  }
  return out;
}

}  // namespace tributary
