// Order statistics of a sample, with one meaning of median for the whole project.
//
// The median is the upper median: the value at index n / 2 of the n values sorted ascending
// (for an even n the larger of the two middle values). It is always one of the values, so a
// median step time or rate is a time or rate that was measured; policy::median_rate is the same
// definition over values that each count a number of times.
#pragma once

#include <vector>

namespace dbs::stats {

// The median of v (upper median, see above); 0 when v is empty.
double median(std::vector<double> v);

// The nearest-rank q-quantile, q in [0, 1]: the value at index round(q * (n - 1)) (halves round
// up) of the n values sorted ascending; 0 when v is empty. quantile(v, 0.5) == median(v).
double quantile(std::vector<double> v, double q);

}  // namespace dbs::stats
