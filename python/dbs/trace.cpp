// dbs._dbs.TraceWriter: the library's trace writer (lib/trace) for Python, so that dbs.torch
// writes the records of dbs-agent's trace format through their one home (dbs/torch/trace.py
// uses it on rank 0), and dbs._dbs.make_policy: the pure policy objects, for a job whose plans
// no planner makes (plain DDP's equal split, recorded under policy static).
#include "lib/trace/trace.h"

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "lib/common/error.h"
#include "lib/policy/ideal.h"
#include "lib/policy/plan.h"
#include "lib/policy/policy.h"
#include "lib/trace/records.h"

namespace py = pybind11;

namespace {

using dbs::Plan;
using dbs::Report;
using dbs::Settings;

// A trace file being written: the header at construction (unless appending), then records.
class TraceWriter {
 public:
  TraceWriter(const std::string& path, const Settings& settings, int world,
              const std::string& run_json, bool append) {
    const nlohmann::json run = nlohmann::json::parse(run_json, nullptr, false);
    if (run.is_discarded() || !run.is_object())
      throw dbs::InputError("trace run config: not a JSON object");
    writer_ = std::make_unique<dbs::trace::Writer>(
        path, dbs::trace::header(dbs::trace::run_config(settings, world, run)), append);
  }

  void plan(const Plan& plan, std::int64_t step, const std::string& source) {
    open().write(dbs::trace::plan_record(plan, step, source));
  }
  void rank(const Report& report, const std::string& host) {
    open().write(dbs::trace::rank_record(report, host));
  }
  void timing(std::int64_t epoch, int rank, const dbs::trace::Timing& t) {
    open().write(dbs::trace::to_json(dbs::trace::TimingRecord{epoch, rank, t}));
  }
  void cpu(const dbs::trace::CpuRecord& r) { open().write(dbs::trace::to_json(r)); }
  // The eval record of the epoch of `reports` (one per rank, in rank order): wall_s its
  // training time, busy_s per rank the seconds it worked (busy and busy_ideal_s as the agent
  // writes them).
  void eval(const std::vector<Report>& reports, double wall_s, const std::vector<double>& busy_s,
            int replans) {
    if (reports.empty() || busy_s.size() != reports.size())
      throw dbs::InputError("trace eval: " + std::to_string(reports.size()) + " reports and " +
                            std::to_string(busy_s.size()) + " busy times");
    double samples = 0;
    std::vector<double> throughput, busy_rate;
    for (const Report& r : reports) {
      samples += static_cast<double>(r.samples);
      throughput.push_back(r.throughput());
    }
    dbs::trace::Eval ev =
        dbs::trace::eval_of(reports[0].epoch, wall_s, samples, throughput, replans);
    for (std::size_t i = 0; i < reports.size(); ++i) {
      ev.busy.push_back(wall_s > 0 ? busy_s[i] / wall_s : 0.0);
      busy_rate.push_back(busy_s[i] > 0 ? static_cast<double>(reports[i].samples) / busy_s[i]
                                        : 0.0);
    }
    ev.busy_ideal_s = dbs::policy::ideal_time(busy_rate, samples);
    open().write(dbs::trace::to_json(ev));
  }
  void flush() { open().flush(); }
  void close() { writer_.reset(); }

 private:
  dbs::trace::Writer& open() {
    if (!writer_) throw dbs::InputError("trace: written after close()");
    return *writer_;
  }
  std::unique_ptr<dbs::trace::Writer> writer_;
};

}  // namespace

