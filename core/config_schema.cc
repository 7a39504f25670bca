#include "core/config_schema.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <optional>

#include "core/check.h"
#include "core/parse_number.h"

namespace tributary {
namespace {

using Type = ConfigSchema::Type;

const char* TypeName(Type t) {
  switch (t) {
    case Type::kString:
      return "a string";
    case Type::kInteger:
      return "an integer";
    case Type::kNumber:
      return "a number";
    case Type::kBool:
      return "true or false";
    case Type::kSeconds:
      return "a number of seconds";
  }
  return "a value";
}

// Shortest text that reads back as the same value, always with a '.' or an exponent so TOML reads
// it as a float.
template <class F>
std::string FloatText(F v) {
  std::string s = fmt::format("{}", v);
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
  return s;
}

Status WrongType(const std::string& where, std::string_view name, Type t, std::string_view text) {
  if (text.empty())
    return Status::InvalidArgument(
        fmt::format("{}: key '{}' must be {}", where, name, TypeName(t)));
  return Status::InvalidArgument(
      fmt::format("{}: key '{}' must be {}, not '{}'", where, name, TypeName(t), text));
}

// A --set value or an API's key=value text: locale-independent, so that "0.05" is a number in an
// app that set a decimal-comma LC_NUMERIC (as strtod, used here before, was not).
std::optional<int64_t> ParseInt(std::string_view text) { return ParseWhole<int64_t>(text); }

std::optional<double> ParseNumber(std::string_view text) { return ParseWhole<double>(text); }

std::optional<int64_t> TomlInt(const toml::node& n) {
  if (auto v = n.value_exact<int64_t>()) return *v;
  return std::nullopt;
}

std::optional<double> TomlNumber(const toml::node& n) {
  if (!n.is_floating_point() && !n.is_integer()) return std::nullopt;
  const double v = *n.value<double>();
  if (!std::isfinite(v)) return std::nullopt;
  return v;
}

// Walks a TOML table, calling fn(dotted path, node) for every value that is not a table.
template <class Fn>
Status Walk(const toml::table& t, const std::string& prefix, Fn&& fn) {
  for (const auto& [k, node] : t) {
    const std::string path =
        prefix.empty() ? std::string(k.str()) : prefix + "." + std::string(k.str());
    if (const toml::table* sub = node.as_table()) {
      TRIB_RETURN_IF_ERROR(Walk(*sub, path, fn));
    } else {
      TRIB_RETURN_IF_ERROR(fn(path, node));
    }
  }
  return Status::Ok();
}

}  // namespace

std::string TomlString(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20)
          out += fmt::format("\\u{:04x}", static_cast<unsigned>(c));
        else
          out += c;
    }
  }
  return out + "\"";
}

std::string ResolveConfigPath(std::string_view base_dir, std::string_view path) {
  const std::filesystem::path p(path);
  if (path.empty() || base_dir.empty() || p.is_absolute()) return std::string(path);
  return (std::filesystem::path(base_dir) / p).lexically_normal().string();
}

ConfigSchema::Key& ConfigSchema::Key::Path(bool (*is_path)(std::string_view)) {
  TRIB_CHECK(type_ == Type::kString && string_field_ != nullptr, "a path key must be a string");
  path_ = true;
  is_path_ = is_path;
  return *this;
}

bool ConfigSchema::Key::IsPathValue(std::string_view value) const {
  return path_ && !value.empty() && (is_path_ == nullptr || is_path_(value));
}

std::string ConfigSchema::Key::recorded_text() const {
  std::string text = get_();
  // Not the default: a schema bound to a copy of the loaded values (as the programs record them)
  // has those values as its defaults.
  if (secret_ && text != "\"\"" && text != "0") return TomlString("<redacted>");
  return text;
}

ConfigSchema::Key& ConfigSchema::Add(std::string name, Type type, std::string help) {
  TRIB_CHECK(!by_name_.count(name), "config key bound twice");
  auto key = std::make_unique<Key>();
  key->name_ = std::move(name);
  key->type_ = type;
  key->help_ = std::move(help);
  Key* k = key.get();
  keys_.push_back(std::move(key));
  by_name_[k->name_] = k;
  return *k;
}

