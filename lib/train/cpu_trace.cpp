// The end of an epoch's figures: every rank's report, timing, CPU quota, check, the time it reached
// the epoch's end and its share of the daemon's plan in one allgather (one collective, not five: at
// hundreds of ranks each costs the control plane),
// and the timing and cpu records (lib/trace/records.h): every rank's timing, and the CPU quota and
// cumulative throttling of the ranks held by a quota (a cgroup cpu limit) or ever throttled;
// nothing on unlimited ranks.
#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <type_traits>

#include "lib/common/cpu_quota.h"
#include "lib/common/error.h"
#include "lib/common/format.h"
#include "lib/train/stop.h"
#include "lib/train/trainer.h"

namespace dbs::train {

Trainer::Gathered Trainer::gather_epoch(std::int64_t epoch, const Ending& ending) {
  struct Cpu {
    double cores = 0;     // 0 = no quota
    double period_s = 0;  // the quota's period
    double throttled_s = 0;
    std::int64_t nr_throttled = 0;
    std::int64_t known = 0;  // 1 when read
  };
  struct Figures {
    Report report;
    trace::Timing timing;
    Cpu cpu;
    std::uint64_t fingerprint = 0;
    std::int64_t stop = 0;
    double ended_s = 0;              // when the rank reached the epoch's end, wall clock seconds
    std::int64_t carries_share = 0;  // 1: share holds the rank's share of the daemon's plan
    std::array<std::byte, planner::kShareBytes> share{};
  };
  static_assert(std::is_trivially_copyable_v<Figures>);
  Figures mine{ending.report, timing_, {}, ending.fingerprint, stop_signal() != 0 ? 1 : 0,
               ending.ended_s};
  if (ending.share) {
    mine.carries_share = 1;
    mine.share = *ending.share;
  }
  if (const auto& q = ending.quota)
    mine.cpu = {q->cores, q->period_s, q->throttled_s, q->nr_throttled, 1};
  std::vector<Figures> all(static_cast<std::size_t>(comm_.size()));
  comm_.allgather_bytes(&mine, sizeof mine, all.data());

  const auto said = [](std::int64_t carries) {
    return carries != 0 ? "waited for the daemon's plan" : "has no daemon";
  };
  Gathered out;
  double last = mine.ended_s;
  for (const Figures& f : all) last = std::max(last, f.ended_s);
  out.waited_s = last - mine.ended_s;
  timings_.clear();
  for (std::size_t r = 0; r < all.size(); ++r) {
    const Figures& f = all[r];
    if (f.fingerprint != all[0].fingerprint)
      throw CheckError(format(
          "ranks disagree on the plan or the parameters after epoch %lld: "
          "rank 0 has fingerprint %llu, rank %zu has %llu",
          static_cast<long long>(epoch + 1), static_cast<unsigned long long>(all[0].fingerprint), r,
          static_cast<unsigned long long>(f.fingerprint)));
    if (f.carries_share != all[0].carries_share)
      throw CheckError(format(
          "ranks disagree on who plans after epoch %lld: rank 0 %s, rank %zu %s",
          static_cast<long long>(epoch + 1), said(all[0].carries_share), r, said(f.carries_share)));
    out.reports.push_back(f.report);
    if (f.carries_share != 0) out.shares.insert(out.shares.end(), f.share.begin(), f.share.end());
    out.stop = out.stop || f.stop != 0;
    timings_.push_back(f.timing);
  }
  if (!trace_) return out;
  for (int r = 0; r < comm_.size(); ++r)
    trace_->write(
        trace::to_json(trace::TimingRecord{epoch, r, timings_[static_cast<std::size_t>(r)]}));
  for (int r = 0; r < comm_.size(); ++r) {
    const Cpu& s = all[static_cast<std::size_t>(r)].cpu;
    if (s.known == 0 || (s.cores == 0 && s.nr_throttled == 0)) continue;
    trace_->write(
        trace::to_json(trace::CpuRecord{epoch, r, hosts_[static_cast<std::size_t>(r)], s.cores,
                                        s.nr_throttled, s.throttled_s, s.period_s}));
  }
  return out;
}

}  // namespace dbs::train
