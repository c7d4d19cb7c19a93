// html_page, the one HTML page shell: document, head, escaped title, common style, body.
#include <doctest/doctest.h>

#include <string>

#include "lib/chart/page.h"

using namespace dbs;

TEST_CASE("Chart.Page.OneShellForEveryPage") {
  const std::string p =
      chart::html_page({"a < b & \"c\"", "h1{color:red}", "<meta name=\"x\" content=\"y\"/>"},
                       "<h1>body</h1>\n");
  CHECK(p.starts_with("<!DOCTYPE html>\n<html xmlns=\"http://www.w3.org/1999/xhtml\" lang=\"en\">"
                      "<head><meta charset=\"utf-8\"/><meta name=\"x\" content=\"y\"/>"));
  CHECK(p.find("<title>a &lt; b &amp; &quot;c&quot;</title>") != std::string::npos);
  const auto style = p.find("<style>" + std::string(chart::kPageStyle) + "h1{color:red}</style>");
  CHECK(style != std::string::npos);
  CHECK(p.ends_with("</style></head><body>\n<h1>body</h1>\n</body></html>\n"));
}
