// dbs._dbs: the one binding of the library for Python (dbs.torch and tests use it). Settings,
// Plan and Report with their JSON forms, the step rule (step_batch, offsets_of), the epoch
// permutation of lib/data, the way to the daemon (Remote: plain TCP or TLS, a job key or munge),
// the planner (embedded, or the daemon's: make_planner), dbs-agent's --disturb spec, and
// (trace.cpp) the trace writer and the pure policies; Python never re-derives any of them.
// dbs errors arrive as dbs.Error and its subclasses InputError / ConfigError (also a
// ValueError) / CommError.
#include <dbs/meter.h>
#include <dbs/planner.h>
#include <pybind11/numpy.h>
#include <pybind11/operators.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "lib/auth/credential.h"
#include "lib/common/cpu_quota.h"
#include "lib/common/error.h"
#include "lib/common/fields.h"
#include "lib/data/sampler.h"
#include "lib/planner/remote_check.h"
#include "lib/policy/cost.h"
#include "lib/policy/plan.h"
#include "lib/policy/steps.h"
#include "lib/trace/disturbance.h"

namespace py = pybind11;
using dbs::Plan;
using dbs::Report;
using dbs::Settings;

namespace {

// read(Fields) of a JSON text, errors naming `what` (Fields refers to the JSON, kept alive here).
template <typename Read>
auto from_text(const std::string& text, const std::string& what, Read read) {
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded()) throw dbs::InputError(what + ": not valid JSON");
  return read(dbs::Fields(j, what));
}

// One rank's report over a run of steps: (local batch, work seconds, allreduce seconds, compute
// seconds) per step, through dbs::Meter as every client of dbs makes it (samples, compute_s and
// comm_s summed, the median step rate from compute, the work-time points of the cost model).
Report make_report(int rank, std::int64_t epoch, int batch,
                   const std::vector<std::tuple<int, double, double, double>>& steps) {
  dbs::Meter meter;
  for (const auto& [n, work_s, comm_s, compute_s] : steps) meter.step(n, work_s, comm_s, compute_s);
  Plan plan;
  plan.epoch = epoch;
  plan.batch.assign(static_cast<std::size_t>(rank) + 1, 0);
  plan.batch[static_cast<std::size_t>(rank)] = batch;
  return meter.report(plan, rank);
}

// Cores of this process's CPU quota (its cgroup's quota / period); 0 without a quota or where it
// cannot be read.
double cpu_quota() {
  const std::optional<dbs::CpuQuota> q = dbs::read_cpu_quota();
  return q ? q->cores : 0.0;
}

py::array_t<std::int64_t> permutation(std::size_t n, std::uint64_t seed, std::uint64_t epoch) {
  const std::vector<std::int64_t> p = dbs::data::EpochSampler(n, seed).permutation(epoch);
  py::array_t<std::int64_t> out(static_cast<py::ssize_t>(p.size()));
  std::copy(p.begin(), p.end(), out.mutable_data());
  return out;
}

// The library's Allgather over a Python callable f(bytes) -> bytes of world * len(in) bytes
// (rank r's at r * len): called without the GIL, it takes it for the call. A Python exception
// in f goes on through the planner to its caller.
dbs::Allgather python_allgather(py::function f, int world) {
  // Dropped with the GIL held, whichever thread lets go of the last copy.
  std::shared_ptr<py::function> fn(new py::function(std::move(f)), [](py::function* p) {
    py::gil_scoped_acquire gil;
    delete p;
  });
  return [fn, world](const void* in, std::size_t bytes, void* out) {
    py::gil_scoped_acquire gil;
    py::object got = (*fn)(py::bytes(static_cast<const char*>(in), bytes));
    if (!py::isinstance<py::bytes>(got))
      throw dbs::CommError("allgather returned " + std::string(py::str(got.get_type())) +
                           ", not bytes");
    const std::string all = got.cast<std::string>();
    if (all.size() != bytes * static_cast<std::size_t>(world))
      throw dbs::CommError("allgather returned " + std::to_string(all.size()) + " bytes, not " +
                           std::to_string(world) + " x " + std::to_string(bytes));
    std::memcpy(out, all.data(), all.size());
  };
}

