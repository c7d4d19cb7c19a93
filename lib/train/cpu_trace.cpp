// The agent's timing and cpu records of an epoch (lib/trace/records.h): every rank's timing,
// and the CPU quota and cumulative throttling of the ranks held by a quota (a cgroup cpu limit)
// or ever throttled; nothing on unlimited ranks.
#include <type_traits>

#include "lib/common/cpu_quota.h"
#include "lib/train/trainer.h"

namespace dbs::train {

void Trainer::trace_cpu(std::int64_t epoch) {
  struct Sample {
    double cores = 0;          // 0 = no quota
    double period_s = 0;       // the quota's period
    double throttled_s = 0;
    std::int64_t nr_throttled = 0;
    std::int64_t known = 0;    // 1 when read
  };
  Sample mine;
  if (const auto q = read_cpu_quota()) mine = {q->cores, q->period_s, q->throttled_s, q->nr_throttled, 1};
  std::vector<Sample> all(static_cast<std::size_t>(comm_.size()));
  comm_.allgather_bytes(&mine, sizeof mine, all.data());

  static_assert(std::is_trivially_copyable_v<trace::Timing>);
  timings_.assign(static_cast<std::size_t>(comm_.size()), trace::Timing{});
  comm_.allgather_bytes(&timing_, sizeof timing_, timings_.data());
  if (!trace_) return;
  for (int r = 0; r < comm_.size(); ++r)
    trace_->write(trace::to_json(trace::TimingRecord{epoch, r, timings_[static_cast<std::size_t>(r)]}));
  for (int r = 0; r < comm_.size(); ++r) {
    const Sample& s = all[static_cast<std::size_t>(r)];
    if (s.known == 0 || (s.cores == 0 && s.nr_throttled == 0)) continue;
    trace_->write(trace::to_json(
        trace::CpuRecord{epoch, r, hosts_[static_cast<std::size_t>(r)], s.cores, s.nr_throttled,
                         s.throttled_s, s.period_s}));
  }
}

}  // namespace dbs::train
