// A program's configuration as the run history records it: one JSON object of every key the
// program uses, with its current value, e.g. {"run.model": "cnn", "run.rounds": 20, ...}. Keys that
// hold secrets (names ending in "token", "password" or "secret") are recorded as "<redacted>"
// when set.
#pragma once

#include <string>

#include "core/config_schema.h"

namespace tributary {

std::string ConfigJson(const ConfigSchema& schema);

}  // namespace tributary
