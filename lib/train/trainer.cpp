#include "lib/train/trainer.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <limits>
#include <type_traits>

#include "lib/common/cpu_quota.h"
#include "lib/common/error.h"
#include "lib/common/hash.h"
#include "lib/common/log.h"
#include "lib/common/timer.h"
#include "lib/data/subset.h"
#include "lib/nn/model.h"
#include "lib/planner/remote.h"
#include "lib/policy/ideal.h"
#include "lib/train/exchange_replicated.h"
#include "lib/train/metrics.h"
#include "lib/train/stop.h"

namespace dbs::train {
namespace {

using detail::EpochStats;
using detail::Interrupted;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// FNV-1a over the plan and the parameters: equal on every rank or the job has diverged.
std::uint64_t fingerprint(const Plan& plan, std::span<const float> params) {
  std::uint64_t h = fnv1a(plan.batch.data(), plan.batch.size() * sizeof(int));
  h = fnv1a(plan.offset.data(), plan.offset.size() * sizeof(int), h);
  return fnv1a(params.data(), params.size_bytes(), h);
}

// Wall-clock seconds: the ranks' times compare across ranks (exactly on one host).
double wall_clock_s() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::vector<Report> gather_reports(comm::Communicator& comm, const Report& mine) {
  static_assert(std::is_trivially_copyable_v<Report>);
  std::vector<Report> all(static_cast<std::size_t>(comm.size()));
  comm.allgather_bytes(&mine, sizeof mine, all.data());
  return all;
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

data::Dataset take(data::Dataset&& d, std::size_t limit) {
  return limit == 0 || limit >= d.n ? std::move(d) : d.head(limit);
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

Trainer::Trainer(const Config& cfg, comm::Communicator& comm, data::FashionMnist data,
                 Planner* planner, std::unique_ptr<nn::Model> model)
    : config_(cfg),
      comm_(comm),
      train_(take(std::move(data.train), cfg.train_limit)),
      test_(take(std::move(data.test), cfg.test_limit)),
      model_(std::move(model)),
      planner_(planner) {
  const int world = comm.size();
  apply_subset();
  validate(cfg, world, train_.n);
  orders_ = std::make_unique<data::PermutationsAhead>(train_.n, cfg.seed);
  const nn::Shape input{1, train_.rows, train_.cols};
  if (!model_) model_ = nn::make_model(cfg.model, input, train_.classes, cfg.seed);
  DBS_CHECK(model_->input_shape() == input);
  optimizer_ = optim::make_optimizer(cfg.optimizer, model_->param_count(), cfg.optim);
  if (planner_ == nullptr) {
    own_planner_ = std::make_unique<planner::Embedded>(settings_of(cfg, train_.n), world);
    planner_ = own_planner_.get();
  }
  hosts_ = comm::gather_strings(comm, comm.host());
  waiting_ = comm::gather_strings(comm, comm.waiting());
  overlap_ = resolve_overlap(cfg, hosts_);
  exchange_ = make_exchange(cfg, overlap_, comm, *model_, *optimizer_);
  if (cfg.average_every > 0) {
    // The averaging epochs' compute exchanges nothing: with overlap, not the synchronous
    // epochs' exchange, which starts the gradient's allreduce inside the backward pass.
    if (overlap_) local_exchange_ = std::make_unique<Replicated>(comm, *model_, *optimizer_);
    // The tail of an average: samples, loss, stop, and per step of a period every rank's
    // compute_s, samples and work_s when the plan may change inside an epoch.
    const std::size_t slots =
        cfg.rebalance_every > 0
            ? 3 * static_cast<std::size_t>(world) * static_cast<std::size_t>(cfg.average_every)
            : 0;
    local_ = std::make_unique<LocalSgd>(comm, *model_, *optimizer_, cfg.average_optimizer == "mean",
                                        3 + slots);
  }
  disturber_ = std::make_unique<Disturber>(cfg.disturbances, comm.rank(), std::max(1, cfg.threads));
}

// Replaces train_ by the samples of config_.train_subset (every rank reads the file and checks
// that all ranks hold the same subset) and records its identity for the trace.
void Trainer::apply_subset() {
  const std::string& path = config_.train_subset;
  if (path.empty()) return;
  const data::Subset s = data::read_subset(path);
  data::check_subset_matches(s, train_, path);
  const std::string hash = data::subset_hash(s);
  std::vector<char> all(17 * static_cast<std::size_t>(comm_.size()));
  char mine[17] = {};
  std::memcpy(mine, hash.c_str(), 16);
  comm_.allgather_bytes(mine, sizeof mine, all.data());
  for (int r = 0; r < comm_.size(); ++r)
    if (std::string(all.data() + 17 * r) != hash)
      throw CheckError("--train-subset " + path + ": rank " + std::to_string(r) +
                       " read a subset with hash " + std::string(all.data() + 17 * r) +
                       ", this rank " + hash);
  subset_ = {{"path", path},
             {"hash", hash},
             {"method", s.method},
             {"count", s.indices.size()},
             {"of", train_.n}};
  train_ = data::select(train_, s.indices);
}

// Rank 0's trace: a new one with the initial plan, or the resumed one continued (with the plan
// re-made for a new world size).
void Trainer::open_trace(const Resumed& resumed) {
  if (comm_.rank() != 0 || config_.trace_path.empty()) return;
  const bool append = resumed.next_epoch > 0;
  trace_ =
      std::make_unique<trace::Writer>(config_.trace_path, trace::header(config_json()), append);
  if (!append) trace_->write(trace::plan_record(planner_->plan(), 0, "initial"));
  if (append && resumed.world != comm_.size())
    trace_->write(trace::plan_record(planner_->plan(), 0, "resume"));
}

detail::EpochParts Trainer::epoch_parts() {
  Exchange& local_exchange = local_exchange_ ? *local_exchange_ : *exchange_;
  return {config_,    comm_,          train_,       *orders_,    *model_,     *planner_,
          *exchange_, local_exchange, local_.get(), *disturber_, trace_.get()};
}

RunResult Trainer::run() {
  const Resumed resumed = config_.resume ? load_checkpoint() : Resumed{0, comm_.size()};
  const std::int64_t first = resumed.next_epoch;
  open_trace(resumed);
  std::unique_ptr<detail::MetricsFile> metrics;
  if (comm_.rank() == 0 && !config_.metrics_path.empty())
    metrics = std::make_unique<detail::MetricsFile>(config_.metrics_path, first > 0 || resume_at_);
  const bool table = comm_.rank() == 0 && config_.table;
  if (table) print_header();

  RunResult out;
  for (std::int64_t e = first; e < config_.epochs; ++e) {
    // A resumed interrupted epoch's disturbances are in the trace already.
    if (trace_ && !(resume_at_ && first > 0))
      for (const auto& d : config_.disturbances)
        if (d.overlaps(e)) trace_->write(trace::disturbance_record(d, e));
    std::vector<int> batch_at_start = planner_->plan().batch;
    const EpochStats es = detail::run_epoch(epoch_parts(), e, resume_at_, timing_);
    if (es.stopped_after >= 0) {
      const Interrupted at = interrupted(e, es);
      if (!config_.checkpoint_dir.empty()) save_checkpoint(&at);
      out.stop_signal = agreed_signal(comm_);
      out.stop_epoch = e + 1;
      out.stop_step = es.stopped_after;
      break;
    }
    const std::pair<double, double> test = evaluate();
    trace::Control control;
    const double ended_s = wall_clock_s();
    Stopwatch clock;
    // The check of the plan that ran and the parameters, and the CPU quota's figures, which
    // travel with the reports: made before the wait for a daemon's share, so that the ranks do
    // not make them all at once when the shares arrive.
    const std::uint64_t ran = fingerprint(planner_->plan(), model_->params());
    const std::optional<CpuQuota> quota = read_cpu_quota();
    const double checked_s = clock.seconds();
    clock.reset();
    // The report next() plans from (unless the epoch re-planned inside: the window's), to a
    // daemon now, which plans while the ranks gather. A remote planner's ranks then wait for
    // their shares of the daemon's plan and carry them in the gather of the reports (planning
    // time: the daemon's round trip), so that agreeing on the plan takes no collective of its own.
    auto* ahead = es.plan_reports.empty() ? dynamic_cast<planner::SharesAhead*>(planner_) : nullptr;
    std::array<std::byte, planner::kShareBytes> share{};
    if (ahead) {
      ahead->share_ahead(es.report, share);
    } else if (es.plan_reports.empty()) {
      planner_->send_ahead(es.report);
    }
    const double shared_s = clock.seconds();
    clock.reset();
    // The next plan is the same on every rank: made by the same policy from the same reports, or
    // the daemon's shared by the planner; the next epoch's end checks it as the plan that ran.
    const Gathered g = gather_epoch(e, {es.report, ran, ended_s, quota, ahead ? &share : nullptr});
    control.reports_s = checked_s + clock.seconds();
    clock.reset();
    const std::vector<Report>& reports = g.reports;
    const Planned next = ahead
                             ? ahead->next_gathered(reports, g.shares)
                             : planner_->next(es.plan_reports.empty() ? reports : es.plan_reports);
    control.plan_s = shared_s + clock.seconds();
    control.waited_s = std::clamp(g.waited_s, 0.0, control.total_s());
    if (const auto* remote = dynamic_cast<const planner::WithFallback*>(planner_))
      control.daemon_s = remote->waited_s();
    EpochResult r = result_of(e, es, reports, test, std::move(batch_at_start));
    r.control = control;
    if (table) print_epoch(r);
    if (metrics)
      metrics->write(
          r, reports, hosts_,
          optim::learning_rate(config_.schedule, config_.global_batch, static_cast<double>(e)));
    trace_epoch(r, reports, next);
    results_.push_back(r);
    if (!config_.checkpoint_dir.empty()) save_checkpoint();
    if (e + 1 < config_.epochs && g.stop) {
      out.stop_signal = agreed_signal(comm_);
      out.stop_epoch = e + 2;
      break;
    }
  }
  return finish(std::move(out));
}

EpochResult Trainer::result_of(std::int64_t e, const EpochStats& es,
                               std::span<const Report> reports, std::pair<double, double> test,
                               std::vector<int> batch) const {
  EpochResult r;
  r.epoch = e;
  r.wall_s = es.wall_s;
  r.images_per_s = static_cast<double>(es.samples) / es.wall_s;
  for (const auto& rep : reports) r.throughput.push_back(rep.throughput());
  r.ideal_s = policy::ideal_time(r.throughput, static_cast<double>(es.samples));
  r.efficiency = r.ideal_s / es.wall_s;
  std::vector<double> busy_v;  // per rank, samples per busy second (0: unknown)
  // Unknown for an epoch continued from a checkpoint: the timings miss the steps before it.
  for (const auto& rep : es.continued ? std::span<const Report>() : reports) {
    const double busy = timings_[static_cast<std::size_t>(rep.rank)].busy_s;
    r.busy.push_back(busy / es.wall_s);
    busy_v.push_back(busy > 0 ? static_cast<double>(rep.samples) / busy : 0.0);
  }
  r.busy_ideal_s = policy::ideal_time(busy_v, static_cast<double>(es.samples));
  r.train_loss = test_.n > 0 ? es.loss_sum / static_cast<double>(es.samples) : kNaN;
  r.test_loss = test.first;
  r.test_acc = test.second;
  r.batch = std::move(batch);
  r.replans = es.replans;
  r.averages = es.averages;
  return r;
}

// The finished epoch's rank and eval records and the next plan (rank 0).
void Trainer::trace_epoch(const EpochResult& r, std::span<const Report> reports,
                          const Planned& next) {
  if (!trace_) return;
  for (const auto& rep : reports) trace_->write(trace::rank_record(rep, hosts_[rep.rank]));
  trace::Eval ev;
  ev.epoch = r.epoch;
  ev.wall_s = r.wall_s;
  ev.images_per_s = r.images_per_s;
  ev.ideal_s = r.ideal_s;
  ev.efficiency = r.efficiency;
  ev.replans = r.replans;
  ev.averages = r.averages;
  if (test_.n > 0) {  // else nothing was evaluated
    ev.train_loss = r.train_loss;
    ev.test_loss = r.test_loss;
    ev.test_acc = r.test_acc;
  }
  ev.control = r.control;
  ev.busy = r.busy;  // empty for an epoch continued from a checkpoint
  ev.busy_ideal_s = r.busy_ideal_s;
  trace_->write(trace::to_json(ev));
  trace_->write(trace::plan_record(next.plan, 0, next.source));
  trace_->flush();
}

// What a checkpoint of the stopped epoch keeps: every rank's figures so far, rank 0's wall time.
Interrupted Trainer::interrupted(std::int64_t epoch, const EpochStats& es) {
  Interrupted at;
  at.epoch = epoch;
  at.steps_done = es.stopped_after;
  at.stats = es;
  at.reports = gather_reports(comm_, es.report);
  double wall = comm_.rank() == 0 ? es.wall_s : 0.0;
  comm_.allreduce_sum(std::span<double>(&wall, 1));
  at.stats.wall_s = wall;
  return at;
}

// The run's result from the finished epochs and the final parameters; rank 0 writes the summary
// and the weights.
RunResult Trainer::finish(RunResult out) {
  if (trace_) trace_->flush();
  out.epochs = results_;
  if (!results_.empty()) {
    out.test_loss = results_.back().test_loss;
    out.test_acc = results_.back().test_acc;
  } else if (out.stop_signal != 0) {  // stopped in the first epoch: no evaluation, no figures
    out.test_loss = out.test_acc = std::numeric_limits<double>::quiet_NaN();
  } else {
    std::tie(out.test_loss, out.test_acc) = evaluate();
  }
  const auto p = model_->params();
  out.params.assign(p.begin(), p.end());
  for (const float v : p) {
    const double d = static_cast<double>(v);
    out.param_l2 += d * d;
    out.param_sum += d;
  }
  out.param_l2 = std::sqrt(out.param_l2);
  if (comm_.rank() == 0) {
    if (!config_.summary_path.empty()) write_summary(out);
    // A stopped run's weights are in its checkpoint; the weights file is for finished runs.
    if (!config_.save_weights.empty() && out.stop_signal == 0)
      nn::save_weights(*model_, config_.save_weights);
  }
  return out;
}

std::pair<double, double> Trainer::evaluate() {
  if (test_.n == 0) return {kNaN, kNaN};  // the same on every rank: no collective
  return detail::evaluate(comm_, *model_, test_);
}

RunResult run(const Config& config, comm::Communicator& comm, data::FashionMnist data,
              Planner* planner, std::unique_ptr<nn::Model> model) {
  return Trainer(config, comm, std::move(data), planner, std::move(model)).run();
}

}  // namespace dbs::train
