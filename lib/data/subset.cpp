#include "lib/data/subset.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>

#include "lib/common/atomic_file.h"
#include "lib/common/error.h"
#include "lib/common/fields.h"
#include "lib/common/hash.h"
#include "lib/common/read_file.h"

namespace dbs::data {
namespace {

std::string hex16(std::uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

// A subset file that does not match the training set: the file and the field at fault.
[[noreturn]] void mismatch(const std::string& path, const std::string& field,
                           const std::string& why) {
  throw FieldError(path + ": field '" + field + "' " + why);
}

}  // namespace

std::uint64_t dataset_hash(const Dataset& d) {
  const std::uint64_t n = d.n;
  std::uint64_t h = fnv1a(&n, sizeof n);
  h = fnv1a(d.images.data(), d.images.size() * sizeof(float), h);
  return fnv1a(d.labels.data(), d.labels.size() * sizeof(std::int32_t), h);
}

std::string subset_hash(const Subset& s) {
  return hex16(fnv1a(s.indices.data(), s.indices.size() * sizeof(std::int64_t)));
}

void write_subset(const Subset& s, const std::string& path) {
  const nlohmann::json j = {{"format", "dbs-subset"},
                            {"version", kSubsetVersion},
                            {"method", s.method},
                            {"dataset_samples", s.dataset_samples},
                            {"dataset_hash", hex16(s.dataset_hash)},
                            {"count", s.indices.size()},
                            {"indices", s.indices}};
  write_file_atomic(path, j.dump() + "\n");
}

Subset read_subset(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError(path + ": cannot open subset file");
  const std::string text = read_rest(in);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw InputError(path + ": not valid JSON (" + e.what() + ")");
  }
  const Fields f(j, path);
  if (f.string("format") != "dbs-subset") f.fail("field 'format' must be \"dbs-subset\"");
  const std::int64_t version = f.integer("version", 0);
  if (version != kSubsetVersion)
    f.fail("field 'version' is " + std::to_string(version) + "; this build reads version " +
           std::to_string(kSubsetVersion));
  Subset s;
  s.method = f.string("method", 256);
  s.dataset_samples = static_cast<std::uint64_t>(f.integer("dataset_samples", 0));
  const std::string hash = f.string("dataset_hash");
  if (hash.size() != 16 || hash.find_first_not_of("0123456789abcdef") != std::string::npos)
    f.fail("field 'dataset_hash' must be 16 lower-case hex digits");
  s.dataset_hash = std::stoull(hash, nullptr, 16);
  const std::int64_t count = f.integer("count", 0);
  // lib/data holds at most INT_MAX samples: the indices are ints below dataset_samples.
  const auto samples = std::min<std::uint64_t>(s.dataset_samples, std::numeric_limits<int>::max());
  const std::vector<int> indices = f.ints("indices", 0, static_cast<int>(samples) - 1);
  s.indices.assign(indices.begin(), indices.end());
  if (static_cast<std::int64_t>(s.indices.size()) != count)
    f.fail("field 'count' is " + std::to_string(count) + " but 'indices' has " +
           std::to_string(s.indices.size()) + " entries");
  if (count == 0) f.fail("field 'indices' is empty: a subset keeps at least one sample");
  for (std::size_t k = 1; k < s.indices.size(); ++k)
    if (s.indices[k] <= s.indices[k - 1])
      f.fail("field 'indices' item " + std::to_string(k) + " is " + std::to_string(s.indices[k]) +
             ", not above the previous one (indices ascend, no repeats)");
  return s;
}

void check_subset_matches(const Subset& s, const Dataset& d, const std::string& path) {
  if (s.dataset_samples != d.n)
    mismatch(path, "dataset_samples",
             "is " + std::to_string(s.dataset_samples) + " but the training set has " +
                 std::to_string(d.n) + " samples (check --train-limit)");
  const std::uint64_t h = dataset_hash(d);
  if (s.dataset_hash != h)
    mismatch(path, "dataset_hash",
             "is " + hex16(s.dataset_hash) + " but the training set hashes to " + hex16(h) +
                 ": the subset was made for other data");
}

Dataset select(const Dataset& d, const std::vector<std::int64_t>& indices) {
  Dataset out;
  out.n = indices.size();
  out.rows = d.rows;
  out.cols = d.cols;
  out.classes = d.classes;
  out.images.resize(out.n * d.pixels());
  out.labels.resize(out.n);
  for (std::size_t k = 0; k < indices.size(); ++k) {
    const auto i = static_cast<std::size_t>(indices[k]);
    if (i >= d.n) throw InputError("subset index " + std::to_string(i) + " out of range");
    std::copy(d.image(i), d.image(i) + d.pixels(),
              out.images.begin() + static_cast<std::ptrdiff_t>(k * d.pixels()));
    out.labels[k] = d.labels[i];
  }
  return out;
}

}  // namespace dbs::data
