// The two policies that never re-plan: "static" (equal split) and "fixed:b0,b1,..." (given
// sizes). Both still record the measured throughput and the predicted epoch time of their plan,
// so a trace compares them with dbs on the same footing.
#include <cstdint>
#include <numeric>
#include <utility>

#include "lib/common/error.h"
#include "lib/policy/cost.h"
#include "lib/policy/internal.h"

namespace dbs::policy::detail {
namespace {

class NeverReplans : public Policy {
 public:
  NeverReplans(std::string name, Settings settings, int world, std::vector<int> batch,
               std::string reason, std::string initial_reason)
      : name_(std::move(name)),
        config_(std::move(settings)),
        world_(world),
        batch_(std::move(batch)),
        reason_(std::move(reason)),
        initial_reason_(std::move(initial_reason)) {}

  std::string name() const override { return name_; }

  Plan initial() const override {
    Plan p = plan(0, initial_reason_);
    p.throughput.assign(batch_.size(), 0.0);
    return p;
  }

  Plan next(const Plan& current, std::span<const Report> reports) override {
    check_current(current, config_, world_);
    const std::vector<Report> by = by_rank(reports, world_);
    Plan p = plan(current.epoch + 1, reason_);
    std::vector<double> v(by.size());
    for (std::size_t i = 0; i < by.size(); ++i) v[i] = measured_rate(by[i]);
    fill_predictions(p, v, config_.samples_per_epoch,
                     exchange_epoch_s(config_, p.epoch, exchange_s(config_, by)));
    p.changed = p.batch != current.batch;
    return p;
  }

 private:
  Plan plan(std::int64_t epoch, const std::string& reason) const {
    Plan p;
    p.epoch = epoch;
    p.global_batch = config_.global_batch;
    p.batch = batch_;
    p.offset = offsets_of(batch_);
    p.reason = reason;
    return p;
  }

  std::string name_;
  Settings config_;
  int world_;
  std::vector<int> batch_;
  std::string reason_, initial_reason_;
};

}  // namespace

std::unique_ptr<Policy> make_static(const Settings& config, int world) {
  std::vector<int> equal =
      policy::apportion(std::vector<double>(static_cast<std::size_t>(world), 1.0),
                        config.global_batch, config.min_batch, config.max_batch_or_global());
  return std::make_unique<NeverReplans>("static", config, world, std::move(equal),
                                        "static: equal split", "initial: equal split");
}

std::unique_ptr<Policy> make_fixed(const Settings& config, int world) {
  const std::vector<int>& batch = config.policy.sizes;
  const auto fail = [&](const std::string& what) {
    throw ConfigError("policy '" + to_string(config.policy) + "': " + what);
  };
  if (batch.size() != static_cast<std::size_t>(world)) {
    fail(format("%zu sizes for %d ranks", batch.size(), world));
  }
  const std::int64_t sum = std::accumulate(batch.begin(), batch.end(), std::int64_t{0});
  if (sum != config.global_batch) {
    fail(format("sizes sum to %lld, the global batch is %d", static_cast<long long>(sum),
                config.global_batch));
  }
  return std::make_unique<NeverReplans>("fixed", config, world, batch, "fixed: sizes as given",
                                        "initial: fixed sizes as given");
}

}  // namespace dbs::policy::detail
