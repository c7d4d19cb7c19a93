// One epoch of synchronous training on this rank.
//
// Words: B global batch, S = ceil(N / B) steps, step s trains on the global batch
// perm[s*B, s*B + gn) with gn = min(B, N - s*B); this rank's slice is [o, o + b) of it, from the
// plan (a short last step is split in the plan's proportions, step_batch). The buffer the
// exchange sums over the ranks is
//   [ gradient sums (P) | sample count | loss sum | stop | compute_s per rank (W)
//     | samples per rank (W) | work_s per rank (W) ]
// so every rank learns every rank's step time without another collective; the 3W per-rank slots
// are there only with rebalance_every > 0, which is what needs them. stop counts the ranks that
// had a stop signal (stop.h) when they sent the step: > 0 ends the epoch after it on every rank.
// An averaging epoch (Config::averages_in, lib/train/local_sgd.h) exchanges nothing at its
// steps: each rank applies its own optimizer to its slice's mean gradient, and after every H-th
// step (H = average_every, counted from the epoch's start) and after the last the ranks average
// their models, summing the tail
//   [ samples since the last average | loss sum | stop | per step since the last average:
//     compute_s per rank (W) | samples per rank (W) | work_s per rank (W) ]
// along (the per-step slots with rebalance_every only, which is a multiple of H). Its first float
// is the rank's weight in the average.
// A step's work time is the rank's own time between two exchanges (CostPoint): the
// previous step's optimizer update, gathering its slice and compute. On a rank whose cgroup's
// CPU quota is below its threads it is that work's time at the rate the quota sustains
// (SustainedTime, over the epoch's steps): its process CPU time over the quota, more where the
// rank got less than its quota. A rank given little work waits long enough between steps for its
// quota to refill and runs each step at full speed; given more, it is throttled. Its wall work
// time alone would be a staircase in its batch that makes the plan swing between the two.
#include "lib/train/epoch.h"

#include <algorithm>
#include <chrono>
#include <numeric>
#include <thread>

#include "lib/common/cpu_quota.h"
#include "lib/common/error.h"
#include "lib/common/timer.h"
#include "lib/data/sampler.h"
#include "lib/nn/threads.h"
#include "lib/policy/cost.h"
#include "lib/policy/steps.h"
#include "lib/train/step_history.h"
#include "lib/train/stop.h"

namespace dbs::train::detail {
namespace {

double process_cpu() {
  return cpu_seconds(CLOCK_PROCESS_CPUTIME_ID);
}

// Times one phase of a step: wall and thread CPU from construction to stop().
class PhaseClock {
 public:
  PhaseClock() : cpu0_(cpu_seconds()) {}
  // Adds the time since construction to phase; returns the wall seconds.
  double stop(trace::Phase& phase) const {
    const double wall = wall_.seconds();
    phase.wall_s += wall;
    phase.cpu_s += cpu_seconds() - cpu0_;
    return wall;
  }

 private:
  Stopwatch wall_;
  double cpu0_;
};

// The step loop of one epoch; its members are what lives from one step to the next.
class StepLoop {
 public:
  StepLoop(const EpochParts& parts, std::int64_t epoch, std::optional<Interrupted>& resume_at,
           trace::Timing& timing);
  EpochStats run();

 private:
  // This rank's part of step s: the step's global batch [g0, g0 + gn) of the permutation and
  // this rank's slice [g0 + offset, g0 + offset + count) of it.
  struct Slice {
    std::int64_t g0 = 0;
    int gn = 0, offset = 0, count = 0;
  };
  struct Computed {
    double loss = 0;       // summed over the slice
    double compute_s = 0;  // wall seconds, injected slowdown included
  };

