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

void check_exchange(const Config& c) {
  if (c.update != "replicated" && c.update != "sharded")
    throw ConfigError("--update '" + c.update + "': expected replicated or sharded");
  if (c.overlap != "on" && c.overlap != "off" && c.overlap != "auto")
    throw ConfigError("--overlap '" + c.overlap + "': expected on, off or auto");
  if (c.overlap == "on" && c.update == "sharded")
    throw ConfigError("--overlap works with --update replicated (the sharded update reduce-scatters "
                      "the whole gradient at once)");
  if (c.overlap == "on" && c.allreduce == "ring")
    throw ConfigError("--overlap needs --allreduce mpi (the ring allreduce is blocking)");
}

bool resolve_overlap(const Config& c, std::span<const std::string> hosts) {
  if (c.overlap != "auto") return c.overlap == "on";
  if (c.update != "replicated" || c.allreduce != "mpi") return false;
  return std::any_of(hosts.begin(), hosts.end(),
                     [&](const std::string& h) { return h != hosts.front(); });
}

}  // namespace dbs::train
