// Grouping and labelling of study runs (see study_groups.h).
#include "lab/study_groups.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include "lib/common/error.h"
#include "lib/common/format.h"

namespace dbs::lab {
namespace {

int data_order(const std::string& d) {
  return d == "full" ? 0 : d == "filtered" ? 1 : 2;
}

// Every setting but the seed, as text: runs of one label must agree on it.
std::string settings(const StudyRun& r) {
  std::string decay;
  for (int e : r.decay_epochs) decay += std::to_string(e) + ",";
  return format(
      "%s %s lr %g momentum %g %s base %d batch %d warmup %g decay %sx%g %s %d ranks "
      "x %d threads, %lld samples, %zu epochs, data %s",
      r.model.c_str(), r.optimizer.c_str(), r.lr, r.momentum, r.lr_scaling.c_str(), r.base_batch,
      r.global_batch, r.warmup_epochs, decay.c_str(), r.decay_factor, r.policy.c_str(), r.ranks,
      r.threads, r.train_samples, r.epochs.size(), r.data.c_str());
}

}  // namespace

std::string config_label(const StudyRun& r) {
  std::string s = format("batch %d", r.global_batch);
  if (r.study == "filtering") s = r.data + ", " + s;
  if (r.global_batch != r.base_batch || r.warmup_epochs > 0) {
    s += r.lr_scaling == "none" ? ", no scaling" : ", " + r.lr_scaling;
    s += r.warmup_epochs > 0 ? format(", warmup %g", r.warmup_epochs) : ", no warmup";
  }
  if (!r.decay_epochs.empty()) {
    std::string at;
    for (int e : r.decay_epochs) at += (at.empty() ? "" : ",") + std::to_string(e);
    s += format(", decay x%g at %s", r.decay_factor, at.c_str());
  }
  return s;
}

std::vector<Group> group_runs(const std::vector<StudyRun>& runs) {
  std::vector<const StudyRun*> sorted;
  for (const StudyRun& r : runs) sorted.push_back(&r);
  const auto key = [](const StudyRun* r) {
    return std::make_tuple(r->global_batch, data_order(r->data), r->lr_scaling != "none",
                           r->lr_scaling, r->warmup_epochs, r->decay_epochs, r->seed);
  };
  std::stable_sort(sorted.begin(), sorted.end(),
                   [&](const StudyRun* a, const StudyRun* b) { return key(a) < key(b); });
  std::vector<Group> groups;
  for (const StudyRun* r : sorted) {
    const std::string label = config_label(*r);
    auto it = std::find_if(groups.begin(), groups.end(),
                           [&](const Group& g) { return g.label == label; });
    if (it == groups.end()) {
      groups.push_back({label, {r}});
      continue;
    }
    const StudyRun& first = *it->runs.front();
    if (settings(first) != settings(*r))
      throw InputError(format(
          "the runs of '%s' with seeds %u and %u differ in more than the "
          "seed: %s against %s",
          label.c_str(), first.seed, r->seed, settings(first).c_str(), settings(*r).c_str()));
    if (std::any_of(it->runs.begin(), it->runs.end(),
                    [&](const StudyRun* x) { return x->seed == r->seed; }))
      throw InputError(format("two runs of '%s' with seed %u", label.c_str(), r->seed));
    it->runs.push_back(r);
  }
  return groups;
}

Stats epoch_stats(const Group& g, int epoch) {
  Stats s{0, 2, -1};
  int n = 0;
  for (const StudyRun* r : g.runs) {
    if (epoch > static_cast<int>(r->epochs.size())) continue;
    const double a = r->epochs[epoch - 1].test_acc;
    s.mean += a, s.min = std::min(s.min, a), s.max = std::max(s.max, a), ++n;
  }
  if (n == 0) return {};
  s.mean /= n;
  return s;
}

Stats final_stats(const Group& g) {
  Stats s{0, 2, -1};
  for (const StudyRun* r : g.runs) {
    s.mean += r->final_test_acc / static_cast<double>(g.runs.size());
    s.min = std::min(s.min, r->final_test_acc);
    s.max = std::max(s.max, r->final_test_acc);
  }
  return s;
}

double peak_lr(const StudyRun& r) {
  const double ratio = static_cast<double>(r.global_batch) / r.base_batch;
  return r.lr * (r.lr_scaling == "linear" ? ratio : r.lr_scaling == "sqrt" ? std::sqrt(ratio) : 1);
}

}  // namespace dbs::lab
