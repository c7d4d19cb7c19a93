// The filter's self-contained HTML report: the settings, a table of samples, clusters, eps and
// removed samples per class, the whole embedding coloured by class, and one embedding per class
// with its removed samples marked. Inline SVG only: no scripts, nothing fetched.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "lib/filter/pipeline.h"

namespace dbs::filter {

struct ReportInfo {
  std::string title = "dbs filter";
  std::vector<std::string> class_names;  // by label; missing ones print the number
  std::vector<std::pair<std::string, std::string>> settings;  // shown as a table, in order
};

std::string html_report(const FilterResult& result, const std::int32_t* labels,
                        const ReportInfo& info);

}  // namespace dbs::filter
