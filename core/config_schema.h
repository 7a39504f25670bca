// ConfigSchema: a program's configuration keys as one table, bound to the fields of its settings.
//
//   RunConfig run;                       // its fields' values are the defaults
//   ConfigSchema schema("tributary-coordinator");
//   schema.Bind("run.rounds", &run.round.rounds, "rounds to run").Flag("--rounds");
//   TRIB_RETURN_IF_ERROR(schema.Load(file));            // a TOML document (core/config.h)
//   TRIB_RETURN_IF_ERROR(schema.Assign("run.rounds=5"));  // a --set override
//   std::cout << schema.DefaultsToml();                  // --print-config
//
// Every program (coordinator, client, simulator) builds its schema from the same binding functions
// (BindFitConfig, BindRoundConfig, ...), so one setting has one name everywhere. The schema checks
// names and types; ranges and relations between settings are checked once, by the settings' own
// Validate(), whose messages name the keys.
//
// Keys are dotted paths ("run.rounds" is `rounds` in the `[run]` table). Loading a document fails,
// naming the source and the key, on a key no binding knows (or one that was renamed: the error
// names the new key), on a key this program refuses (a key other programs use that has no meaning
// here: the error says why), and on a value of the wrong type. Durations are numbers of seconds
// (keys ending in _s) bound to std::chrono::milliseconds.
//
// Paths. A key marked Path() names a file or directory. A relative path in a configuration file is
// relative to the directory of that file: Load() joins it to Config::base_dir() (lexically:
// "examples/configs" and "../../runs/demo" give "runs/demo"). A path given on the command line (a
// key's flag, --set: Set() and Assign()) is relative to the working directory and is kept as given.
// Absolute paths and "" are never changed. This is the one place paths are resolved; the programs
// use the values as they are.
//
// Secrets. A key marked Secret() holds a value that must not be recorded (dp.noise_seed,
// monitor.token): whatever records or shows a configuration (the run history, reports) writes
// Key::recorded_text(), which hides the value unless it is unset ("" or 0).
//
// DefaultsToml() and ValuesToml() write TOML that Load() reads back: `key = value  # help` lines
// with dotted keys, the defaults or the current values. Deployment mode hands a configuration to
// real processes this way; ValuesToml() writes relative paths made absolute (against the working
// directory), so the file means the same wherever it is written and read. Neither hides secrets.
//
// Not thread-safe; the bound fields must outlive the schema.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/config.h"
#include "tributary/result.h"

namespace tributary {

class ConfigSchema {
 public:
  enum class Type { kString, kInteger, kNumber, kBool, kSeconds };

  class Key {
   public:
    // The command-line flag that sets this key too, e.g. "--rounds".
    Key& Flag(std::string flag) {
      flag_ = std::move(flag);
      return *this;
    }
    // Marks a string key as a path (see Paths above). `is_path`, when given, says which non-empty
    // values are paths (run.model: a model file, not a built-in model's name); without it every
    // non-empty value is one. Marking a key of another type aborts (a bug, not bad input).
    Key& Path(bool (*is_path)(std::string_view) = nullptr);
    // Marks the key's value as a secret (see Secrets above).
    Key& Secret() {
      secret_ = true;
      return *this;
    }
    const std::string& name() const { return name_; }
    Type type() const { return type_; }
    const std::string& help() const { return help_; }
    const std::string& flag() const { return flag_; }
    // The default and the current value, as TOML values ("mlp" with its quotes, 10, 0.05, true).
    const std::string& default_text() const { return default_text_; }
    std::string value_text() const { return get_(); }
    // value_text() as a record of the configuration may show it: for a Secret() key whose value is
    // set (not "" or 0: dp.noise_seed = 0 is OS randomness, monitor.token = "" no token),
    // "\"<redacted>\"" (a TOML string) instead.
    std::string recorded_text() const;
    bool is_path() const { return path_; }
    bool secret() const { return secret_; }
    // True when `value` of this key is a path: a Path() key, a non-empty value that its
    // predicate (if any) accepts.
    bool IsPathValue(std::string_view value) const;
    // Non-empty when this program refuses the key: why.
    const std::string& refusal() const { return refusal_; }

