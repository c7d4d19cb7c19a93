#include "lib/data/subset.h"

#include <cstdio>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "lib/common/atomic_file.h"
#include "lib/common/error.h"
#include "lib/common/hash.h"

namespace dbs::data {
namespace {

std::string hex16(std::uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

[[noreturn]] void bad(const std::string& path, const std::string& field, const std::string& why) {
  throw InputError(path + ": field '" + field + "' " + why);
}

const nlohmann::json& field(const nlohmann::json& j, const std::string& path, const char* name) {
  const auto it = j.find(name);
  if (it == j.end()) bad(path, name, "is missing");
  return *it;
}

std::uint64_t unsigned_field(const nlohmann::json& j, const std::string& path, const char* name) {
  const auto& v = field(j, path, name);
  if (!v.is_number_unsigned()) bad(path, name, "must be a non-negative integer");
  return v.get<std::uint64_t>();
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
  const nlohmann::json j = {{"format", "dbs-subset"},          {"version", kSubsetVersion},
                            {"method", s.method},              {"dataset_samples", s.dataset_samples},
                            {"dataset_hash", hex16(s.dataset_hash)}, {"count", s.indices.size()},
                            {"indices", s.indices}};
  write_file_atomic(path, j.dump() + "\n");
}

Subset read_subset(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw InputError(path + ": cannot open subset file");
  std::stringstream buf;
  buf << f.rdbuf();
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(buf.str());
  } catch (const nlohmann::json::exception& e) {
    throw InputError(path + ": not valid JSON (" + e.what() + ")");
  }
  if (!j.is_object()) throw InputError(path + ": a subset file holds a JSON object");
  const auto& format = field(j, path, "format");
  if (format != "dbs-subset") bad(path, "format", "must be \"dbs-subset\"");
  const std::uint64_t version = unsigned_field(j, path, "version");
  if (version != kSubsetVersion)
    bad(path, "version", "is " + std::to_string(version) + "; this build reads version " +
                             std::to_string(kSubsetVersion));
  Subset s;
  const auto& method = field(j, path, "method");
  if (!method.is_string()) bad(path, "method", "must be a string");
  s.method = method.get<std::string>();
  s.dataset_samples = unsigned_field(j, path, "dataset_samples");
  const auto& hash = field(j, path, "dataset_hash");
  if (!hash.is_string() || hash.get<std::string>().size() != 16 ||
      hash.get<std::string>().find_first_not_of("0123456789abcdef") != std::string::npos)
    bad(path, "dataset_hash", "must be 16 lower-case hex digits");
  s.dataset_hash = std::stoull(hash.get<std::string>(), nullptr, 16);
  const std::uint64_t count = unsigned_field(j, path, "count");
  const auto& indices = field(j, path, "indices");
  if (!indices.is_array()) bad(path, "indices", "must be an array");
  if (indices.size() != count)
    bad(path, "count", "is " + std::to_string(count) + " but 'indices' has " +
                           std::to_string(indices.size()) + " entries");
  if (count == 0) bad(path, "indices", "is empty: a subset keeps at least one sample");
  s.indices.reserve(indices.size());
  for (std::size_t k = 0; k < indices.size(); ++k) {
    const auto& v = indices[k];
    const std::string at = "indices[" + std::to_string(k) + "]";
    if (!v.is_number_unsigned()) bad(path, at, "must be a non-negative integer");
    const auto i = v.get<std::uint64_t>();
    if (i >= s.dataset_samples)
      bad(path, at, "is " + std::to_string(i) + ", out of range for " +
                        std::to_string(s.dataset_samples) + " samples");
    if (k > 0 && static_cast<std::int64_t>(i) <= s.indices.back())
      bad(path, at, "is " + std::to_string(i) + ", not above the previous index (indices ascend, no repeats)");
    s.indices.push_back(static_cast<std::int64_t>(i));
  }
  return s;
}

void check_subset_matches(const Subset& s, const Dataset& d, const std::string& path) {
  if (s.dataset_samples != d.n)
    bad(path, "dataset_samples", "is " + std::to_string(s.dataset_samples) + " but the training set has " +
                                     std::to_string(d.n) + " samples (check --train-limit)");
  const std::uint64_t h = dataset_hash(d);
  if (s.dataset_hash != h)
    bad(path, "dataset_hash", "is " + hex16(s.dataset_hash) + " but the training set hashes to " +
                                  hex16(h) + ": the subset was made for other data");
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
    std::copy(d.image(i), d.image(i) + d.pixels(), out.images.begin() + static_cast<std::ptrdiff_t>(k * d.pixels()));
    out.labels[k] = d.labels[i];
  }
  return out;
}

}  // namespace dbs::data
