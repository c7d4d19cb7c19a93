#include "lib/train/trainer.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "lib/common/error.h"
#include "lib/common/hash.h"
#include "lib/common/log.h"
#include "lib/data/subset.h"
#include "lib/nn/model.h"
#include "lib/train/metrics.h"
#include "lib/train/state.h"
#include "lib/train/stop.h"

namespace dbs::train {
namespace {

using detail::EpochStats;
using detail::Interrupted;
using detail::State;

// FNV-1a over the plan and the parameters: equal on every rank or the job has diverged.
std::uint64_t fingerprint(const policy::Plan& plan, std::span<const float> params) {
  std::uint64_t h = fnv1a(plan.batch.data(), plan.batch.size() * sizeof(int));
  h = fnv1a(plan.offset.data(), plan.offset.size() * sizeof(int), h);
  return fnv1a(params.data(), params.size_bytes(), h);
}

void check_agreement(comm::Communicator& comm, const policy::Plan& plan,
                     std::span<const float> params, std::int64_t epoch) {
  const std::uint64_t mine = fingerprint(plan, params);
  std::vector<std::uint64_t> all(static_cast<std::size_t>(comm.size()));
  comm.allgather_bytes(&mine, sizeof mine, all.data());
  for (int r = 1; r < comm.size(); ++r)
    if (all[r] != all[0])
      throw CheckError("ranks disagree on the plan or the parameters after epoch " +
                       std::to_string(epoch + 1) + ": rank 0 has fingerprint " +
                       std::to_string(all[0]) + ", rank " + std::to_string(r) + " has " +
                       std::to_string(all[r]));
}

std::vector<policy::Report> gather_reports(comm::Communicator& comm, const policy::Report& mine) {
  static_assert(std::is_trivially_copyable_v<policy::Report>);
  std::vector<policy::Report> all(static_cast<std::size_t>(comm.size()));
  comm.allgather_bytes(&mine, sizeof mine, all.data());
  return all;
}

void trace_disturbances(State& st, std::int64_t epoch) {
  for (const auto& d : st.config.disturbances)
    if (d.overlaps(epoch)) st.trace->write(trace::disturbance_record(d, epoch));
}

// Whether any rank has had a stop signal (a collective: the ranks agree at an epoch's end).
bool any_stop(comm::Communicator& comm) {
  double flag = stop_signal() != 0 ? 1.0 : 0.0;
  comm.allreduce_sum(std::span<double>(&flag, 1));
  return flag > 0;
}

// The signal that stopped the job, on every rank: its own, else the lowest signalled rank's.
int agreed_signal(comm::Communicator& comm) {
  const int mine = stop_signal();
  std::vector<int> all(static_cast<std::size_t>(comm.size()));
  comm.allgather_bytes(&mine, sizeof mine, all.data());
  if (mine != 0) return mine;
  for (const int s : all)
    if (s != 0) return s;
  return 0;
}

// What a checkpoint of the stopped epoch keeps: every rank's figures so far, rank 0's wall time.
Interrupted interrupted(State& st, std::int64_t epoch, const EpochStats& es) {
  Interrupted at;
  at.epoch = epoch;
  at.steps_done = es.stopped_after;
  at.stats = es;
  at.reports = gather_reports(st.comm, es.report);
  double wall = st.comm.rank() == 0 ? es.wall_s : 0.0;
  st.comm.allreduce_sum(std::span<double>(&wall, 1));
  at.stats.wall_s = wall;
  return at;
}

data::Dataset take(data::Dataset&& d, std::size_t limit) {
  return limit == 0 || limit >= d.n ? std::move(d) : d.head(limit);
}

// Replaces st.train by the samples of config.train_subset (every rank reads the file and checks
// that all ranks hold the same subset) and records its identity for the trace.
void apply_subset(State& st) {
  const std::string& path = st.config.train_subset;
  if (path.empty()) return;
  const data::Subset s = data::read_subset(path);
  data::check_subset_matches(s, st.train, path);
  const std::string hash = data::subset_hash(s);
  std::vector<char> all(17 * static_cast<std::size_t>(st.comm.size()));
  char mine[17] = {};
  std::memcpy(mine, hash.c_str(), 16);
  st.comm.allgather_bytes(mine, sizeof mine, all.data());
  for (int r = 0; r < st.comm.size(); ++r)
    if (std::string(all.data() + 17 * r) != hash)
      throw CheckError("--train-subset " + path + ": rank " + std::to_string(r) +
                       " read a subset with hash " + std::string(all.data() + 17 * r) +
                       ", this rank " + hash);
  st.subset = {{"path", path}, {"hash", hash}, {"method", s.method}, {"count", s.indices.size()},
               {"of", st.train.n}};
  st.train = data::select(st.train, s.indices);
}

}  // namespace

void validate(const Config& c, int world, std::size_t n_train) {
  if (c.epochs <= 0) throw ConfigError("--epochs must be positive");
  if (c.global_batch < world * std::max(1, c.min_batch))
    throw ConfigError("--batch " + std::to_string(c.global_batch) + " is smaller than " +
                      std::to_string(world) + " ranks x min batch " + std::to_string(c.min_batch));
  if (n_train == 0) throw ConfigError("no training samples");
  if (c.rebalance_every < 0) throw ConfigError("--rebalance-every must be >= 0");
  check_exchange(c);
  for (const auto& d : c.disturbances)
    if (d.rank >= world)
      throw ConfigError("--disturb " + to_string(d) + ": the job has only " +
                        std::to_string(world) + " ranks");
}

RunResult run(const Config& cfg, comm::Communicator& comm, data::FashionMnist data,
              planner::Planner* planner) {
  const int world = comm.size(), rank = comm.rank();
  State st{cfg, comm, take(std::move(data.train), cfg.train_limit),
           take(std::move(data.test), cfg.test_limit), nullptr, nullptr, planner, nullptr, nullptr,
           nullptr, {}, {}, {}, {}, {}, {}, {}, {}, {}};
  apply_subset(st);
  validate(cfg, world, st.train.n);
  st.model = nn::make_model(cfg.model, {1, st.train.rows, st.train.cols}, st.train.classes, cfg.seed);
  st.optimizer = optim::make_optimizer(cfg.optimizer, st.model->param_count(), cfg.optim);
  if (st.planner == nullptr) {
    st.own_planner = std::make_unique<planner::Embedded>(settings_of(cfg, st.train.n), world);
    st.planner = st.own_planner.get();
  }
  st.hosts = comm::gather_strings(comm, comm.host());
  st.waiting = comm::gather_strings(comm, comm.waiting());
  st.overlap = resolve_overlap(cfg, st.hosts);
  st.disturber = std::make_unique<Disturber>(cfg.disturbances, rank, std::max(1, cfg.threads));

  const detail::Resumed resumed = cfg.resume ? detail::load_checkpoint(st) : detail::Resumed{0, world};
  const std::int64_t first = resumed.next_epoch;
  if (rank == 0 && !cfg.trace_path.empty()) {
    st.trace = std::make_unique<trace::Writer>(cfg.trace_path, trace::header(detail::config_json(st)),
                                               first > 0);
    if (first == 0) st.trace->write(trace::plan_record(st.planner->plan(), 0, "initial"));
    if (first > 0 && resumed.world != world)
      st.trace->write(trace::plan_record(st.planner->plan(), 0, "resume"));
  }
  std::unique_ptr<detail::MetricsFile> metrics;
  if (rank == 0 && !cfg.metrics_path.empty())
    metrics = std::make_unique<detail::MetricsFile>(cfg.metrics_path, first > 0 || st.resume_at);
  const bool table = rank == 0 && cfg.table;
  if (table) detail::print_header(st);

  RunResult out;
  for (std::int64_t e = first; e < cfg.epochs; ++e) {
    // A resumed interrupted epoch's disturbances are in the trace already.
    if (st.trace && !(st.resume_at && first > 0)) trace_disturbances(st, e);
    const std::vector<int> batch_at_start = st.planner->plan().batch;
    const EpochStats es = detail::run_epoch(st, e);
    if (es.stopped_after >= 0) {
      const Interrupted at = interrupted(st, e, es);
      if (!cfg.checkpoint_dir.empty()) detail::save_checkpoint(st, &at);
      out.stop_signal = agreed_signal(comm);
      out.stop_epoch = e + 1;
      out.stop_step = es.stopped_after;
      break;
    }
    const auto [test_loss, test_acc] = detail::evaluate(st);
    const std::vector<policy::Report> reports = gather_reports(comm, es.report);
    detail::trace_cpu(st, e);

    EpochResult r;
    r.epoch = e;
    r.wall_s = es.wall_s;
    r.images_per_s = static_cast<double>(es.samples) / es.wall_s;
    double sum_v = 0.0;
    for (const auto& rep : reports) {
      const double v = rep.throughput();
      r.throughput.push_back(v);
      sum_v += v;
    }
    r.ideal_s = sum_v > 0 ? static_cast<double>(es.samples) / sum_v : 0.0;
    r.efficiency = r.ideal_s / es.wall_s;
    double sum_busy_v = 0.0;  // samples per busy second, summed over ranks
    // Unknown for an epoch continued from a checkpoint: the timings miss the steps before it.
    for (const auto& rep : es.continued ? std::span<const policy::Report>() : std::span(reports)) {
      const double busy = st.timings[static_cast<std::size_t>(rep.rank)].busy_s;
      r.busy.push_back(busy / es.wall_s);
      sum_busy_v += busy > 0 ? static_cast<double>(rep.samples) / busy : 0.0;
    }
    r.busy_ideal_s = sum_busy_v > 0 ? static_cast<double>(es.samples) / sum_busy_v : 0.0;
    r.train_loss = es.loss_sum / static_cast<double>(es.samples);
    r.test_loss = test_loss;
    r.test_acc = test_acc;
    r.batch = batch_at_start;
    r.replans = es.replans;

    const planner::Planned next =
        st.planner->next(es.plan_reports.empty() ? reports : es.plan_reports);
    check_agreement(comm, next.plan, st.model->params(), e);
    if (table) detail::print_epoch(st, r);
    if (metrics)
      metrics->write(r, reports, st.hosts, optim::learning_rate(cfg.schedule, static_cast<double>(e)));
    if (st.trace) {
      for (const auto& rep : reports) st.trace->write(trace::rank_record(rep, st.hosts[rep.rank]));
      nlohmann::json eval = {{"type", "eval"}, {"epoch", e + 1}, {"wall_s", r.wall_s},
                             {"images_per_s", r.images_per_s}, {"ideal_s", r.ideal_s},
                             {"efficiency", r.efficiency}, {"train_loss", r.train_loss},
                             {"test_loss", r.test_loss}, {"test_acc", r.test_acc},
                             {"replans", r.replans}};
      if (!r.busy.empty()) {  // absent for an epoch continued from a checkpoint
        eval["busy"] = r.busy;
        eval["busy_ideal_s"] = r.busy_ideal_s;
      }
      st.trace->write(eval);
      st.trace->write(trace::plan_record(next.plan, 0, next.source));
      st.trace->flush();
    }
    st.results.push_back(r);
    if (!cfg.checkpoint_dir.empty()) detail::save_checkpoint(st);
    if (e + 1 < cfg.epochs && any_stop(comm)) {
      out.stop_signal = agreed_signal(comm);
      out.stop_epoch = e + 2;
      break;
    }
  }

  if (st.trace) st.trace->flush();
  out.epochs = st.results;
  if (!st.results.empty()) {
    out.test_loss = st.results.back().test_loss;
    out.test_acc = st.results.back().test_acc;
  } else if (out.stop_signal != 0) {  // stopped in the first epoch: no evaluation, no figures
    out.test_loss = out.test_acc = std::numeric_limits<double>::quiet_NaN();
  } else {
    std::tie(out.test_loss, out.test_acc) = detail::evaluate(st);
  }
  const auto p = st.model->params();
  out.params.assign(p.begin(), p.end());
  for (const float v : p) {
    const double d = static_cast<double>(v);
    out.param_l2 += d * d;
    out.param_sum += d;
  }
  out.param_l2 = std::sqrt(out.param_l2);
  if (rank == 0) {
    if (!cfg.summary_path.empty()) detail::write_summary(st, out);
    // A stopped run's weights are in its checkpoint; the weights file is for finished runs.
    if (!cfg.save_weights.empty() && out.stop_signal == 0) nn::save_weights(*st.model, cfg.save_weights);
  }
  return out;
}

}  // namespace dbs::train
