// A program's configuration as the run history records it: one JSON object of every key the
// program uses, with its current value, e.g. {"run.model": "cnn", "run.rounds": 20, ...}. A key
// the schema marks Secret() (dp.noise_seed, monitor.token) is recorded as "<redacted>" unless it is
// unset, "" or 0 (Key::recorded_text()).
#pragma once

#include <string>

#include "core/config_schema.h"

namespace tributary {

std::string ConfigJson(const ConfigSchema& schema);

}  // namespace tributary
