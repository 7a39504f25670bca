// Numbers for people: byte counts and durations in the unit that fits, for console lines, reports
// and `tributary runs`. Machine-read outputs (events.jsonl, report.json, rounds.csv, metrics) keep
// their raw numbers; these are only for text a person reads.
//
//   FormatBytes(780)          "780 B"        below 1 KiB: whole bytes
//   FormatBytes(1536)         "1.5 KiB"      then KiB, MiB, GiB, TiB, PiB, EiB (powers of 1024)
//   FormatBytes(796957000)    "760.0 MiB"    with one decimal; 1048575 is "1.0 MiB", not
//                                            "1024.0 KiB" (the unit is chosen after rounding)
//   FormatDuration(0.000412)  "412 µs"       below 1 ms
//   FormatDuration(0.002056)  "2.1 ms"       below 10 ms one decimal, below 1 s whole ms
//   FormatDuration(2.3)       "2.30 s"       below 10 s two decimals, below 1 min one
//   FormatDuration(150)       "2.5 min"      below 1 h
//   FormatDuration(5400)      "1.5 h"        above
//
// Negative values get a leading '-'; values that are not finite print as "n/a". The web pages'
// copy of these rules is web/charts.js (TributaryCharts.formatValue), tested in a browser by
// tests/integration/dashboard_browser_test.py. Thread-safe (pure functions).
#pragma once

#include <string>

namespace tributary {

std::string FormatBytes(double bytes);
std::string FormatDuration(double seconds);

}  // namespace tributary