// A job's planner for Python: dbs::make_planner's, whose finish() (goodbye to the daemon, after
// which it no longer connects) runs once however often Python calls it.
class JobPlanner {
 public:
  explicit JobPlanner(std::unique_ptr<dbs::Planner> planner) : planner_(std::move(planner)) {}
  dbs::Planner& planner() { return *planner_; }
  void finish(bool done) {
    if (finished_) return;
    finished_ = true;
    planner_->finish(done);
  }

 private:
  std::unique_ptr<dbs::Planner> planner_;
  bool finished_ = false;
};

// A Remote from Python's keyword arguments: the auth word parsed, and what needs no file checked
// (an address of HOST:PORT with a job, timeouts > 0), each ConfigError naming the argument. The
// files (tls_ca, token_file) are read by make_planner on every rank, whose collective verdict
// raises on every rank when one of them is bad.
dbs::Remote make_remote(const std::string& address, const std::string& job,
                        const std::string& token_file, double timeout_s, double connect_timeout_s,
                        const std::string& tls_ca, const std::string& auth,
                        const std::string& munge_socket) {
  dbs::Remote r;
  r.address = address;
  r.job = job;
  r.token_file = token_file;
  r.timeout_s = timeout_s;
  r.connect_timeout_s = connect_timeout_s;
  r.tls_ca = tls_ca;
  r.auth = dbs::planner::parse_auth(auth);
  r.munge_socket = munge_socket;
  dbs::planner::check_form(r);
  return r;
}

JobPlanner make_planner(const Settings& settings, int rank, int world, py::function allgather,
                        const dbs::Remote& remote) {
  dbs::Group group;
  group.rank = rank;
  group.size = world;
  group.allgather = python_allgather(std::move(allgather), world);
  py::gil_scoped_release release;
  return JobPlanner(dbs::make_planner(settings, group, remote));
}

}  // namespace

void bind_trace(py::module_& m);  // trace.cpp: TraceWriter, Policy, make_policy

