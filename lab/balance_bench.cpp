// dbs-lab balance (run under mpirun): the same short training under several policies with the
// same disturbance; per-epoch wall and ideal times, the steady-state ratio to the ideal, and the
// speedup over static. A run is "static", "dbs", "dbs-rate", "fixed:..." or "dbs@K" (dbs
// re-planning every K steps as well; also dbs-rate@K).
//
// --quota RANK=CORES puts every rank in a CPU cgroup of its own (lab/cgroup.h; ranks without a
// quota unlimited) for the whole benchmark; --quota none, as --disturb none, holds none. The
// independent ideal: before the runs, each rank in turn trains alone (a world of one, global batch
// B, --solo-epochs epochs of --solo-limit samples) while the others sleep in a barrier; its rate
// v_r is the last solo epoch's samples / wall s, and independent_ideal_s = N / sum_r v_r per epoch:
// what a perfect split of the data would take with every rank at its stand-alone speed. The
// stand-alone runs are made again after the policy runs (unless --no-solo-after):
// independent_ideal_after_s, and independent_drift = after / before - 1, say how much the machine's
// speed moved meanwhile (a shared VM's cores do: the ratios to the ideal are only as good as that).
// Unless --no-solo-between, they are made between the policy runs too, so that each run is
// bracketed by the stand-alone runs just before and just after it: its bracket ideal is the mean of
// those two ideals (steady_ratio_to_bracket), its bracket_drift how far they differ. The
// whole-benchmark ideals compare a run with rates measured minutes away from it; on this VM those
// moved by up to 22% on one rank between the first and the last stand-alone run. Unless
// --no-solo-concurrent, every round is followed by a concurrent one: all ranks train alone at the
// same time (concurrent_rate, concurrent_ideal_s, steady_ratio_to_concurrent_bracket). On one host,
// ranks slow each other down even without communicating (the other vCPU, caches, memory bandwidth):
// the one-at-a-time ideal leaves that out, the concurrent one includes it. On separate hosts the
// two agree. Inside each run: per epoch busy (per rank, the part of the epoch it worked at its
// sustained rate) and busy_ideal_s (the best split for the speeds the ranks had in that epoch);
// steady_ratio_to_busy_ideal is what the plan left idle, free of the machine's drift. Rank 0 prints
// the JSON on stdout, then the steady-state figures as a table on stderr (print_summary).
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <system_error>
#include <tuple>

#include "lab/balance.h"
#include "lab/cgroup.h"
#include "lab/lab.h"
#include "lib/comm/mpi.h"
#include "lib/common/cli.h"
#include "lib/common/error.h"
#include "lib/common/format.h"
#include "lib/common/log.h"
#include "lib/data/dataset.h"
#include "lib/nn/threads.h"
#include "lib/policy/ideal.h"
#include "lib/policy/policy.h"
#include "lib/train/trainer.h"

