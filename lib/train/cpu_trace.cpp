// "cpu" trace records: each rank's CPU quota and cumulative throttling after every epoch, for
// ranks held by a quota (a cgroup cpu limit) or ever throttled; nothing on unlimited ranks.
// "timing" records: where each rank's epoch went (EpochTiming), every rank, every epoch.
#include "lib/common/cpu_quota.h"
#include "lib/train/state.h"

namespace dbs::train::detail {
namespace {

nlohmann::json phase_json(const Phase& p) {
  return {{"wall_s", p.wall_s}, {"cpu_s", p.cpu_s}};
}

void trace_timing(State& st, std::int64_t epoch) {
  static_assert(std::is_trivially_copyable_v<EpochTiming>);
  std::vector<EpochTiming>& all = st.timings;
  all.assign(static_cast<std::size_t>(st.comm.size()), EpochTiming{});
  st.comm.allgather_bytes(&st.timing, sizeof st.timing, all.data());
  if (!st.trace) return;
  for (int r = 0; r < st.comm.size(); ++r) {
    const EpochTiming& t = all[static_cast<std::size_t>(r)];
    nlohmann::json rec = {{"type", "timing"},       {"epoch", epoch + 1},
                          {"rank", r},              {"steps", t.steps},
                          {"wall_s", t.wall_s},     {"process_cpu_s", t.process_cpu_s},
                          {"gather", phase_json(t.gather)},
                          {"compute", phase_json(t.compute)},
                          {"allreduce", phase_json(t.allreduce)},
                          {"update", phase_json(t.update)},
                          {"sleep_s", t.sleep_s},   {"busy_s", t.busy_s}};
    if (t.nr_throttled >= 0) {
      rec["quota_cores"] = t.quota_cores;
      rec["nr_throttled"] = t.nr_throttled;
      rec["throttled_s"] = t.throttled_s;
    }
    st.trace->write(rec);
  }
}

}  // namespace

void trace_cpu(State& st, std::int64_t epoch) {
  struct Sample {
    double cores = 0;          // 0 = no quota
    double throttled_s = 0;
    std::int64_t nr_throttled = 0;
    std::int64_t known = 0;    // 1 when read
  };
  Sample mine;
  if (const auto q = read_cpu_quota()) mine = {q->cores, q->throttled_s, q->nr_throttled, 1};
  std::vector<Sample> all(static_cast<std::size_t>(st.comm.size()));
  st.comm.allgather_bytes(&mine, sizeof mine, all.data());
  trace_timing(st, epoch);
  if (!st.trace) return;
  for (int r = 0; r < st.comm.size(); ++r) {
    const Sample& s = all[r];
    if (s.known == 0 || (s.cores == 0 && s.nr_throttled == 0)) continue;
    st.trace->write({{"type", "cpu"}, {"epoch", epoch + 1}, {"rank", r}, {"host", st.hosts[r]},
                     {"quota_cores", s.cores}, {"nr_throttled", s.nr_throttled},
                     {"throttled_s", s.throttled_s}});
  }
}

}  // namespace dbs::train::detail
