// A training subset: the indices of the samples kept, in a small versioned JSON file written by
// `dbs-agent filter` and read by `dbs-agent --train-subset`. The indices refer to the training
// set as the run sees it (after --train-limit); the file carries that set's size and hash so a
// subset made for other data is refused.
//
//   {"format": "dbs-subset", "version": 1, "method": "dbscan", "dataset_samples": 60000,
//    "dataset_hash": "<16 hex digits>", "count": 58123, "indices": [0, 1, 3, ...]}
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lib/data/dataset.h"

namespace dbs::data {

inline constexpr int kSubsetVersion = 1;

struct Subset {
  std::string method;                 // how it was chosen: "dbscan", "random-control", ...
  std::size_t dataset_samples = 0;    // size of the set the indices refer to
  std::uint64_t dataset_hash = 0;     // dataset_hash() of that set
  std::vector<std::int64_t> indices;  // ascending, distinct, each < dataset_samples
};

// FNV-1a over the sample count, the images (float32 bytes) and the labels.
std::uint64_t dataset_hash(const Dataset& d);

// FNV-1a over the indices (int64 bytes): the subset's identity in traces, as 16 hex digits.
std::string subset_hash(const Subset& s);

// Writes atomically. Throws InputError naming the path.
void write_subset(const Subset& s, const std::string& path);

// Reads and validates the file alone: format, version, every field's type, indices ascending,
// distinct and in range, count equal to the number of indices. Throws InputError naming the
// file and the field at fault.
Subset read_subset(const std::string& path);

// Throws InputError (naming path) unless s was made for d: same sample count and hash.
void check_subset_matches(const Subset& s, const Dataset& d, const std::string& path);

// The samples of d at s.indices, in that order.
Dataset select(const Dataset& d, const std::vector<std::int64_t>& indices);

}  // namespace dbs::data
