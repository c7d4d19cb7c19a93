#include "lib/filter/pipeline.h"

#include <algorithm>
#include <chrono>
#include <string>

#include "lib/common/error.h"
#include "lib/common/hash.h"
#include "lib/filter/dbscan.h"
#include "lib/filter/pca.h"

namespace dbs::filter {
namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

FilterResult filter_noise(const float* features, std::size_t n, std::size_t d,
                          const std::int32_t* labels, int classes, const FilterOptions& o) {
  if (classes < 1) throw ConfigError("filter: need at least one class");
  if (o.eps < 0) throw ConfigError("filter: eps must not be negative");
  if (o.min_samples < 1) throw ConfigError("filter: min_samples must be at least 1");
  for (std::size_t i = 0; i < n; ++i)
    if (labels[i] < 0 || labels[i] >= classes)
      throw ConfigError("filter: sample " + std::to_string(i) + " has label " +
                        std::to_string(labels[i]) + ", outside [0, " + std::to_string(classes) +
                        ")");
  FilterResult r;
  auto t0 = std::chrono::steady_clock::now();
  std::vector<float> reduced;
  const float* x = features;
  std::size_t dims = d;
  if (o.pca_dims > 0 && o.pca_dims < d) {
    reduced = pca(features, n, d, o.pca_dims);
    x = reduced.data();
    dims = o.pca_dims;
  }
  r.pca_s = seconds_since(t0);
  r.tsne = tsne(x, n, dims, o.tsne);
  r.embedding = std::move(r.tsne.y);
  r.tsne.y.clear();

  t0 = std::chrono::steady_clock::now();
  r.removed.assign(n, false);
  for (std::int32_t c = 0; c < classes; ++c) {
    ClassStats s;
    s.label = c;
    std::vector<std::size_t> members;
    std::vector<double> xy;
    for (std::size_t i = 0; i < n; ++i)
      if (labels[i] == c) {
        members.push_back(i);
        xy.insert(xy.end(), {r.embedding[2 * i], r.embedding[2 * i + 1]});
      }
    s.samples = members.size();
    if (members.size() >= 2) {
      s.eps = o.eps > 0 ? o.eps : default_eps(xy.data(), members.size(), o.min_samples);
      if (!(s.eps > 0)) s.eps = 1e-9;  // all points coincide: all in one cluster
      const DbscanResult db = dbscan(xy.data(), members.size(), s.eps, o.min_samples);
      s.clusters = db.clusters;
      for (std::size_t k = 0; k < members.size(); ++k)
        if (db.label[k] == kNoise) {
          r.removed[members[k]] = true;
          ++s.removed;
        }
    }
    r.classes.push_back(s);
  }
  for (std::size_t i = 0; i < n; ++i)
    if (!r.removed[i]) r.kept.push_back(static_cast<std::int64_t>(i));
  r.dbscan_s = seconds_since(t0);
  return r;
}

std::vector<std::int64_t> random_control(const std::int32_t* labels, std::size_t n,
                                         const std::vector<std::size_t>& removed_per_class,
                                         std::uint64_t seed) {
  std::vector<bool> removed(n, false);
  for (std::size_t c = 0; c < removed_per_class.size(); ++c) {
    std::vector<std::size_t> members;
    for (std::size_t i = 0; i < n; ++i)
      if (labels[i] == static_cast<std::int32_t>(c)) members.push_back(i);
    const std::size_t m = removed_per_class[c];
    if (m > members.size())
      throw ConfigError("random control: class " + std::to_string(c) + " has " +
                        std::to_string(members.size()) + " samples, cannot remove " +
                        std::to_string(m));
    // The first m places of a Fisher-Yates shuffle driven by (seed, class, place).
    for (std::size_t k = 0; k < m; ++k) {
      const std::uint64_t r = mix64(splitmix64(seed ^ mix64(c + 1)) + k * kSplitmixGamma);
      const std::size_t j = k + static_cast<std::size_t>(r % (members.size() - k));
      std::swap(members[k], members[j]);
      removed[members[k]] = true;
    }
  }
  std::vector<std::int64_t> kept;
  for (std::size_t i = 0; i < n; ++i)
    if (!removed[i]) kept.push_back(static_cast<std::int64_t>(i));
  return kept;
}

}  // namespace dbs::filter