   private:
    friend class ConfigSchema;
    std::string name_;
    Type type_ = Type::kString;
    std::string help_, flag_, default_text_, refusal_;
    bool path_ = false, secret_ = false;
    bool (*is_path_)(std::string_view) = nullptr;
    std::string* string_field_ = nullptr;  // the bound field of a string key
    std::function<Status(const toml::node&, const std::string& where)> from_toml_;
    std::function<Status(std::string_view, const std::string& where)> from_text_;
    std::function<std::string()> get_;
  };

  explicit ConfigSchema(std::string program) : program_(std::move(program)) {}
  ConfigSchema(const ConfigSchema&) = delete;
  ConfigSchema& operator=(const ConfigSchema&) = delete;

  // Binds `name` to `*field`; the field's current value is the key's default. A name is bound
  // once (a second binding of it aborts: that is a bug, not bad input).
  Key& Bind(std::string name, std::string* field, std::string help);
  Key& Bind(std::string name, int64_t* field, std::string help);
  Key& Bind(std::string name, int* field, std::string help);
  Key& Bind(std::string name, uint64_t* field, std::string help);  // refuses negative values
  Key& Bind(std::string name, double* field, std::string help);    // finite numbers
  Key& Bind(std::string name, float* field, std::string help);
  Key& Bind(std::string name, bool* field, std::string help);
  Key& Bind(std::string name, std::chrono::milliseconds* field, std::string help);  // seconds

  // `name` (bound) is known but refused in this program, with the reason given.
  void Refuse(std::string_view name, std::string why);
  // Gives the bound key `name` a flag in this program (one a shared binding left without).
  void SetFlag(std::string_view name, std::string flag);
  // `old_name` is no longer a key; using it is an error that names `new_name`.
  void Rename(std::string old_name, std::string new_name);

  // Applies every key of the document. InvalidArgument naming cfg.source() and the key.
  Status Load(const Config& cfg);
  // Applies `text` to key `name` as a value of the key's type (a string key takes it as it is).
  // `origin` says where it came from in errors ("--rounds", "--set").
  Status Set(std::string_view name, std::string_view text, std::string_view origin);
  // Applies one "key=value" assignment (tributary-sim's --set).
  Status Assign(std::string_view key_value);

  const Key* Find(std::string_view name) const;
  // Every key, in binding order (refused ones included).
  std::vector<const Key*> keys() const;
  // True when the key's current value is its default.
  bool IsDefault(std::string_view name) const;

  // Every key this program uses, with its default and its help as a comment.
  std::string DefaultsToml() const;
  // Every key this program uses, with its current value.
  std::string ValuesToml() const;

  const std::string& program() const { return program_; }

 private:
  Key& Add(std::string name, Type type, std::string help);
  Status Reject(const Key& key, const std::string& where) const;

  std::string program_;
  std::vector<std::unique_ptr<Key>> keys_;
  std::map<std::string, Key*, std::less<>> by_name_;
  std::map<std::string, std::string, std::less<>> renamed_;
};

// KeyError("data.num_clients", "must be positive") is InvalidArgument("key 'data.num_clients' must
// be positive"): the form a Validate() error takes when it names the key at fault.
Status KeyError(std::string_view key, std::string_view why);

// The TOML text of a string value: quoted and escaped.
std::string TomlString(std::string_view s);

// `path` relative to `base_dir`: `path` itself when it is absolute or empty, or when `base_dir` is
// empty (the working directory); else base_dir/path, lexically normalized ("a/b" and "../c" give
// "a/c").
std::string ResolveConfigPath(std::string_view base_dir, std::string_view path);

}  // namespace tributary