ConfigSchema::Key& ConfigSchema::Bind(std::string name, std::string* field, std::string help) {
  Key& k = Add(std::move(name), Type::kString, std::move(help));
  k.from_toml_ = [field, &k](const toml::node& n, const std::string& where) -> Status {
    auto v = n.value_exact<std::string>();
    if (!v) return WrongType(where, k.name_, k.type_, "");
    *field = *v;
    return Status::Ok();
  };
  k.from_text_ = [field](std::string_view text, const std::string&) {
    *field = std::string(text);
    return Status::Ok();
  };
  k.get_ = [field] { return TomlString(*field); };
  k.default_text_ = k.get_();
  k.string_field_ = field;
  return k;
}

namespace {

// An integer field of type T in [lo, hi].
template <class T>
void BindInteger(T* field, const std::string& name, Type type, int64_t lo, int64_t hi,
                 std::function<Status(const toml::node&, const std::string&)>& from_toml,
                 std::function<Status(std::string_view, const std::string&)>& from_text,
                 std::function<std::string()>& get) {
  auto store = [field, name, lo, hi](int64_t v, const std::string& where) -> Status {
    if (v < lo || v > hi)
      return Status::InvalidArgument(
          fmt::format("{}: key '{}' = {} is out of range [{}, {}]", where, name, v, lo, hi));
    *field = static_cast<T>(v);
    return Status::Ok();
  };
  from_toml = [store, name, type](const toml::node& n, const std::string& where) -> Status {
    std::optional<int64_t> v = TomlInt(n);
    if (!v) return WrongType(where, name, type, "");
    return store(*v, where);
  };
  from_text = [store, name, type](std::string_view text, const std::string& where) -> Status {
    std::optional<int64_t> v = ParseInt(text);
    if (!v) return WrongType(where, name, type, text);
    return store(*v, where);
  };
  get = [field] { return std::to_string(*field); };
}

}  // namespace

ConfigSchema::Key& ConfigSchema::Bind(std::string name, int64_t* field, std::string help) {
  Key& k = Add(std::move(name), Type::kInteger, std::move(help));
  BindInteger(field, k.name_, k.type_, std::numeric_limits<int64_t>::min(),
              std::numeric_limits<int64_t>::max(), k.from_toml_, k.from_text_, k.get_);
  k.default_text_ = k.get_();
  return k;
}

ConfigSchema::Key& ConfigSchema::Bind(std::string name, int* field, std::string help) {
  Key& k = Add(std::move(name), Type::kInteger, std::move(help));
  BindInteger(field, k.name_, k.type_, std::numeric_limits<int>::min(),
              std::numeric_limits<int>::max(), k.from_toml_, k.from_text_, k.get_);
  k.default_text_ = k.get_();
  return k;
}

ConfigSchema::Key& ConfigSchema::Bind(std::string name, uint64_t* field, std::string help) {
  // TOML integers are signed 64-bit, so the largest value a file can hold is INT64_MAX.
  Key& k = Add(std::move(name), Type::kInteger, std::move(help));
  BindInteger(field, k.name_, k.type_, 0, std::numeric_limits<int64_t>::max(), k.from_toml_,
              k.from_text_, k.get_);
  k.default_text_ = k.get_();
  return k;
}

namespace {

template <class F>
void BindFloat(F* field, const std::string& name, Type type,
               std::function<Status(const toml::node&, const std::string&)>& from_toml,
               std::function<Status(std::string_view, const std::string&)>& from_text,
               std::function<std::string()>& get) {
  from_toml = [field, name, type](const toml::node& n, const std::string& where) -> Status {
    std::optional<double> v = TomlNumber(n);
    if (!v) return WrongType(where, name, type, "");
    *field = static_cast<F>(*v);
    return Status::Ok();
  };
  from_text = [field, name, type](std::string_view text, const std::string& where) -> Status {
    std::optional<double> v = ParseNumber(text);
    if (!v) return WrongType(where, name, type, text);
    *field = static_cast<F>(*v);
    return Status::Ok();
  };
  get = [field] { return FloatText(*field); };
}

}  // namespace

