#include "lib/policy/plan.h"

namespace dbs::policy {

std::vector<int> offsets_of(const std::vector<int>& batch) {
  std::vector<int> offset(batch.size());
  int at = 0;
  for (std::size_t i = 0; i < batch.size(); ++i) {
    offset[i] = at;
    at += batch[i];
  }
  return offset;
}

}  // namespace dbs::policy