PYBIND11_MODULE(_dbs, m) {
  m.doc() = "The dbs library: plans, reports, the step rule, the epoch permutation, planners.";

  // The exception family of dbs in Python (dbs.PlanError, in dbs/__init__.py, is the fifth).
  // ConfigError is also a ValueError: the bad arguments Python code raises ValueError for, so
  // `except ValueError` catches them as it would in any library. Translators run newest first:
  // the base type is registered first so that it catches last.
  static py::exception<dbs::Error> error(m, "Error", PyExc_RuntimeError);
  static py::exception<dbs::InputError> input_error(m, "InputError", error.ptr());
  static py::exception<dbs::ConfigError> config_error(
      m, "ConfigError", py::make_tuple(error, py::handle(PyExc_ValueError)));
  static py::exception<dbs::CommError> comm_error(m, "CommError", error.ptr());
  error.attr("__doc__") = "The base of every error dbs raises (a RuntimeError).";
  input_error.attr("__doc__") =
      "A file, field or message from outside is bad (a trace, a plan, a report): the message "
      "names it; stop using that input.";
  config_error.attr("__doc__") =
      "A bad setting, or a call the script must change: an argument or environment variable, "
      "ranks that disagree, a state_dict of another run, epochs out of order. Raised on every "
      "rank before training goes on; fix the script and start again. Also a ValueError.";
  comm_error.attr("__doc__") =
      "The ranks' collectives failed (a peer or the network): the job cannot go on.";
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const dbs::InputError& e) {
      PyErr_SetString(input_error.ptr(), e.what());
    } catch (const dbs::ConfigError& e) {
      PyErr_SetString(config_error.ptr(), e.what());
    } catch (const dbs::CommError& e) {
      PyErr_SetString(comm_error.ptr(), e.what());
    } catch (const dbs::Error& e) {
      PyErr_SetString(error.ptr(), e.what());
    }
  });

  py::class_<Settings>(m, "Settings")
      .def(py::init<>())
      .def_property(
          "policy", [](const Settings& s) { return dbs::to_string(s.policy); },
          [](Settings& s, const std::string& text) { s.policy = dbs::parse_policy(text); },
          "'dbs', 'dbs-rate', 'static' or 'fixed:b0,b1,...'; ConfigError on assignment for "
          "another name or a fixed: size that is not an integer >= 1")
      .def_readwrite("global_batch", &Settings::global_batch)
      .def_readwrite("samples_per_epoch", &Settings::samples_per_epoch)
      .def_readwrite("min_batch", &Settings::min_batch)
      .def_readwrite("max_batch", &Settings::max_batch)
      .def_readwrite("min_gain", &Settings::min_gain)
      .def_readwrite("rebalance_every", &Settings::rebalance_every)
      .def_readwrite("average_every", &Settings::average_every)
      .def_readwrite("average_after_epochs", &Settings::average_after_epochs)
      .def("to_json", [](const Settings& s) { return dbs::policy::to_json(s).dump(); })
      .def_static("from_json",
                  [](const std::string& text) {
                    return from_text(text, "settings", dbs::policy::settings_from_json);
                  })
      .def(py::self == py::self);

  py::class_<Plan>(m, "Plan")
      .def_readonly("epoch", &Plan::epoch, "0-based epoch the plan is for")
      .def_readonly("global_batch", &Plan::global_batch)
      .def_readonly("batch", &Plan::batch)
      .def_readonly("offset", &Plan::offset)
      .def_readonly("throughput", &Plan::throughput)
      .def_readonly("predicted_epoch_s", &Plan::predicted_epoch_s)
      .def_readonly("ideal_epoch_s", &Plan::ideal_epoch_s)
      .def_readonly("changed", &Plan::changed)
      .def_readonly("reason", &Plan::reason)
      .def("world", &Plan::world)
      .def("to_json", [](const Plan& p) { return dbs::policy::to_json(p).dump(); })
      .def_static("from_json",
                  [](const std::string& text) {
                    return from_text(text, "plan", dbs::policy::plan_from_json);
                  })
      .def(py::self == py::self);

  py::class_<Report>(m, "Report")
      .def_readonly("rank", &Report::rank)
      .def_readonly("epoch", &Report::epoch)
      .def_readonly("batch", &Report::batch)
      .def_readonly("samples", &Report::samples)
      .def_readonly("compute_s", &Report::compute_s)
      .def_readonly("steps", &Report::steps)
      .def_readonly("step_rate_median", &Report::step_rate_median)
      .def("throughput", &Report::throughput)
      .def("to_json", [](const Report& r) { return dbs::policy::to_json(r).dump(); })
      .def_static("from_json", [](const std::string& text) {
        return from_text(text, "report", dbs::policy::report_from_json);
      });

  m.def("make_report", &make_report, py::arg("rank"), py::arg("epoch"), py::arg("batch"),
        py::arg("steps"),
        "One rank's report from its steps: a list of (local batch, work seconds, allreduce "
        "seconds, compute seconds), as dbs::Meter takes them.");
  m.def("cpu_quota", &cpu_quota,
        "Cores of this process's cgroup CPU quota (0 = none or unreadable).");
  m.def(
      "cpu_quota_state",
      []() -> std::optional<std::tuple<double, double, std::int64_t, double>> {
        const std::optional<dbs::CpuQuota> q = dbs::read_cpu_quota();
        if (!q) return std::nullopt;
        return std::make_tuple(q->cores, q->period_s, q->nr_throttled, q->throttled_s);
      },
      "This process's cgroup CPU quota and counters as (cores, period_s, nr_throttled, "
      "throttled_s): cores 0 = no quota; the counters since the cgroup's creation. None where "
      "they cannot be read.");
  py::class_<dbs::SustainedTime>(
      m, "SustainedTime",
      "A quota-held rank's work time, stretch after stretch, at the rate its quota of `cores` "
      "sustains (dbs-agent's measure); cores 0: its wall time.")
      .def(py::init<double>(), py::arg("cores"))
      .def("add", &dbs::SustainedTime::add, py::arg("wall_s"), py::arg("cpu_s"),
           "The work seconds of a stretch of wall_s seconds that used cpu_s of process CPU.")
      .def_property_readonly("cores", &dbs::SustainedTime::cores);
  m.def("step_batch", &dbs::step_batch, py::arg("plan"), py::arg("samples"),
        "Per-rank sizes of a global step of `samples` samples under plan.");
  m.def("offsets_of", &dbs::offsets_of, py::arg("batch"),
        "Rank i takes [o_i, o_i + b_i) of a global step.");
  m.def("permutation", &permutation, py::arg("n"), py::arg("seed"), py::arg("epoch"),
        "The epoch's permutation of range(n) (int64), the same as dbs-agent's for the seed.");

  using dbs::trace::Disturbance;
  py::class_<Disturbance>(m, "Disturbance", "An injected slowdown, dbs-agent's --disturb.")
      .def_readonly("rank", &Disturbance::rank)
      .def_readonly("factor", &Disturbance::factor)
      .def_readonly("from_epoch", &Disturbance::from, "1-based, fractional, inclusive")
      .def_readonly("to_epoch", &Disturbance::to, "1-based, fractional, exclusive; < 0: never")
      .def_property_readonly("mode", [](const Disturbance& d) { return dbs::trace::name(d.mode); })
      .def("active_at", &Disturbance::active_at, py::arg("progress"),
           "Active at progress (1.0 = the start of the first epoch).")
      .def("__str__", [](const Disturbance& d) { return dbs::trace::to_string(d); });
  m.def("parse_disturbance", &dbs::trace::parse_disturbance, py::arg("spec"),
        "rank=R,factor=F[,from=E][,to=E][,mode=sleep|hog]; ConfigError names the bad field.");

  // The way to the daemon (dbs::Remote, <dbs/planner.h>), one value for Balancer(remote=...)
  // and make_planner; its fields are read-only once made.
  py::class_<dbs::Remote>(m, "Remote",
                          "The way to dbs-scheduler serve: address 'HOST:PORT' ('' = no daemon, "
                          "the embedded policy plans), job the job id there (the same on every "
                          "rank; required with an address), token_file the job's key "
                          "(dbs-scheduler job-key), timeout_s the wait for the daemon's plan at "
                          "an epoch's end, connect_timeout_s per connection attempt, tls_ca a "
                          "PEM CA file (TLS to the daemon, its certificate verified; '' = plain "
                          "TCP), auth 'auto' (token_file when given, else munge when built), "
                          "'token' or 'munge' (a munge credential of the user; the job is that "
                          "uid's), munge_socket munged's socket ('' = munge's default). "
                          "ConfigError naming the argument for an address that is not "
                          "HOST:PORT, an address without a job, a timeout <= 0, another auth "
                          "word or 'munge' where dbs is built without it; the files are read "
                          "when the planner is made.")
      .def(py::init(&make_remote), py::kw_only(), py::arg("address") = "", py::arg("job") = "",
           py::arg("token_file") = "", py::arg("timeout_s") = 10.0,
           py::arg("connect_timeout_s") = 2.0, py::arg("tls_ca") = "", py::arg("auth") = "auto",
           py::arg("munge_socket") = "")
      .def_readonly("address", &dbs::Remote::address)
      .def_readonly("job", &dbs::Remote::job)
      .def_readonly("token_file", &dbs::Remote::token_file)
      .def_readonly("timeout_s", &dbs::Remote::timeout_s)
      .def_readonly("connect_timeout_s", &dbs::Remote::connect_timeout_s)
      .def_readonly("tls_ca", &dbs::Remote::tls_ca)
      .def_property_readonly("auth",
                             [](const dbs::Remote& r) { return dbs::planner::name(r.auth); })
      .def_readonly("munge_socket", &dbs::Remote::munge_socket)
      .def("__repr__",
           [](const dbs::Remote& r) {
             return "dbs.Remote(address=" + py::repr(py::str(r.address)).cast<std::string>() +
                    ", job=" + py::repr(py::str(r.job)).cast<std::string>() + ", auth='" +
                    dbs::planner::name(r.auth) + "')";
           })
      .def(py::self == py::self);

  // The planner of a job (<dbs/planner.h>): the embedded policy, or the daemon with the
  // embedded policy as its fallback. Its collectives call `allgather` (a Python callable, see
  // make_planner below); every method releases the GIL and the callback takes it back.
  using release = py::call_guard<py::gil_scoped_release>;
  py::class_<JobPlanner>(m, "Planner")
      .def(
          "plan", [](JobPlanner& p) { return p.planner().plan(); }, release(), "The plan in force.")
      .def(
          "next",
          [](JobPlanner& p, const std::vector<Report>& reports) {
            auto planned = p.planner().next(reports);
            return std::make_pair(planned.plan, planned.source);
          },
          py::arg("reports"), release(),
          "The next epoch's plan from every rank's report (a collective with a daemon); "
          "(plan, source): source 'embedded', 'daemon' or 'embedded-fallback'.")
      .def(
          "fallback",
          [](JobPlanner& p) {
            const dbs::Fallback f = dbs::last_fallback(p.planner());
            using Cause = dbs::Fallback::Cause;
            const char* cause = f.cause == Cause::foreign  ? "foreign"
                                : f.cause == Cause::outage ? "outage"
                                                           : "none";
            return std::make_pair(std::string(cause), f.why);
          },
          release(),
          "Why the daemon's plan of the last next() was not used, the same cause on every rank: "
          "(cause, why), cause 'none' (the daemon planned, or no daemon), 'outage' (unreachable, "
          "late, refusing, untrusted, or the ranks held different plans) or 'foreign' (a rank "
          "received a plan for another job); why as the log says it.")
      .def(
          "rebalance",
          [](JobPlanner& p, const std::vector<Report>& window) {
            return p.planner().rebalance(window).has_value();
          },
          py::arg("window"), release(),
          "Re-plans inside the epoch; True when the plan in force changed.")
      .def(
          "state", [](JobPlanner& p) { return p.planner().state(); }, release())
      .def(
          "set_state",
          [](JobPlanner& p, const Plan& plan, const std::vector<double>& state) {
            p.planner().set_state(plan, state);
          },
          py::arg("plan"), py::arg("state"), release())
      .def("finish", &JobPlanner::finish, py::arg("done"), release(),
           "This rank leaves the job (done: all epochs trained): goodbye to the daemon; the "
           "plan and state stay.");
  m.def("make_planner", &make_planner, py::arg("settings"), py::arg("rank"), py::arg("world"),
        py::arg("allgather"), py::arg("remote") = dbs::Remote{},
        "The job's planner on this rank, a collective (dbs::make_planner): allgather(bytes) -> "
        "bytes, every rank's equal-sized bytes in rank order; remote the daemon (dbs.Remote; "
        "the default, no address, is the embedded policy only). ConfigError on every rank when "
        "the ranks' settings differ, any rank has a bad policy, or any rank's remote is at "
        "fault (a tls_ca or token_file it cannot read, auth 'token' without token_file: the "
        "rank at fault names the argument, the others name that rank).");
  m.def("munge_built", &dbs::auth::munge_built,
        "Whether this dbs was built with munge (auth='munge' needs it).");
  bind_trace(m);
}