ConfigSchema::Key& ConfigSchema::Bind(std::string name, double* field, std::string help) {
  Key& k = Add(std::move(name), Type::kNumber, std::move(help));
  BindFloat(field, k.name_, k.type_, k.from_toml_, k.from_text_, k.get_);
  k.default_text_ = k.get_();
  return k;
}

ConfigSchema::Key& ConfigSchema::Bind(std::string name, float* field, std::string help) {
  Key& k = Add(std::move(name), Type::kNumber, std::move(help));
  BindFloat(field, k.name_, k.type_, k.from_toml_, k.from_text_, k.get_);
  k.default_text_ = k.get_();
  return k;
}

ConfigSchema::Key& ConfigSchema::Bind(std::string name, bool* field, std::string help) {
  Key& k = Add(std::move(name), Type::kBool, std::move(help));
  k.from_toml_ = [field, &k](const toml::node& n, const std::string& where) -> Status {
    auto v = n.value_exact<bool>();
    if (!v) return WrongType(where, k.name_, k.type_, "");
    *field = *v;
    return Status::Ok();
  };
  k.from_text_ = [field, &k](std::string_view text, const std::string& where) -> Status {
    if (text != "true" && text != "false") return WrongType(where, k.name_, k.type_, text);
    *field = text == "true";
    return Status::Ok();
  };
  k.get_ = [field] { return std::string(*field ? "true" : "false"); };
  k.default_text_ = k.get_();
  return k;
}

ConfigSchema::Key& ConfigSchema::Bind(std::string name, std::chrono::milliseconds* field,
                                      std::string help) {
  Key& k = Add(std::move(name), Type::kSeconds, std::move(help));
  auto store = [field, &k](double s, const std::string& where) -> Status {
    if (s < 0 || s > 1e9)
      return Status::InvalidArgument(fmt::format(
          "{}: key '{}' = {} must be a number of seconds in [0, 1e9]", where, k.name_, s));
    *field = std::chrono::milliseconds(std::llround(s * 1000.0));
    return Status::Ok();
  };
  k.from_toml_ = [store, &k](const toml::node& n, const std::string& where) -> Status {
    std::optional<double> v = TomlNumber(n);
    if (!v) return WrongType(where, k.name_, k.type_, "");
    return store(*v, where);
  };
  k.from_text_ = [store, &k](std::string_view text, const std::string& where) -> Status {
    std::optional<double> v = ParseNumber(text);
    if (!v) return WrongType(where, k.name_, k.type_, text);
    return store(*v, where);
  };
  k.get_ = [field] { return FloatText(static_cast<double>(field->count()) / 1000.0); };
  k.default_text_ = k.get_();
  return k;
}

void ConfigSchema::Refuse(std::string_view name, std::string why) {
  auto it = by_name_.find(name);
  TRIB_CHECK(it != by_name_.end(), "refusing a config key that is not bound");
  it->second->refusal_ = std::move(why);
}

void ConfigSchema::SetFlag(std::string_view name, std::string flag) {
  auto it = by_name_.find(name);
  TRIB_CHECK(it != by_name_.end(), "a flag for a config key that is not bound");
  it->second->flag_ = std::move(flag);
}

void ConfigSchema::Rename(std::string old_name, std::string new_name) {
  renamed_[std::move(old_name)] = std::move(new_name);
}

Status ConfigSchema::Reject(const Key& key, const std::string& where) const {
  return Status::InvalidArgument(
      fmt::format("{}: key '{}' is not used by {}: {}", where, key.name_, program_, key.refusal_));
}

