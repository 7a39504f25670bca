#include "web/web_assets.h"

namespace tributary::web {

// Defined in the generated web_assets_data.cc.
extern const std::string_view k_charts_js;
extern const std::string_view k_dashboard_html;
extern const std::string_view k_dashboard_js;
extern const std::string_view k_report_js;
extern const std::string_view k_style_css;

namespace {

// `page` with its first `marker` replaced by `text`.
std::string Fill(std::string page, std::string_view marker, std::string_view text) {
  const size_t at = page.find(marker);
  if (at != std::string::npos) page.replace(at, marker.size(), text);
  return page;
}

}  // namespace

std::string_view ChartsJs() { return k_charts_js; }
std::string_view StyleCss() { return k_style_css; }
std::string_view ReportJs() { return k_report_js; }

std::string DashboardPage() {
  std::string page(k_dashboard_html);
  page = Fill(std::move(page), "/*STYLE*/", k_style_css);
  page = Fill(std::move(page), "/*CHARTS*/", k_charts_js);
  return Fill(std::move(page), "/*DASHBOARD*/", k_dashboard_js);
}

std::string ScriptSafeJson(std::string json) {
  for (size_t at = 0; (at = json.find("</", at)) != std::string::npos; at += 3)
    json.replace(at, 2, "<\\/");
  return json;
}

}  // namespace tributary::web
