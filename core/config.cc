#include "core/config.h"

#include <algorithm>
#include <filesystem>
#include <functional>
#include <vector>

namespace tributary {

namespace {

Result<Config> FromParse(const std::function<toml::table()>& parse, std::string source,
                         std::function<void(Config&, toml::table, std::string)> set) {
  try {
    Config c;
    toml::table table = parse();
    set(c, std::move(table), source);
    return c;
  } catch (const toml::parse_error& err) {
    return Status::InvalidArgument(source + ":" + std::to_string(err.source().begin.line) + ":" +
                                   std::to_string(err.source().begin.column) + ": " +
                                   std::string(err.description()));
  }
}

}  // namespace

Result<Config> Config::Parse(std::string_view text, std::string source) {
  return FromParse([&] { return toml::parse(text, source); }, source,
                   [](Config& c, toml::table t, std::string src) {
                     c.table_ = std::move(t);
                     c.source_ = std::move(src);
                   });
}

Result<Config> Config::LoadFile(const std::string& path) {
  return FromParse([&] { return toml::parse_file(path); }, path,
                   [](Config& c, toml::table t, std::string src) {
                     c.table_ = std::move(t);
                     c.base_dir_ = std::filesystem::path(src).parent_path().string();
                     c.source_ = std::move(src);
                   });
}

Status Config::TypeError(std::string_view key, std::string_view expected) const {
  return Status::InvalidArgument(source_ + ": key '" + std::string(key) + "' must be " +
                                 std::string(expected));
}

bool Config::Has(std::string_view key) const { return static_cast<bool>(table_.at_path(key)); }

Result<int64_t> Config::GetInt(std::string_view key, int64_t def) const {
  toml::node_view<const toml::node> n = table_.at_path(key);
  if (!n) return def;
  if (auto v = n.value_exact<int64_t>()) return *v;
  return TypeError(key, "an integer");
}

Result<double> Config::GetDouble(std::string_view key, double def) const {
  toml::node_view<const toml::node> n = table_.at_path(key);
  if (!n) return def;
  if (n.is_floating_point() || n.is_integer()) return *n.value<double>();
  return TypeError(key, "a number");
}

Result<bool> Config::GetBool(std::string_view key, bool def) const {
  toml::node_view<const toml::node> n = table_.at_path(key);
  if (!n) return def;
  if (auto v = n.value_exact<bool>()) return *v;
  return TypeError(key, "true or false");
}

Result<std::string> Config::GetString(std::string_view key, std::string def) const {
  toml::node_view<const toml::node> n = table_.at_path(key);
  if (!n) return def;
  if (auto v = n.value_exact<std::string>()) return *v;
  return TypeError(key, "a string");
}

Status Config::CheckKnownKeys(std::initializer_list<std::string_view> allowed) const {
  std::vector<std::string_view> keys(allowed);
  std::function<Status(const toml::table&, const std::string&)> walk =
      [&](const toml::table& t, const std::string& prefix) -> Status {
    for (const auto& [k, node] : t) {
      std::string path =
          prefix.empty() ? std::string(k.str()) : prefix + "." + std::string(k.str());
      if (std::find(keys.begin(), keys.end(), path) != keys.end()) continue;
      if (const toml::table* sub = node.as_table()) {
        TRIB_RETURN_IF_ERROR(walk(*sub, path));
        continue;
      }
      return Status::InvalidArgument(source_ + ": unknown key '" + path + "'");
    }
    return Status::Ok();
  };
  return walk(table_, "");
}

}  // namespace tributary
