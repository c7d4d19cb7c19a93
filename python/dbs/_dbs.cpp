// dbs._dbs: the one binding of the library for Python (dbs.torch and tests use it). Settings,
// Plan and Report with their JSON forms, the step rule (step_batch, offsets_of), the epoch
// permutation of lib/data, the embedded planner and dbs-agent's --disturb spec; Python never re-derives any of them.
// dbs errors arrive as dbs.Error and its subclasses InputError / ConfigError / CommError.
#include <pybind11/numpy.h>
#include <pybind11/operators.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "lib/common/error.h"
#include "lib/common/fields.h"
#include "lib/data/sampler.h"
#include "lib/planner/planner.h"
#include "lib/policy/cost.h"
#include "lib/policy/plan.h"
#include "lib/policy/steps.h"
#include "lib/trace/disturbance.h"

namespace py = pybind11;
using dbs::policy::Plan;
using dbs::policy::Report;
using dbs::policy::Settings;

namespace {

// read(Fields) of a JSON text, errors naming `what` (Fields refers to the JSON, kept alive here).
template <typename Read>
auto from_text(const std::string& text, const std::string& what, Read read) {
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded()) throw dbs::InputError(what + ": not valid JSON");
  return read(dbs::Fields(j, what));
}

// One rank's report over a run of steps: (local batch, compute seconds) per step, as lib/train
// makes it (samples, compute_s, the median step rate, the work-time points of the cost model).
Report make_report(int rank, std::int64_t epoch, int batch,
                   const std::vector<std::pair<int, double>>& steps) {
  Report r;
  r.rank = rank;
  r.epoch = epoch;
  r.batch = batch;
  r.steps = static_cast<std::int64_t>(steps.size());
  std::vector<std::pair<double, std::int64_t>> rates;
  for (const auto& [n, t] : steps) {
    r.samples += n;
    r.compute_s += t;
    if (n > 0 && t > 0) rates.emplace_back(n / t, 1);
  }
  r.step_rate_median = dbs::policy::median_rate(std::move(rates));
  r.work = dbs::policy::cost_points(steps);
  return r;
}

py::array_t<std::int64_t> permutation(std::size_t n, std::uint64_t seed, std::uint64_t epoch) {
  const std::vector<std::int64_t> p = dbs::data::EpochSampler(n, seed).permutation(epoch);
  py::array_t<std::int64_t> out(static_cast<py::ssize_t>(p.size()));
  std::copy(p.begin(), p.end(), out.mutable_data());
  return out;
}

}  // namespace

PYBIND11_MODULE(_dbs, m) {
  m.doc() = "The dbs library: plans, reports, the step rule, the epoch permutation, planners.";

  // Translators run newest first: the base type is registered first so that it catches last.
  static py::exception<dbs::Error> error(m, "Error", PyExc_RuntimeError);
  static py::exception<dbs::InputError> input_error(m, "InputError", error.ptr());
  static py::exception<dbs::ConfigError> config_error(m, "ConfigError", error.ptr());
  static py::exception<dbs::CommError> comm_error(m, "CommError", error.ptr());
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
      .def_readwrite("policy", &Settings::policy)
      .def_readwrite("global_batch", &Settings::global_batch)
      .def_readwrite("samples_per_epoch", &Settings::samples_per_epoch)
      .def_readwrite("min_batch", &Settings::min_batch)
      .def_readwrite("max_batch", &Settings::max_batch)
      .def_readwrite("min_gain", &Settings::min_gain)
      .def_readwrite("rebalance_every", &Settings::rebalance_every)
      .def("to_json", [](const Settings& s) { return dbs::policy::to_json(s).dump(); })
      .def_static("from_json", [](const std::string& text) {
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
      .def_static("from_json", [](const std::string& text) {
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
        "One rank's report from its steps: a list of (local batch, compute seconds).");
  m.def("step_batch", &dbs::policy::step_batch, py::arg("plan"), py::arg("samples"),
        "Per-rank sizes of a global step of `samples` samples under plan.");
  m.def("offsets_of", &dbs::policy::offsets_of, py::arg("batch"),
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

  py::class_<dbs::planner::Embedded>(m, "EmbeddedPlanner")
      .def(py::init<const Settings&, int>(), py::arg("settings"), py::arg("world"))
      .def("plan", &dbs::planner::Embedded::plan, "The plan in force.")
      .def(
          "next",
          [](dbs::planner::Embedded& e, const std::vector<Report>& reports) {
            auto planned = e.next(reports);
            return std::make_pair(planned.plan, planned.source);
          },
          py::arg("reports"), "The next epoch's plan from every rank's report; (plan, source).")
      .def(
          "rebalance",
          [](dbs::planner::Embedded& e, const std::vector<Report>& window) {
            return e.rebalance(window).has_value();
          },
          py::arg("window"), "Re-plans inside the epoch; True when the plan in force changed.")
      .def("state", &dbs::planner::Embedded::state)
      .def("set_state", &dbs::planner::Embedded::set_state, py::arg("plan"), py::arg("state"))
      .def("adopt", &dbs::planner::Embedded::adopt, py::arg("plan"));
}
