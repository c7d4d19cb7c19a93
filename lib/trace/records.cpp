#include "lib/trace/records.h"

#include <limits>

#include "lib/policy/ideal.h"

namespace dbs::trace {
namespace {

using nlohmann::json;

constexpr std::int64_t kMaxInt = std::numeric_limits<int>::max();

json phase_json(const Phase& p) {
  return {{"wall_s", p.wall_s}, {"cpu_s", p.cpu_s}};
}

Phase phase_from(const Fields& f, const char* key) {
  if (!f.has(key)) return {};
  const Fields p(f.need(key), std::string("field '") + key + "'");
  return {p.number("wall_s", 0), p.number("cpu_s", 0)};
}

// A number the writer may have had as NaN or infinite (a diverged loss: JSON null): absent.
std::optional<double> optional_number(const Fields& f, const char* key) {
  if (!f.has(key) || !f.need(key).is_number()) return std::nullopt;
  return f.number(key);
}

}  // namespace

Eval eval_of(std::int64_t epoch, double wall_s, double samples, std::span<const double> throughput,
             int replans) {
  Eval e;
  e.epoch = epoch;
  e.wall_s = wall_s;
  e.images_per_s = wall_s > 0 ? samples / wall_s : 0.0;
  e.ideal_s = policy::ideal_time(throughput, samples);
  e.efficiency = wall_s > 0 ? e.ideal_s / wall_s : 0.0;
  e.replans = replans;
  return e;
}

json to_json(const Eval& e) {
  json j = {{"type", "eval"},       {"epoch", e.epoch + 1},
            {"wall_s", e.wall_s},   {"images_per_s", e.images_per_s},
            {"ideal_s", e.ideal_s}, {"efficiency", e.efficiency},
            {"replans", e.replans}};
  if (e.train_loss) j["train_loss"] = *e.train_loss;
  if (e.test_loss) j["test_loss"] = *e.test_loss;
  if (e.test_acc) j["test_acc"] = *e.test_acc;
  if (!e.busy.empty()) {
    j["busy"] = e.busy;
    j["busy_ideal_s"] = e.busy_ideal_s;
  }
  if (!e.missing.empty()) j["missing"] = e.missing;
  if (e.averages > 0) j["averages"] = e.averages;
  if (e.control) j["control"] = to_json(*e.control);
  return j;
}

Eval eval_from_json(const Fields& f) {
  Eval e;
  e.epoch = f.integer("epoch", 1) - 1;
  e.wall_s = f.number("wall_s", 0);
  e.replans = static_cast<int>(f.integer_or("replans", 0, 0, kMaxInt));
  e.images_per_s = f.number_or("images_per_s", 0, 0);
  e.ideal_s = f.number_or("ideal_s", 0, 0);
  e.efficiency = f.number_or("efficiency", 0, 0);
  e.train_loss = optional_number(f, "train_loss");
  e.test_loss = optional_number(f, "test_loss");
  e.test_acc = optional_number(f, "test_acc");
  if (f.has("busy")) {
    e.busy = f.numbers("busy", 0);
    e.busy_ideal_s = f.number_or("busy_ideal_s", 0, 0);
  }
  if (f.has("missing")) e.missing = f.ints("missing", 0);
  e.averages = static_cast<int>(f.integer_or("averages", 0, 0, kMaxInt));
  if (f.has("control")) e.control = control_from_json(f.object("control"));
  return e;
}

json to_json(const Control& c) {
  return {{"reports_s", c.reports_s},
          {"waited_s", c.waited_s},
          {"plan_s", c.plan_s},
          {"daemon_s", c.daemon_s},
          {"total_s", c.total_s()}};
}

Control control_from_json(const Fields& f) {
  // Older traces' check_s (a check's own allgather after planning) is left unread, as total_s;
  // their waited_s, absent, reads as 0.
  Control c;
  c.reports_s = f.number("reports_s", 0);
  c.waited_s = f.number_or("waited_s", 0, 0);
  c.plan_s = f.number("plan_s", 0);
  c.daemon_s = f.number_or("daemon_s", 0, 0);
  return c;
}

json to_json(const TimingRecord& r) {
  const Timing& t = r.timing;
  json j = {{"type", "timing"},
            {"epoch", r.epoch + 1},
            {"rank", r.rank},
            {"steps", t.steps},
            {"wall_s", t.wall_s},
            {"process_cpu_s", t.process_cpu_s},
            {"gather", phase_json(t.gather)},
            {"compute", phase_json(t.compute)},
            {"allreduce", phase_json(t.allreduce)},
            {"update", phase_json(t.update)},
            {"sleep_s", t.sleep_s},
            {"busy_s", t.busy_s}};
  if (t.nr_throttled >= 0) {
    j["quota_cores"] = t.quota_cores;
    j["nr_throttled"] = t.nr_throttled;
    j["throttled_s"] = t.throttled_s;
  }
  return j;
}

// Traces recorded before a field existed lack it: every figure but epoch and rank may be absent
// (0, a phase of zeros, or the throttling unknown).
TimingRecord timing_from_json(const Fields& f) {
  TimingRecord r;
  r.epoch = f.integer("epoch", 1) - 1;
  r.rank = static_cast<int>(f.integer("rank", 0, kMaxInt));
  Timing& t = r.timing;
  t.steps = f.integer_or("steps", 0, 0);
  t.wall_s = f.number_or("wall_s", 0, 0);
  t.process_cpu_s = f.number_or("process_cpu_s", 0, 0);
  t.gather = phase_from(f, "gather");
  t.compute = phase_from(f, "compute");
  t.allreduce = phase_from(f, "allreduce");
  t.update = phase_from(f, "update");
  t.sleep_s = f.number_or("sleep_s", 0, 0);
  t.busy_s = f.number_or("busy_s", 0, 0);
  if (f.has("nr_throttled")) {
    t.quota_cores = f.number_or("quota_cores", 0, 0);
    t.nr_throttled = f.integer("nr_throttled", 0);
    t.throttled_s = f.number_or("throttled_s", 0, 0);
  }
  return r;
}

json to_json(const CpuRecord& r) {
  return {{"type", "cpu"},
          {"epoch", r.epoch + 1},
          {"rank", r.rank},
          {"host", r.host},
          {"quota_cores", r.quota_cores},
          {"nr_throttled", r.nr_throttled},
          {"throttled_s", r.throttled_s},
          {"period_s", r.period_s}};
}

CpuRecord cpu_from_json(const Fields& f) {
  CpuRecord r;
  r.epoch = f.integer("epoch", 1) - 1;
  r.rank = static_cast<int>(f.integer("rank", 0, kMaxInt));
  r.host = f.string_or("host", "");
  r.quota_cores = f.number("quota_cores", 0);
  r.nr_throttled = f.integer("nr_throttled", 0);
  r.throttled_s = f.number("throttled_s", 0);
  r.period_s = f.number_or("period_s", 0, 0);
  return r;
}

}  // namespace dbs::trace
