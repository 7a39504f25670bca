#include "history/config_json.h"

#include <nlohmann/json.hpp>

#include "core/config.h"

namespace tributary {
namespace {

// The key's TOML value text as records show it (recorded_text(): a secret is "<redacted>") as
// JSON; the text itself when toml++ cannot read it.
nlohmann::json Value(const ConfigSchema::Key& key) {
  const std::string text = key.recorded_text();
  Result<Config> doc = Config::Parse("v = " + text);
  if (!doc.ok()) return text;
  const toml::node* v = doc->table().get("v");
  if (v == nullptr) return text;
  if (const auto* s = v->as_string()) return s->get();
  if (const auto* i = v->as_integer()) return i->get();
  if (const auto* f = v->as_floating_point()) return f->get();
  if (const auto* b = v->as_boolean()) return b->get();
  return text;
}

}  // namespace

std::string ConfigJson(const ConfigSchema& schema) {
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  for (const ConfigSchema::Key* key : schema.keys()) {
    if (!key->refusal().empty()) continue;
    out[key->name()] = Value(*key);
  }
  return out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace tributary
