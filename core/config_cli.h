// ConfigCommandLine: a ConfigSchema on a CLI11 command line.
//
//   CLI::App app{"tributary-coordinator: ..."};
//   ConfigCommandLine cli(app, schema);     // -c/--config, --set, --print-config, and key flags
//   CLI11_PARSE(app, argc, argv);
//   if (cli.print_config()) { std::fputs(schema.DefaultsToml().c_str(), stdout); return 0; }
//   if (Status s = cli.Apply(); !s.ok()) ...  // the file, then the flags, then each --set
//
// Every key with a Flag() gets that option, taking a value of the key's type (given twice, the last
// wins); `--set key=value` reaches every key. Later sources override earlier ones: the file, then
// the flags, then --set in command-line order. Errors name the flag or --set and the key.
#pragma once

#include <CLI/CLI.hpp>

#include <deque>
#include <string>
#include <utility>
#include <vector>

#include "core/config_schema.h"

namespace tributary {

class ConfigCommandLine {
 public:
  // `app` and `schema` must outlive this object; add the program's other options to `app` as usual.
  ConfigCommandLine(CLI::App& app, ConfigSchema& schema);

  bool print_config() const { return print_config_; }
  const std::string& config_file() const { return config_file_; }
  Status Apply();

 private:
  CLI::App& app_;
  ConfigSchema& schema_;
  std::string config_file_;
  std::vector<std::string> sets_;
  bool print_config_ = false;
  std::deque<std::pair<const ConfigSchema::Key*, std::string>> flags_;  // stable addresses
};

}  // namespace tributary
