#include "lib/chart/page.h"

#include "lib/chart/chart.h"

namespace dbs::chart {

std::string html_page(const PageHead& head, std::string_view body) {
  std::string s =
      "<!DOCTYPE html>\n<html xmlns=\"http://www.w3.org/1999/xhtml\" lang=\"en\"><head>"
      "<meta charset=\"utf-8\"/>";
  s += head.meta;
  s += "<title>" + escape(head.title) + "</title>\n<style>";
  s += kPageStyle;
  s += head.style;
  s += "</style></head><body>\n";
  s += body;
  s += "</body></html>\n";
  return s;
}

}  // namespace dbs::chart
