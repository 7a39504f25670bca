#include "core/config_cli.h"

namespace tributary {

ConfigCommandLine::ConfigCommandLine(CLI::App& app, ConfigSchema& schema)
    : app_(app), schema_(schema) {
  app.add_option("-c,--config", config_file_, "TOML configuration file (--print-config lists keys)")
      ->check(CLI::ExistingFile);
  app.add_option("--set", sets_, "set any configuration key: --set key=value (repeatable)");
  app.add_flag("--print-config", print_config_,
               "print every configuration key with its default and description, then exit");
  for (const ConfigSchema::Key* k : schema.keys()) {
    if (k->flag().empty() || !k->refusal().empty()) continue;
    flags_.emplace_back(k, std::string());
    // A flag given twice takes the last value, so a wrapper's defaults can be overridden.
    app.add_option(k->flag(), flags_.back().second,
                   k->help() + " (key " + k->name() + ", default " + k->default_text() + ")")
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  }
}

Status ConfigCommandLine::Apply() {
  if (!config_file_.empty()) {
    TRIB_ASSIGN_OR_RETURN(Config file, Config::LoadFile(config_file_));
    TRIB_RETURN_IF_ERROR(schema_.Load(file));
  }
  for (const auto& [key, value] : flags_) {
    if (app_.count(key->flag()) == 0) continue;
    TRIB_RETURN_IF_ERROR(schema_.Set(key->name(), value, key->flag()));
  }
  for (const std::string& kv : sets_) TRIB_RETURN_IF_ERROR(schema_.Assign(kv));
  return Status::Ok();
}

}  // namespace tributary
