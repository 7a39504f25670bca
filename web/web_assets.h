// The web pages' assets, compiled in (web/CMakeLists.txt embeds this folder's files as strings).
//
//   ChartsJs()       the chart code both pages use (charts.js: TributaryCharts.lineChart)
//   StyleCss()       the pages' style sheet
//   ReportJs()       draws tributary-sim's report.html from its embedded JSON
//   DashboardPage()  the coordinator's dashboard: one HTML page with its style and scripts inline
//
// Nothing here refers to the network: every page is whole by itself.
#pragma once

#include <string>
#include <string_view>

namespace tributary::web {

std::string_view ChartsJs();
std::string_view StyleCss();
std::string_view ReportJs();
std::string DashboardPage();

// `json` made safe to place inside a <script> element ("</" becomes "<\/", which JSON reads the
// same).
std::string ScriptSafeJson(std::string json);

}  // namespace tributary::web
