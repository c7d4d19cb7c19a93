#include "lib/train/config.h"

namespace dbs::train {

policy::Settings settings_of(const Config& c, std::size_t train_samples) {
  const std::size_t n =
      c.train_limit == 0 || c.train_limit >= train_samples ? train_samples : c.train_limit;
  policy::Settings s = c;
  s.samples_per_epoch = static_cast<std::int64_t>(n);
  return s;
}

}  // namespace dbs::train