namespace dbs::lab {

using policy::ideal_time;  // N / sum of the rates, 0 without rates

// --disturb specs; "" and "none" add nothing.
std::vector<trace::Disturbance> disturbances(const BalanceOptions& o) {
  std::vector<trace::Disturbance> out;
  for (const auto& d : o.disturb)
    if (!d.empty() && d != "none") out.push_back(trace::parse_disturbance(d));
  return out;
}

train::Config base_config(const BalanceOptions& o) {
  train::Config c;
  c.model = o.model;
  c.threads = o.threads;
  c.global_batch = o.batch;
  c.epochs = o.epochs;
  c.train_limit = o.train_limit;
  c.test_limit = o.test_limit;
  c.progress = false;
  c.table = false;
  c.wait = o.wait;
  c.allreduce = o.allreduce;
  c.min_gain = o.min_gain;
  return c;
}

namespace {

// --quota values by rank; throws ConfigError naming the value at fault.
std::map<int, double> parse_quotas(const std::vector<std::string>& specs, int world) {
  std::map<int, double> out;
  for (const std::string& s : specs) {
    const auto eq = s.find('=');
    std::size_t used_r = 0, used_c = 0;
    int rank = -1;
    double cores = 0;
    try {
      if (eq == std::string::npos) throw std::invalid_argument("no '='");
      rank = std::stoi(s.substr(0, eq), &used_r);
      cores = std::stod(s.substr(eq + 1), &used_c);
    } catch (const std::exception&) {
      throw ConfigError("--quota '" + s + "': expected RANK=CORES, e.g. 1=0.33");
    }
    if (used_r != eq || used_c != s.size() - eq - 1 || rank < 0 || rank >= world || !(cores > 0) ||
        cores > 1024)
      throw ConfigError("--quota '" + s + "': rank must be in [0, " + std::to_string(world) +
                        ") and cores in (0, 1024]");
    out[rank] = cores;
  }
  return out;
}

// Puts every rank in its cgroup ("dbs-lab-<launcher pid>-rank<r>", quota or unlimited), or
// throws on every rank if any rank could not make its own (the message of the first that
// failed), group left empty.
void enter_cgroup(const std::map<int, double>& quotas, comm::Communicator& comm,
                  std::optional<CpuCgroup>& group) {
  long launcher = static_cast<long>(::getppid());
  comm.broadcast_bytes(&launcher, sizeof launcher, 0);
  char error[256] = {};
  try {
    if (const int n = CpuCgroup::remove_leftovers("dbs-lab-", launcher); n > 0)
      log::warn("removed " + std::to_string(n) +
                " CPU cgroup(s) left by an earlier killed or aborted run");
    const auto q = quotas.find(comm.rank());
    group.emplace("dbs-lab-" + std::to_string(launcher) + "-rank" + std::to_string(comm.rank()),
                  q == quotas.end() ? 0.0 : q->second);
  } catch (const std::exception& e) {
    std::snprintf(error, sizeof error, "rank %d: %s", comm.rank(), e.what());
  }
  std::vector<char> all(sizeof error * static_cast<std::size_t>(comm.size()));
  comm.allgather_bytes(error, sizeof error, all.data());
  for (int r = 0; r < comm.size(); ++r) {
    if (all[sizeof error * static_cast<std::size_t>(r)] != 0) {
      group.reset();
      throw Error("--quota: " + std::string(&all[sizeof error * static_cast<std::size_t>(r)]));
    }
  }
}

// --runs splits its list at commas, which also cuts "fixed:195,61" into "fixed:195" and "61": an
// entry that starts with a digit continues the fixed: entry before it ("61+sharded" too).
std::vector<std::string> join_fixed_sizes(const std::vector<std::string>& entries) {
  std::vector<std::string> runs;
  for (const std::string& e : entries) {
    const bool size = !e.empty() && e[0] >= '0' && e[0] <= '9';
    if (size && !runs.empty() && runs.back().starts_with("fixed:") &&
        runs.back().find('+') == std::string::npos && runs.back().find('@') == std::string::npos)
      runs.back() += "," + e;
    else
      runs.push_back(e);
  }
  return runs;
}

// The config of one --runs entry: POLICY[@K][+sharded|+overlap]. Throws ConfigError naming the
// entry when it cannot run (checked for every entry before the first run starts).
train::Config run_config(const BalanceOptions& o, const std::string& run) {
  train::Config c = base_config(o);
  if (!o.trace_dir.empty()) c.trace_path = o.trace_dir + "/" + run + ".jsonl";
  std::string name = run;
  c.overlap = "off";  // each entry says what it compares: not the agent's auto (on across hosts)
  for (const std::string_view suffix : {"+sharded", "+overlap"}) {
    if (!name.ends_with(suffix)) continue;
    if (suffix == "+sharded") c.update = "sharded";
    if (suffix == "+overlap") c.overlap = "on";
    name.resize(name.size() - suffix.size());
  }
  const auto at = name.find('@');
  try {
    c.policy = parse_policy(name.substr(0, at));
  } catch (const ConfigError& e) {
    throw ConfigError("--runs " + run + ": " + e.what());
  }
  if (at != std::string::npos) {
    const std::string k = name.substr(at + 1);
    if (k.empty() || k.size() > 6 || k.find_first_not_of("0123456789") != std::string::npos ||
        k == "0")
      throw ConfigError("--runs " + run + ": expected POLICY@K with K a positive step count");
    c.rebalance_every = std::stoi(k);
  }
  c.disturbances = disturbances(o);
  try {
    train::check_exchange(c);
  } catch (const ConfigError& e) {
    throw ConfigError("--runs " + run + ": " + e.what());
  }
  return c;
}

nlohmann::json one_run(const BalanceOptions& o, const std::string& run, comm::Communicator& comm,
                       const data::FashionMnist& data) {
  const train::Config c = run_config(o, run);
  const train::RunResult r = train::run(c, comm, data);
  nlohmann::json epochs = nlohmann::json::array();
  double wall = 0, ideal = 0, busy_ideal = 0, total = 0;
  std::vector<double> busy_s;   // per rank, busy seconds over the steady epochs
  int steady = 0, changes = 0;  // steady epochs; plan changes at their starts and inside them
  for (std::size_t k = 0; k < r.epochs.size(); ++k) {
    const auto& e = r.epochs[k];
    epochs.push_back({{"epoch", e.epoch + 1},
                      {"wall_s", e.wall_s},
                      {"ideal_s", e.ideal_s},
                      {"ratio_to_ideal", e.wall_s / e.ideal_s},
                      {"batch", e.batch},
                      {"throughput", e.throughput},
                      {"replans", e.replans},
                      {"busy", e.busy},
                      {"busy_ideal_s", e.busy_ideal_s}});
    total += e.wall_s;
    if (e.epoch + 1 >= o.steady_from) {
      wall += e.wall_s;
      ideal += e.ideal_s;
      busy_ideal += e.busy_ideal_s;
      busy_s.resize(e.busy.size());
      for (std::size_t q = 0; q < e.busy.size(); ++q) busy_s[q] += e.busy[q] * e.wall_s;
      ++steady;
      changes += e.replans + (k > 0 && r.epochs[k - 1].batch != e.batch ? 1 : 0);
    }
  }
  for (double& b : busy_s) b = wall > 0 ? b / wall : 0.0;
  return {{"run", run},
          {"epochs", epochs},
          {"total_s", total},
          {"steady_wall_s", wall},
          {"steady_epochs", steady},
          {"steady_ideal_s", ideal},
          {"steady_ratio_to_ideal", ideal > 0 ? wall / ideal : 0.0},
          {"steady_busy", busy_s},
          {"steady_busy_ideal_s", busy_ideal},
          {"steady_ratio_to_busy_ideal", busy_ideal > 0 ? wall / busy_ideal : 0.0},
          {"steady_plan_changes", changes},
          {"test_acc", r.test_acc}};
}

// A run's bracket drift (one-at-a-time or concurrent) beyond this, either way, makes the summary
// say that its ratio to that bracket is no better than the drift.
constexpr double kDriftNote = 0.10;

// The JSON's steady-state figures as a table on stderr, one line per run, for a reader at the
// terminal (the JSON on stdout is the record). A figure the options left out is "-".
void print_summary(const nlohmann::json& out, int steady_from, int epochs, std::FILE* f) {
  // r[key] as a ratio ("1.234x", digits after the point) or, where digits < 0, as a signed
  // percentage ("+1.2%"); "-" where the options left it out (absent, or a ratio of 0).
  const auto field = [](const nlohmann::json& r, const char* key, int digits) {
    const auto it = r.find(key);
    if (it == r.end() || !it->is_number()) return std::string("-");
    const double v = it->get<double>();
    if (digits < 0) return format("%+.1f%%", 100 * v);
    return v == 0 ? std::string("-") : format("%.*fx", digits, v);
  };
  std::fprintf(f,
               "dbs-lab balance: %d rank(s), steady epochs %d-%d; epoch time over each ideal "
               "(drift: the stand-alone ideal after the run over the one before, - 1)\n",
               out["ranks"].get<int>(), steady_from, epochs);
  std::fprintf(f, "%-14s %8s %12s %9s %7s %11s %7s %11s %9s %7s\n", "run", "epoch_s",
               "/independent", "/bracket", "drift", "/concurrent", "drift", "/best_split",
               "vs_static", "changes");
  std::vector<std::string> notes;
  for (const auto& r : out["runs"]) {
    const std::string name = r["run"].get<std::string>();
    const int steady = r["steady_epochs"].get<int>();
    const double mean = steady > 0 ? r["steady_wall_s"].get<double>() / steady : 0.0;
    std::fprintf(f, "%-14s %8.3f %12s %9s %7s %11s %7s %11s %9s %7d\n", name.c_str(), mean,
                 field(r, "steady_ratio_to_independent", 3).c_str(),
                 field(r, "steady_ratio_to_bracket", 3).c_str(),
                 field(r, "bracket_drift", -1).c_str(),
                 field(r, "steady_ratio_to_concurrent_bracket", 3).c_str(),
                 field(r, "concurrent_bracket_drift", -1).c_str(),
                 field(r, "steady_ratio_to_busy_ideal", 3).c_str(),
                 field(r, "speedup_vs_static", 2).c_str(), r["steady_plan_changes"].get<int>());
    for (const auto& [key, what, column] :
         {std::tuple{"bracket_drift", "stand-alone", "/bracket"},
          std::tuple{"concurrent_bracket_drift", "concurrent", "/concurrent"}}) {
      const auto drift = r.find(key);
      if (drift != r.end() && std::abs(drift->get<double>()) > kDriftNote)
        notes.push_back(
            format("note: run %s: the %s ideal moved by %+.1f%% from the round before "
                   "it to the one after: its %s is no better than that",
                   name.c_str(), what, 100 * drift->get<double>(), column));
    }
  }
  for (const auto& n : notes) std::fprintf(f, "%s\n", n.c_str());
}

int run_balance(const BalanceOptions& given) {
  BalanceOptions o = given;
  o.runs = join_fixed_sizes(given.runs);
  // "none" (as --disturb none) and "" hold no rank to a quota
  std::erase_if(o.quota, [](const std::string& q) { return q.empty() || q == "none"; });
  try {  // every run's config, before anything runs
    for (const auto& run : o.runs) run_config(o, run);
  } catch (const ConfigError& e) {
    return cli::fail("dbs-lab balance", e.what(), cli::usage_error);
  }
  if (!o.trace_dir.empty()) {  // made now (mkdir -p), not found missing after the stand-alone runs
    std::error_code ec;
    std::filesystem::create_directories(o.trace_dir, ec);
    if (ec)
      return cli::fail("dbs-lab balance",
                       "--trace-dir " + o.trace_dir + ": cannot create it: " + ec.message(),
                       cli::usage_error);
  }
  int argc = 0;
  char** argv = nullptr;
  comm::MpiRuntime mpi(&argc, &argv);
  nn::ThreadLimit limit(o.threads);
  log::set_level(log::Level::warn);
  std::optional<CpuCgroup> group;
  {
    auto setup = comm::make_mpi(comm::Algorithm::mpi, comm::Wait::spin);
    std::map<int, double> quotas;
    try {
      quotas = parse_quotas(o.quota, setup->size());
    } catch (const std::exception& e) {
      if (setup->rank() == 0) log::error(e.what());
      return 1;
    }
    for (const auto& run : o.runs) {  // each run for this world size, before the minutes of runs
      const train::Config c = run_config(o, run);
      std::string error;
      try {
        policy::make_policy(train::settings_of(c, o.train_limit), setup->size());
      } catch (const ConfigError& e) {
        error = "--runs " + run + ": " + e.what();
      }
      try {  // --batch, --disturb, ... for this world size: not an entry's fault
        if (error.empty())
          train::validate(c, setup->size(), o.train_limit == 0 ? 1 : o.train_limit);
      } catch (const ConfigError& e) {
        error = e.what();
      }
      if (error.empty()) continue;
      if (setup->rank() == 0) cli::fail("dbs-lab balance", error, cli::usage_error);
      return cli::usage_error;
    }
    try {
      if (!quotas.empty()) enter_cgroup(quotas, *setup, group);
    } catch (const std::exception& e) {
      if (setup->rank() == 0) log::error(e.what());
      return 1;
    }
  }
  // Made inside the rank's cgroup, so that --wait auto sees its quota (as under Slurm, where the
  // quota is there from the start): made before, every rank spun.
  auto comm = comm::make_mpi(comm::parse_algorithm(o.allreduce), comm::parse_wait(o.wait));
  comm->set_threads(limit.threads());
  try {
    const std::vector<std::string> waiting = comm::gather_strings(*comm, comm->waiting());
    const data::FashionMnist data =
        data::load_fashion_mnist(o.data_dir, o.train_limit, o.test_limit);
    const double n = static_cast<double>(std::min(o.train_limit, data.train.n));
    // Stand-alone rounds: before the first run, between runs (--solo-between), after the last
    // (--solo-after). rounds[before[i]] came just before run i; rounds[before[i] + 1], if made,
    // just after it.
    const bool solo = o.solo_epochs > 0;
    std::vector<std::vector<double>> rounds;
    std::vector<std::size_t> before;
    nlohmann::json runs = nlohmann::json::array(), round_list = nlohmann::json::array();
    std::vector<std::vector<double>> together;  // the concurrent rates of each round
    auto round = [&](const std::string& after_run) {
      rounds.push_back(solo_rates(o, *comm, data));
      round_list.push_back({{"after_run", after_run},
                            {"solo_rate", rounds.back()},
                            {"independent_ideal_s", ideal_time(rounds.back(), n)}});
      if (!o.solo_concurrent) return;
      double cover = 0;
      std::vector<int> fillers;
      together.push_back(concurrent_rates(o, *comm, data, rounds.back(), cover, fillers));
      round_list.back()["concurrent_rate"] = together.back();
      round_list.back()["concurrent_ideal_s"] = ideal_time(together.back(), n);
      round_list.back()["concurrent_cover"] = cover;
      round_list.back()["concurrent_filler_epochs"] = fillers;
    };
    if (solo) round("");
    for (std::size_t i = 0; i < o.runs.size(); ++i) {
      before.push_back(rounds.size() - 1);  // wraps when !solo: not read then
      runs.push_back(one_run(o, o.runs[i], *comm, data));
      const bool last = i + 1 == o.runs.size();
      if (solo && (last ? o.solo_after : o.solo_between)) round(o.runs[i]);
    }
    const bool after_all = solo && o.solo_after;
    const std::vector<double> first = solo ? rounds.front() : std::vector<double>{};
    const std::vector<double> after = after_all ? rounds.back() : std::vector<double>{};
    const double independent_s = ideal_time(first, n), after_s = ideal_time(after, n);
    double static_wall = 0;
    for (const auto& r : runs)
      if (r["run"] == "static") static_wall = r["steady_wall_s"].get<double>();
    for (std::size_t i = 0; i < runs.size(); ++i) {
      auto& r = runs[i];
      const double wall = r["steady_wall_s"].get<double>(), steady = r["steady_epochs"].get<int>();
      r["speedup_vs_static"] = static_wall > 0 ? static_wall / wall : 0.0;
      r["steady_ratio_to_independent"] = independent_s > 0 ? wall / (independent_s * steady) : 0.0;
      if (after_s > 0) r["steady_ratio_to_independent_after"] = wall / (after_s * steady);
      if (solo && before[i] + 1 < rounds.size()) {
        const double b = ideal_time(rounds[before[i]], n), a = ideal_time(rounds[before[i] + 1], n);
        const double bracket = (a + b) / 2;
        r["bracket_ideal_s"] = {b, a};
        r["bracket_drift"] = b > 0 ? a / b - 1 : 0.0;
        r["steady_ratio_to_bracket"] = bracket > 0 ? wall / (bracket * steady) : 0.0;
        if (!o.solo_concurrent) continue;
        const double cb = ideal_time(together[before[i]], n),
                     ca = ideal_time(together[before[i] + 1], n);
        r["concurrent_bracket_ideal_s"] = {cb, ca};
        r["concurrent_bracket_drift"] = cb > 0 ? ca / cb - 1 : 0.0;
        r["steady_ratio_to_concurrent_bracket"] =
            cb + ca > 0 ? wall / ((cb + ca) / 2 * steady) : 0.0;
      }
    }
    if (comm->rank() == 0) {
      const nlohmann::json out(
          {{"bench", "balance"},
           {"ranks", comm->size()},
           {"model", o.model},
           {"threads", o.threads},
           {"global_batch", o.batch},
           {"train_samples", o.train_limit},
           {"disturb", o.disturb},
           {"quota", o.quota},
           {"wait", o.wait},
           {"waiting", waiting},
           {"allreduce", o.allreduce},
           {"min_gain", o.min_gain},
           {"solo_rate", first},
           {"independent_ideal_s", independent_s},
           {"solo_rate_after", after},
           {"independent_ideal_after_s", after_s},
           {"independent_drift",
            independent_s > 0 && after_s > 0 ? after_s / independent_s - 1 : 0.0},
           {"concurrent_rate", together.empty() ? std::vector<double>{} : together.front()},
           {"concurrent_ideal_s", together.empty() ? 0.0 : ideal_time(together.front(), n)},
           {"solo_rounds", round_list},
           {"steady_from_epoch", o.steady_from},
           {"runs", runs}});
      std::puts(out.dump(2).c_str());
      std::fflush(stdout);
      print_summary(out, o.steady_from, o.epochs, stderr);
    }
  } catch (const std::exception& e) {
    log::error(e.what());
    group.reset();  // leave and remove the cgroup: MPI_Abort ends the process
    comm->abort(1);
  }
  return 0;
}

}  // namespace

void add_balance_command(CLI::App& app, Action& action) {
  auto o = std::make_shared<BalanceOptions>();
  auto* cmd = cli::add_command(
      app, action, "balance",
      "static vs dbs under a disturbance: epoch times, ratio to ideal, speedup (run under "
      "mpirun).\n"
      "Example: mpirun -np 2 dbs-lab balance --model lenet --epochs 3 --runs static,dbs",
      o, run_balance);
  cmd->add_option("--model", o->model, "cnn or lenet")->capture_default_str();
  cmd->add_option("--threads", o->threads, "TBB threads per rank")
      ->capture_default_str()
      ->check(dbs::cli::above(0));
  cmd->add_option("--batch", o->batch, "global batch")
      ->capture_default_str()
      ->check(dbs::cli::above(0));
  cmd->add_option("--epochs", o->epochs, "epochs per run")
      ->capture_default_str()
      ->check(dbs::cli::above(0));
  cmd->add_option("--train-limit", o->train_limit, "training samples")->capture_default_str();
  cmd->add_option("--test-limit", o->test_limit, "test samples")->capture_default_str();
  cmd->add_option("--steady-from", o->steady_from, "first epoch (1-based) of the steady state")
      ->capture_default_str();
  cmd->add_option("--runs", o->runs,
                  "runs: static, dbs, dbs-rate, fixed:..., dbs@K (re-plan every K steps); +sharded "
                  "or +overlap after any of them: the sharded optimizer update, the exchange "
                  "overlapped with backward")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--disturb", o->disturb,
                  "disturbance spec as for dbs-agent (repeatable; --disturb none for none)")
      ->capture_default_str();
  cmd->add_option("--quota", o->quota,
                  "RANK=CORES: hold the rank to a CPU quota in a cgroup of its own, e.g. 1=0.33 "
                  "(repeatable; needs writable cgroups; none for none)");
  cmd->add_option(
         "--allreduce", o->allreduce,
         "gradient allreduce: mpi or ring (the sharded update then uses the ring's halves)")
      ->capture_default_str()
      ->check(CLI::IsMember({"mpi", "ring"}));
  cmd->add_option("--min-gain", o->min_gain,
                  "dbs keeps its plan below this predicted gain (fraction), as dbs-agent's")
      ->capture_default_str()
      ->check(dbs::cli::between(0, 0.999999));
  cmd->add_option("--wait", o->wait, "how ranks wait in collectives: spin, sleep or auto")
      ->capture_default_str()
      ->check(CLI::IsMember({"spin", "sleep", "auto"}));
  cmd->add_option("--solo-epochs", o->solo_epochs,
                  "stand-alone epochs per rank for the independent ideal (0 = skip)")
      ->capture_default_str()
      ->check(dbs::cli::at_least(0));
  cmd->add_option("--solo-limit", o->solo_limit, "samples per stand-alone epoch")
      ->capture_default_str()
      ->check(dbs::cli::above(0));
  cmd->add_flag("!--no-solo-after", o->solo_after,
                "skip the stand-alone runs after the policy runs (independent_ideal_after_s, "
                "independent_drift)");
  cmd->add_flag("!--no-solo-between", o->solo_between,
                "skip the stand-alone runs between the policy runs (each run's bracket_ideal_s, "
                "bracket_drift, steady_ratio_to_bracket)");
  cmd->add_flag("!--no-solo-concurrent", o->solo_concurrent,
                "skip the stand-alone runs with all ranks alone at once (concurrent_rate, "
                "concurrent_ideal_s, steady_ratio_to_concurrent_bracket)");
  cmd->add_option("--trace-dir", o->trace_dir, "write each run's trace to DIR/RUN.jsonl");
  cmd->add_option("--data", o->data_dir, "Fashion-MNIST directory")->capture_default_str();
}

}  // namespace dbs::lab