Status ConfigSchema::Load(const Config& cfg) {
  const std::string& where = cfg.source();
  return Walk(cfg.table(), "", [&](const std::string& path, const toml::node& node) -> Status {
    if (auto r = renamed_.find(path); r != renamed_.end())
      return Status::InvalidArgument(
          fmt::format("{}: key '{}' was renamed '{}'", where, path, r->second));
    auto it = by_name_.find(path);
    if (it == by_name_.end())
      return Status::InvalidArgument(fmt::format("{}: unknown key '{}'", where, path));
    const Key& k = *it->second;
    if (!k.refusal_.empty()) return Reject(k, where);
    if (k.path_) {
      // A path in the file is relative to the file's directory.
      const std::optional<std::string> v = node.value_exact<std::string>();
      if (!v) return WrongType(where, k.name_, k.type_, "");
      if (!k.IsPathValue(*v)) return k.from_text_(*v, where);
      return k.from_text_(ResolveConfigPath(cfg.base_dir(), *v), where);
    }
    return k.from_toml_(node, where);
  });
}

Status ConfigSchema::Set(std::string_view name, std::string_view text, std::string_view origin) {
  const std::string where(origin);
  if (auto r = renamed_.find(name); r != renamed_.end())
    return Status::InvalidArgument(
        fmt::format("{}: key '{}' was renamed '{}'", where, name, r->second));
  auto it = by_name_.find(name);
  if (it == by_name_.end())
    return Status::InvalidArgument(fmt::format("{}: unknown key '{}'", where, name));
  const Key& k = *it->second;
  if (!k.refusal_.empty()) return Reject(k, where);
  return k.from_text_(text, where);
}

Status ConfigSchema::Assign(std::string_view key_value) {
  const size_t eq = key_value.find('=');
  if (eq == std::string_view::npos || eq == 0)
    return Status::InvalidArgument(fmt::format("--set '{}' is not key=value", key_value));
  std::string_view key = key_value.substr(0, eq), value = key_value.substr(eq + 1);
  while (!key.empty() && key.back() == ' ') key.remove_suffix(1);
  while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  // A quoted string value is taken without its quotes.
  if (value.size() >= 2 && value.front() == '"' && value.back() == '"')
    value = value.substr(1, value.size() - 2);
  return Set(key, value, "--set");
}

const ConfigSchema::Key* ConfigSchema::Find(std::string_view name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : it->second;
}

std::vector<const ConfigSchema::Key*> ConfigSchema::keys() const {
  std::vector<const Key*> out;
  for (const auto& k : keys_) out.push_back(k.get());
  return out;
}

bool ConfigSchema::IsDefault(std::string_view name) const {
  const Key* k = Find(name);
  TRIB_CHECK(k != nullptr, "IsDefault of an unknown config key");
  return k->value_text() == k->default_text();
}

std::string ConfigSchema::DefaultsToml() const {
  std::string out = fmt::format(
      "# {}: every configuration key with its default value and what it does.\n"
      "# The flag in parentheses sets the key too, --set key=value sets any key; both override\n"
      "# the file (--config).\n",
      program_);
  for (const auto& k : keys_) {
    if (!k->refusal_.empty()) continue;
    out += fmt::format("{} = {}  # {}{}\n", k->name_, k->default_text_, k->help_,
                       k->flag_.empty() ? "" : " (" + k->flag_ + ")");
  }
  return out;
}

std::string ConfigSchema::ValuesToml() const {
  std::string out = fmt::format("# {} configuration\n", program_);
  for (const auto& k : keys_) {
    if (!k->refusal_.empty()) continue;
    std::string text = k->get_();
    // A path is written absolute, so that the file means the same wherever it is read from.
    if (k->path_ && k->IsPathValue(*k->string_field_)) {
      std::error_code ec;
      const std::filesystem::path abs = std::filesystem::absolute(*k->string_field_, ec);
      if (!ec) text = TomlString(abs.lexically_normal().string());
    }
    out += fmt::format("{} = {}\n", k->name_, text);
  }
  return out;
}

Status KeyError(std::string_view key, std::string_view why) {
  return Status::InvalidArgument(fmt::format("key '{}' {}", key, why));
}

}  // namespace tributary
