// Config: a TOML document (toml++) with typed getters whose errors name the offending key.
//
//   TRIB_ASSIGN_OR_RETURN(Config cfg, Config::LoadFile("coordinator.toml"));
//   TRIB_ASSIGN_OR_RETURN(int64_t rounds, cfg.GetInt("rounds", 10));
//   TRIB_RETURN_IF_ERROR(cfg.CheckKnownKeys({"rounds", "train.lr"}));
//
// Keys are dotted paths ("train.lr"). A missing key yields the default; a key present with the
// wrong type is an InvalidArgument naming the key, the source file, and the expected type.
//
// base_dir() is the directory relative paths in the document are relative to: the file's own
// directory for LoadFile (as the path was given: "examples/configs" for
// "examples/configs/sim.toml", "" for a file in the working directory), "" (the working directory)
// for Parse. ConfigSchema::Load resolves the values of path keys against it.
#pragma once

#include <toml++/toml.h>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

#include "tributary/result.h"

namespace tributary {

class Config {
 public:
  Config() = default;
  static Result<Config> LoadFile(const std::string& path);
  static Result<Config> Parse(std::string_view text, std::string source = "<string>");

  bool Has(std::string_view key) const;
  Result<int64_t> GetInt(std::string_view key, int64_t def) const;
  Result<double> GetDouble(std::string_view key, double def) const;  // accepts integers too
  Result<bool> GetBool(std::string_view key, bool def) const;
  Result<std::string> GetString(std::string_view key, std::string def) const;

  // Fails naming the first key (as a dotted path) that is not in `allowed`. Tables named in
  // `allowed` are accepted whole.
  Status CheckKnownKeys(std::initializer_list<std::string_view> allowed) const;

  const std::string& source() const { return source_; }
  const std::string& base_dir() const { return base_dir_; }
  const toml::table& table() const { return table_; }

 private:
  Status TypeError(std::string_view key, std::string_view expected) const;
  toml::table table_;
  std::string source_;
  std::string base_dir_;
};

}  // namespace tributary