  double epoch_progress(std::int64_t s) const {
    return static_cast<double>(epoch_) + static_cast<double>(s) / static_cast<double>(steps_);
  }
  Slice slice_of(std::int64_t s) const;
  double gather(const Slice& slice);  // returns wall seconds
  Computed compute(const Slice& slice, double t);
  void fill_tail(const Slice& slice, const Computed& c, double work_s);
  void exchange_and_update(const Slice& slice, double lr);
  void account(const Slice& slice, const Computed& c, double work_s);
  void account_own(const Slice& slice, const Computed& c, double work_s);
  // An averaging epoch's step: the local update and this rank's figures of it.
  void local_step(const Slice& slice, const Computed& c, double gather_s, double work_cpu,
                  double lr);
  bool average_follows(std::int64_t s) const {
    return (s + 1) % p_.config.average_every == 0 || s + 1 == steps_;
  }
  void average();
  void replan(std::int64_t s);
  EpochStats finish();

  // Seconds of work at the rank's sustained rate: wall, or SustainedTime's when held below its
  // threads.
  double sustained(double wall_s, double cpu_s) { return sustained_.add(wall_s, cpu_s); }

  const EpochParts& p_;
  const std::int64_t epoch_;
  const int world_, rank_;
  const std::int64_t n_train_;
  const int B_;
  const std::int64_t steps_;
  const std::size_t P_, px_;
  const bool replans_;
  const bool local_;                       // an averaging epoch
  const std::vector<std::int64_t>& perm_;  // held by parts.orders
  std::vector<float> buf_;
  float* time_slot_ = nullptr;  // the per-rank slots of buf_ (rebalance_every only)
  float* count_slot_ = nullptr;
  float* work_slot_ = nullptr;
  std::vector<float> x_;
  std::vector<std::int32_t> labels_;
  std::vector<std::int64_t> ids_;
  nn::Context ctx_;
  EpochStats es_;
  std::vector<std::pair<double, std::int64_t>> my_rates_;  // (samples / compute s, 1) per step
  std::vector<std::pair<int, double>> my_work_;            // (samples, work s) per step
  StepHistory history_;
  std::int64_t first_step_ = 0;
  std::int64_t window_start_ = 0;  // first step since the last re-plan
  trace::Timing& tm_;
  std::optional<CpuQuota> quota0_;
  double process_cpu0_ = 0;
  SustainedTime sustained_{0};  // held to the quota's cores when they are below the threads
  double update_s_ = 0;         // wall seconds of the previous step's optimizer update
  double update_cpu_ = 0;       // its process CPU seconds
  double wall_before_ = 0;      // wall seconds of the epoch before a resumed checkpoint
  float stop_ = 0;              // the stop count of the last exchange
  // An averaging epoch's figures since the last average: this rank's samples and loss sum, the
  // samples of the global steps, and with rebalance_every this rank's (compute_s, samples,
  // work_s) of each step.
  std::int64_t period_samples_ = 0, period_global_ = 0;
  double period_loss_ = 0;
  std::vector<float> period_steps_;
};

StepLoop::StepLoop(const EpochParts& parts, std::int64_t epoch,
                   std::optional<Interrupted>& resume_at, trace::Timing& timing)
    : p_(parts),
      epoch_(epoch),
      world_(parts.comm.size()),
      rank_(parts.comm.rank()),
      n_train_(static_cast<std::int64_t>(parts.train.n)),
      B_(parts.config.global_batch),
      steps_((n_train_ + B_ - 1) / B_),
      P_(parts.model.param_count()),
      px_(parts.train.pixels()),
      replans_(parts.config.rebalance_every > 0),
      local_(parts.config.averages_in(epoch)),
      perm_(parts.orders.at(static_cast<std::uint64_t>(epoch))),
      buf_(P_ + 3 + (replans_ ? 3 * static_cast<std::size_t>(world_) : 0)),
      x_(static_cast<std::size_t>(B_) * px_),
      labels_(static_cast<std::size_t>(B_)),
      ids_(static_cast<std::size_t>(B_)),
      history_{world_, {}, {}, {}},
      tm_(timing) {
  if (replans_) {
    time_slot_ = buf_.data() + P_ + 3;
    count_slot_ = time_slot_ + world_;
    work_slot_ = count_slot_ + world_;
  }
  ctx_.training = true;
  ctx_.seed = parts.config.seed;
  ctx_.epoch = static_cast<std::uint64_t>(epoch);
  ctx_.sample_ids = ids_.data();
  if (resume_at && resume_at->epoch == epoch) {  // continue an interrupted epoch
    first_step_ = resume_at->steps_done;
    es_ = resume_at->stats;
    es_.stopped_after = -1;
    es_.continued = true;
    history_.skip(first_step_);
    resume_at.reset();
  }
  window_start_ = first_step_;
  wall_before_ = es_.wall_s;
  tm_ = trace::Timing{};
  quota0_ = read_cpu_quota();
  process_cpu0_ = process_cpu();
  DBS_CHECK(!local_ || parts.local != nullptr);
  const int threads = parts.config.threads > 0 ? parts.config.threads : nn::available_threads();
  if (quota0_ && quota0_->cores > 0 && quota0_->cores + 1e-6 < threads)
    sustained_ = SustainedTime(quota0_->cores);
}

EpochStats StepLoop::run() {
  Progress progress(rank_ == 0 && p_.config.progress, epoch_, steps_);
  const Stopwatch wall;
  for (std::int64_t s = first_step_; s < steps_; ++s) {
    const double t = epoch_progress(s);
    p_.disturber.update(t);
    const Slice slice = slice_of(s);
    const double work_cpu0 = process_cpu();
    const double gather_s = gather(slice);
    const Computed c = compute(slice, t);
    const double work_cpu = process_cpu() - work_cpu0;  // gather + compute
    const double lr = optim::learning_rate(p_.config.schedule, B_, t);
    bool exchanged = true;
    if (local_) {
      local_step(slice, c, gather_s, work_cpu, lr);
      exchanged = average_follows(s);
      if (exchanged) average();
    } else {
      // The update of the step before, gathering and compute (sleep included).
      const double work_s = sustained(update_s_ + gather_s + c.compute_s, update_cpu_ + work_cpu);
      fill_tail(slice, c, work_s);
      exchange_and_update(slice, lr);
      account(slice, c, work_s);
    }
    if (exchanged && epoch_ + 1 < p_.config.epochs) {
      // Every rank has left the epoch's start (this exchange needed them all), so the next
      // epoch's permutation is shuffled beside this epoch's steps from here on (started at the
      // first such step; ahead() of the epoch being shuffled does nothing). Its CPU, about 1 ms
      // for 320,000 samples once an epoch, is in the process CPU of the steps it overlaps.
      p_.orders.ahead(static_cast<std::uint64_t>(epoch_ + 1));
    }
    if (exchanged && replans_ && (s + 1) % p_.config.rebalance_every == 0 && s + 1 < steps_)
      replan(s);
    progress.update(s + 1, static_cast<double>(es_.samples) / (wall_before_ + wall.seconds()));
    if (exchanged && stop_ > 0.0f && s + 1 < steps_) {  // a rank had a stop signal
      es_.stopped_after = s + 1;
      break;
    }
  }
  es_.wall_s = wall_before_ + wall.seconds();
  return finish();
}

StepLoop::Slice StepLoop::slice_of(std::int64_t s) const {
  Slice out;
  out.g0 = s * B_;
  out.gn = static_cast<int>(std::min<std::int64_t>(B_, n_train_ - out.g0));
  const std::vector<int> split = step_batch(p_.planner.plan(), out.gn);
  out.count = split[static_cast<std::size_t>(rank_)];
  out.offset = std::accumulate(split.begin(), split.begin() + rank_, 0);
  return out;
}

double StepLoop::gather(const Slice& slice) {
  const PhaseClock clock;
  for (int j = 0; j < slice.count; ++j) {
    const std::int64_t idx = perm_[static_cast<std::size_t>(slice.g0 + slice.offset + j)];
    std::copy_n(p_.train.image(static_cast<std::size_t>(idx)), px_, x_.data() + j * px_);
    labels_[j] = p_.train.labels[static_cast<std::size_t>(idx)];
    ids_[j] = idx;
  }
  return clock.stop(tm_.gather);
}

StepLoop::Computed StepLoop::compute(const Slice& slice, double t) {
  const PhaseClock clock;
  const Stopwatch cw;
  Computed out;
  Exchange& ex = local_ ? p_.local_exchange : p_.exchange;
  out.loss = ex.compute(x_.data(), labels_.data(), slice.count, ctx_, buf_);
  const double extra = p_.disturber.sleep_for(t, cw.seconds());
  if (extra > 0) std::this_thread::sleep_for(std::chrono::duration<double>(extra));
  out.compute_s = cw.seconds();
  clock.stop(tm_.compute);
  tm_.sleep_s += std::max(0.0, extra);
  return out;
}

void StepLoop::fill_tail(const Slice& slice, const Computed& c, double work_s) {
  buf_[P_] = static_cast<float>(slice.count);
  buf_[P_ + 1] = static_cast<float>(c.loss);
  buf_[P_ + 2] = stop_signal() != 0 ? 1.0f : 0.0f;
  if (replans_) {
    std::fill(time_slot_, time_slot_ + 3 * world_, 0.0f);  // the sums of the step before
    time_slot_[rank_] = static_cast<float>(c.compute_s);
    count_slot_[rank_] = static_cast<float>(slice.count);
    work_slot_[rank_] = static_cast<float>(work_s);
  }
}

void StepLoop::exchange_and_update(const Slice& slice, double lr) {
  Exchange& ex = p_.exchange;
  ex.prepare(p_.planner.plan());
  {
    const PhaseClock clock;
    ex.reduce(buf_);
    es_.report.comm_s += clock.stop(tm_.allreduce);
  }
  DBS_CHECK_EQ(static_cast<int>(buf_[P_]), slice.gn);
  {
    const PhaseClock clock;
    const double cpu0 = process_cpu();
    ex.update(std::span<const float>(buf_.data(), P_), lr, 1.0 / static_cast<double>(buf_[P_]));
    update_s_ = clock.stop(tm_.update);
    update_cpu_ = process_cpu() - cpu0;
  }
  if (ex.shares_parameters()) {
    const PhaseClock clock;
    ex.share();
    es_.report.comm_s += clock.stop(tm_.allreduce);
  }
}

void StepLoop::account(const Slice& slice, const Computed& c, double work_s) {
  es_.loss_sum += static_cast<double>(buf_[P_ + 1]);
  es_.samples += slice.gn;
  stop_ = buf_[P_ + 2];
  account_own(slice, c, work_s);
  if (replans_) history_.add(time_slot_, count_slot_, work_slot_);
}

void StepLoop::account_own(const Slice& slice, const Computed& c, double work_s) {
  es_.report.samples += slice.count;
  es_.report.compute_s += c.compute_s;
  if (slice.count > 0 && c.compute_s > 0) my_rates_.emplace_back(slice.count / c.compute_s, 1);
  my_work_.emplace_back(slice.count, work_s);
  tm_.busy_s += work_s;
}

void StepLoop::local_step(const Slice& slice, const Computed& c, double gather_s, double work_cpu,
                          double lr) {
  {
    const PhaseClock clock;
    const double cpu0 = process_cpu();
    p_.local->step(std::span<const float>(buf_.data(), P_), lr, slice.count);
    update_s_ = clock.stop(tm_.update);
    update_cpu_ = process_cpu() - cpu0;
  }
  // Gathering, compute (sleep included) and this step's update.
  const double work_s = sustained(gather_s + c.compute_s + update_s_, work_cpu + update_cpu_);
  period_samples_ += slice.count;
  period_global_ += slice.gn;
  period_loss_ += c.loss;
  if (replans_)
    period_steps_.insert(period_steps_.end(),
                         {static_cast<float>(c.compute_s), static_cast<float>(slice.count),
                          static_cast<float>(work_s)});
  account_own(slice, c, work_s);
}

void StepLoop::average() {
  const std::size_t steps = period_steps_.size() / 3, W = static_cast<std::size_t>(world_);
  const std::span<float> tail = p_.local->tail(3 + 3 * W * steps);
  std::fill(tail.begin(), tail.end(), 0.0f);
  tail[0] = static_cast<float>(period_samples_);
  tail[1] = static_cast<float>(period_loss_);
  tail[2] = stop_signal() != 0 ? 1.0f : 0.0f;
  const auto me = static_cast<std::size_t>(rank_);
  for (std::size_t k = 0; k < steps; ++k) {
    float* slots = tail.data() + 3 + 3 * W * k;
    slots[me] = period_steps_[3 * k];
    slots[W + me] = period_steps_[3 * k + 1];
    slots[2 * W + me] = period_steps_[3 * k + 2];
  }
  {
    const PhaseClock clock;
    p_.local->average();
    es_.report.comm_s += clock.stop(tm_.allreduce);
  }
  DBS_CHECK_EQ(static_cast<std::int64_t>(tail[0]), period_global_);
  es_.loss_sum += static_cast<double>(tail[1]);
  es_.samples += period_global_;
  stop_ = tail[2];
  ++es_.averages;
  for (std::size_t k = 0; k < steps; ++k) {
    const float* slots = tail.data() + 3 + 3 * W * k;
    history_.add(slots, slots + W, slots + 2 * W);
  }
  period_samples_ = period_global_ = 0;
  period_loss_ = 0;
  period_steps_.clear();
}

void StepLoop::replan(std::int64_t s) {
  const auto window = history_.reports(epoch_, p_.planner.plan(), window_start_, s + 1);
  if (const auto re = p_.planner.rebalance(window)) {
    ++es_.replans;
    if (p_.trace) p_.trace->write(trace::plan_record(re->plan, s + 1, re->source));
  }
  window_start_ = s + 1;
}

EpochStats StepLoop::finish() {
  tm_.wall_s = es_.wall_s;
  tm_.steps = steps_;
  tm_.process_cpu_s = process_cpu() - process_cpu0_;
  if (const std::optional<CpuQuota> q = read_cpu_quota(); q && quota0_) {
    tm_.quota_cores = q->cores;
    tm_.nr_throttled = q->nr_throttled - quota0_->nr_throttled;
    tm_.throttled_s = q->throttled_s - quota0_->throttled_s;
  }
  p_.disturber.update(static_cast<double>(epoch_ + 1));
  es_.report.rank = rank_;
  es_.report.epoch = epoch_;
  es_.report.batch = p_.planner.plan().batch[rank_];
  es_.report.steps = steps_;
  es_.report.step_rate_median = policy::median_rate(std::move(my_rates_));
  es_.report.work = policy::cost_points(my_work_);
  // Re-planning inside the epoch: the next epoch's plan follows the latest K steps, not the
  // whole epoch (whose median may still describe the time before a change).
  if (replans_) {
    const std::int64_t from =
        std::max<std::int64_t>(first_step_, steps_ - p_.config.rebalance_every);
    es_.plan_reports = history_.reports(epoch_, p_.planner.plan(), from, steps_);
  }
  return std::move(es_);
}

}  // namespace

EpochStats run_epoch(const EpochParts& parts, std::int64_t epoch,
                     std::optional<Interrupted>& resume_at, trace::Timing& timing) {
  return StepLoop(parts, epoch, resume_at, timing).run();
}

}  // namespace dbs::train::detail
