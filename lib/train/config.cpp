#include "lib/train/config.h"

#include <algorithm>

#include "lib/common/error.h"

namespace dbs::train {

Settings settings_of(const Config& c, std::size_t train_samples) {
  const std::size_t n =
      c.train_limit == 0 || c.train_limit >= train_samples ? train_samples : c.train_limit;
  Settings s = c;
  s.samples_per_epoch = static_cast<std::int64_t>(n);
  return s;
}

namespace {

void check_averaging(const Config& c) {
  if (c.average_every < 0)
    throw ConfigError("--average-every must be >= 1 (steps between model averages), got " +
                      std::to_string(c.average_every));
  if (c.average_after_epochs < 0)
    throw ConfigError("--average-after-epochs must be >= 0, got " +
                      std::to_string(c.average_after_epochs));
  if (c.average_optimizer != "local" && c.average_optimizer != "mean")
    throw ConfigError("--average-optimizer '" + c.average_optimizer + "': expected local or mean");
  if (c.average_every == 0) {
    if (c.average_after_epochs != 0)
      throw ConfigError("--average-after-epochs needs --average-every H");
    if (c.average_optimizer != "local")
      throw ConfigError("--average-optimizer needs --average-every H");
    return;
  }
  if (c.update == "sharded")
    throw ConfigError(
        "--average-every works with --update replicated (a local step needs the "
        "whole optimizer state on every rank)");
  if (c.overlap == "on" && c.average_after_epochs == 0)
    throw ConfigError(
        "--overlap with --average-every needs --average-after-epochs E > 0 (only "
        "the synchronous epochs exchange a gradient to overlap)");
  if (c.rebalance_every % c.average_every != 0)
    throw ConfigError("--rebalance-every " + std::to_string(c.rebalance_every) +
                      " is not a multiple of --average-every " + std::to_string(c.average_every) +
                      " (under model averaging the ranks learn each other's step times at the "
                      "averages)");
}

}  // namespace

void check_exchange(const Config& c) {
  if (c.update != "replicated" && c.update != "sharded")
    throw ConfigError("--update '" + c.update + "': expected replicated or sharded");
  if (c.overlap != "on" && c.overlap != "off" && c.overlap != "auto")
    throw ConfigError("--overlap '" + c.overlap + "': expected on, off or auto");
  if (c.overlap == "on" && c.update == "sharded")
    throw ConfigError(
        "--overlap works with --update replicated (the sharded update reduce-scatters "
        "the whole gradient at once)");
  if (c.overlap == "on" && c.allreduce == "ring")
    throw ConfigError("--overlap needs --allreduce mpi (the ring allreduce is blocking)");
  check_averaging(c);
}

bool resolve_overlap(const Config& c, std::span<const std::string> hosts) {
  if (c.overlap != "auto") return c.overlap == "on";
  if (c.update != "replicated" || c.allreduce != "mpi") return false;
  if (c.average_every > 0 && c.average_after_epochs == 0) return false;  // no synchronous epoch
  return std::any_of(hosts.begin(), hosts.end(),
                     [&](const std::string& h) { return h != hosts.front(); });
}

}  // namespace dbs::train
