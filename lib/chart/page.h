// The one HTML page shell of the project: the daemon's status pages, the replay and filter
// reports and the lab's study page and sweep report are each html_page(head, body). The
// document is well-formed XHTML served as HTML5 (a test may parse it as XML), UTF-8, with the
// title escaped and one common style that a page extends with its own rules.
#pragma once

#include <string>
#include <string_view>

namespace dbs::chart {

// The rules every page starts from: a sans-serif body and bordered tables of right-aligned
// cells.
inline constexpr std::string_view kPageStyle =
    "body{font-family:sans-serif}table{border-collapse:collapse}"
    "td,th{border:1px solid #ccc;padding:2px 8px;text-align:right}";

struct PageHead {
  std::string title;  // plain text (escaped here)
  std::string style;  // CSS rules after kPageStyle (later rules win)
  std::string meta;   // more well-formed markup for <head>, e.g. a <meta http-equiv .../>
};

// "<!DOCTYPE html>", <html> with <head> (charset, meta, title, style) and <body>: body, which
// must be well-formed markup (escape its text with chart::escape).
std::string html_page(const PageHead& head, std::string_view body);

}  // namespace dbs::chart