void bind_trace(py::module_& m) {
  py::class_<TraceWriter>(m, "TraceWriter",
                          "A dbs-trace file (docs/reference/trace-format.md), written a record at "
                          "a time; epochs 0-based here, 1-based in the file.")
      .def(py::init<const std::string&, const Settings&, int, const std::string&, bool>(),
           py::arg("path"), py::arg("settings"), py::arg("world"), py::arg("run_json"),
           py::arg("append") = false,
           "Opens path (InputError naming it when it cannot) and writes the header: the "
           "settings, world and run_json (a JSON object: what the recorder knows); with "
           "append, continues an existing trace without a header.")
      .def("plan", &TraceWriter::plan, py::arg("plan"), py::arg("step"), py::arg("source"),
           "A plan record: the plan an epoch runs under (step 0) or a re-plan after `step` steps.")
      .def("rank", &TraceWriter::rank, py::arg("report"), py::arg("host"), "A rank record.")
      .def(
          "timing",
          [](TraceWriter& w, std::int64_t epoch, int rank, std::int64_t steps, double wall_s,
             double process_cpu_s, double gather_s, double compute_s, double allreduce_s,
             double update_s, double sleep_s, double busy_s, double quota_cores,
             std::int64_t nr_throttled, double throttled_s) {
            dbs::trace::Timing t;
            if (nr_throttled >= 0) {
              t.quota_cores = quota_cores;
              t.nr_throttled = nr_throttled;
              t.throttled_s = throttled_s;
            }
            t.steps = steps;
            t.wall_s = wall_s;
            t.process_cpu_s = process_cpu_s;
            t.gather.wall_s = gather_s;
            t.compute.wall_s = compute_s;
            t.allreduce.wall_s = allreduce_s;
            t.update.wall_s = update_s;
            t.sleep_s = sleep_s;
            t.busy_s = busy_s;
            w.timing(epoch, rank, t);
          },
          py::arg("epoch"), py::arg("rank"), py::kw_only(), py::arg("steps"), py::arg("wall_s"),
          py::arg("process_cpu_s"), py::arg("gather_s") = 0.0, py::arg("compute_s"),
          py::arg("allreduce_s"), py::arg("update_s"), py::arg("sleep_s"), py::arg("busy_s"),
          py::arg("quota_cores") = 0.0, py::arg("nr_throttled") = -1, py::arg("throttled_s") = 0.0,
          "A timing record of one rank's epoch: wall seconds of each phase summed over its "
          "steps (no CPU time per phase); with nr_throttled >= 0 also its cgroup's CPU quota "
          "in cores and the periods and seconds it was throttled during the epoch.")
      .def(
          "cpu",
          [](TraceWriter& w, std::int64_t epoch, int rank, const std::string& host,
             double quota_cores, std::int64_t nr_throttled, double throttled_s, double period_s) {
            w.cpu({epoch, rank, host, quota_cores, nr_throttled, throttled_s, period_s});
          },
          py::arg("epoch"), py::arg("rank"), py::kw_only(), py::arg("host"), py::arg("quota_cores"),
          py::arg("nr_throttled"), py::arg("throttled_s"), py::arg("period_s"),
          "A cpu record: a rank's cgroup CPU quota (cores, 0 = none) and period, and its "
          "throttled periods and seconds since the cgroup's creation, at the end of an epoch.")
      .def("eval", &TraceWriter::eval, py::arg("reports"), py::arg("wall_s"), py::arg("busy_s"),
           py::arg("replans"),
           "The eval record of the epoch of `reports` (every rank's): its training time wall_s "
           "and each rank's work seconds busy_s.")
      .def("flush", &TraceWriter::flush, "Makes the records written so far durable (fsync).")
      .def("close", &TraceWriter::close, "Closes the file.");

  py::class_<dbs::policy::Policy>(m, "Policy",
                                  "A pure policy: the plans of settings.policy from reports, with "
                                  "no collective and no daemon.")
      .def("initial", &dbs::policy::Policy::initial, "The plan of epoch 0.")
      .def(
          "next",
          [](dbs::policy::Policy& p, const Plan& current, const std::vector<Report>& reports) {
            return p.next(current, reports);
          },
          py::arg("current"), py::arg("reports"),
          "The plan of current.epoch + 1 from every rank's report of current.epoch.");
  m.def("make_policy", &dbs::policy::make_policy, py::arg("settings"), py::arg("world"),
        "The policy settings.policy names for `world` ranks; ConfigError for a bad one.");
}
