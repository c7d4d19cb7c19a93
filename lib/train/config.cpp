#include "lib/train/config.h"

#include "lib/common/error.h"

namespace dbs::train {

policy::Settings settings_of(const Config& c, std::size_t train_samples) {
  const std::size_t n =
      c.train_limit == 0 || c.train_limit >= train_samples ? train_samples : c.train_limit;
  policy::Settings s = c;
  s.samples_per_epoch = static_cast<std::int64_t>(n);
  return s;
}

void check_exchange(const Config& c) {
  if (c.update != "replicated" && c.update != "sharded")
    throw ConfigError("--update '" + c.update + "': expected replicated or sharded");
  if (c.overlap && c.update == "sharded")
    throw ConfigError("--overlap works with --update replicated (the sharded update reduce-scatters "
                      "the whole gradient at once)");
  if (c.overlap && c.allreduce == "ring")
    throw ConfigError("--overlap needs --allreduce mpi (the ring allreduce is blocking)");
}

}  // namespace dbs::train
