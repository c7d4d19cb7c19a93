// One epoch of synchronous training on this rank.
//
// Words: B global batch, S = ceil(N / B) steps, step s trains on the global batch
// perm[s*B, s*B + gn) with gn = min(B, N - s*B); this rank's slice is [o, o + b) of it, from the
// plan (a short last step is split in the plan's proportions, policy::step_batch). The allreduced
// buffer is
//   [ gradient sums (P) | sample count | loss sum | stop | compute_s per rank (W)
//     | samples per rank (W) | work_s per rank (W) ]
// so every rank learns every rank's step time without another collective; the 3W per-rank slots
// are there only with rebalance_every > 0, which is what needs them. stop counts the ranks that
// had a stop signal (stop.h) when they sent the step: > 0 ends the epoch after it on every rank.
// A step's work time is the rank's own time between two allreduces (policy::CostPoint): the
// previous step's optimizer update, gathering its slice and compute. On a rank whose cgroup's
// CPU quota is below its threads it is the larger of that and the process CPU time of that work
// divided by the quota (in cores): the step's time at the rate the quota sustains. Such a rank
// given little work waits long enough between steps for its quota to refill and runs each step
// at full speed; given more, it is throttled. Its wall work time is then a staircase in its batch
// that made the plan swing between the two (README, three ranks under quotas).
// With the sharded update (Config::update) the buffer's tail is allreduced on its own, the
// gradient sums are reduce-scattered in the plan's slices (shard_counts), each rank updates its
// slice, and the parameters are allgathered: the ring's two halves with the update between them.
// With overlap (Config::overlap) the gradient goes in buckets of whole layers (gradient_buckets),
// each started (non-blocking) as soon as the backward pass has finished its layers, the last
// layers first, so most of the exchange runs while the first layers still compute; the tail
// follows after the compute, and the step waits for all of them before the update.
#include <algorithm>
#include <chrono>
#include <numeric>
#include <thread>

#include "lib/common/cpu_quota.h"
#include "lib/common/error.h"
#include "lib/common/timer.h"
#include "lib/policy/cost.h"
#include "lib/data/sampler.h"
#include "lib/nn/kernels.h"
#include "lib/nn/threads.h"
#include "lib/policy/steps.h"
#include "lib/train/state.h"
#include "lib/train/stop.h"

namespace dbs::train::detail {
namespace {

// Rates of single steps: (samples / compute s, 1), for policy::median_rate.
using Rates = std::vector<std::pair<double, std::int64_t>>;

// Times one phase of a step: wall and thread CPU from construction to stop().
class PhaseClock {
 public:
  PhaseClock() : cpu0_(cpu_seconds()) {}
  // Adds the time since construction to phase; returns the wall seconds.
  double stop(Phase& phase) const {
    const double wall = wall_.seconds();
    phase.wall_s += wall;
    phase.cpu_s += cpu_seconds() - cpu0_;
    return wall;
  }

 private:
  Stopwatch wall_;
  double cpu0_;
};

// Every rank's compute time, sample count and work time of every step of the epoch (all ranks
// know them from the shared buffer), and reports over a range of steps from them.
struct StepHistory {
  int world;
  std::vector<float> time, count, work;  // step s, rank i at s * world + i
  std::vector<policy::Report> reports(std::int64_t epoch, const policy::Plan& plan,
                                      std::int64_t begin, std::int64_t end) const {
    std::vector<policy::Report> out(static_cast<std::size_t>(world));
    for (int i = 0; i < world; ++i) {
      policy::Report& r = out[static_cast<std::size_t>(i)];
      r.rank = i;
      r.epoch = epoch;
      r.batch = plan.batch[static_cast<std::size_t>(i)];
      r.steps = end - begin;
      Rates rates;
      std::vector<std::pair<int, double>> steps;
      double samples = 0;
      for (std::int64_t s = begin; s < end; ++s) {
        const auto at = static_cast<std::size_t>(s * world + i);
        const double t = static_cast<double>(time[at]);
        const double n = static_cast<double>(count[at]);
        steps.emplace_back(static_cast<int>(n), static_cast<double>(work[at]));
        samples += n;
        r.compute_s += t;
        if (n > 0 && t > 0) rates.emplace_back(n / t, 1);
      }
      r.samples = static_cast<std::int64_t>(samples);
      r.step_rate_median = policy::median_rate(std::move(rates));
      r.work = policy::cost_points(steps);
    }
    return out;
  }
};

// A bucket of the overlapped gradient exchange: parameters [begin, end), the whole layers from
// `layer` on up to the next bucket; started when the backward of `layer` is done.
struct Bucket {
  std::size_t layer, begin, end;
};

// Last layers first, each bucket at least kBucketFloats parameters (the first layers' remainder
// may be fewer). The same on every rank: it depends on the model only. cnn: 4 buckets, the dense
// layers' 101,110 and 257,000, conv3's 295,168, conv1 + conv2's 37,312.
std::vector<Bucket> gradient_buckets(const nn::Model& model) {
  constexpr std::size_t kBucketFloats = std::size_t{1} << 16;  // 256 KiB
  std::vector<Bucket> out;
  std::size_t end = model.param_count();
  for (std::size_t i = model.layer_count(); i-- > 0;) {
    const std::size_t begin = model.param_offset(i);
    if (end - begin >= kBucketFloats || (i == 0 && end > begin)) {
      out.push_back({i, begin, end});
      end = begin;
    }
  }
  return out;
}

}  // namespace

EpochStats run_epoch(State& st, std::int64_t epoch) {
  const Config& cfg = st.config;
  const int world = st.comm.size(), rank = st.comm.rank();
  const std::int64_t n_train = static_cast<std::int64_t>(st.train.n);
  const int B = cfg.global_batch;
  const std::int64_t steps = (n_train + B - 1) / B;
  const std::size_t P = st.model->param_count();
  const std::size_t px = st.train.pixels();
  const std::vector<std::int64_t> perm =
      data::EpochSampler(st.train.n, cfg.seed).permutation(static_cast<std::uint64_t>(epoch));

  const bool replans = cfg.rebalance_every > 0;
  const bool sharded = cfg.update == "sharded";
  const bool overlap = st.overlap;
  const std::vector<Bucket> buckets = overlap ? gradient_buckets(*st.model) : std::vector<Bucket>{};
  std::vector<float> buf(P + 3 + (replans ? 3 * static_cast<std::size_t>(world) : 0));
  float* const time_slot = replans ? buf.data() + P + 3 : nullptr;
  float* const count_slot = replans ? time_slot + world : nullptr;
  float* const work_slot = replans ? count_slot + world : nullptr;
  std::vector<float> x(static_cast<std::size_t>(B) * px);
  std::vector<std::int32_t> labels(static_cast<std::size_t>(B));
  std::vector<std::int64_t> ids(static_cast<std::size_t>(B));
  nn::Context ctx;
  ctx.training = true;
  ctx.seed = cfg.seed;
  ctx.epoch = static_cast<std::uint64_t>(epoch);
  ctx.sample_ids = ids.data();

  EpochStats es;
  Rates my_rates;
  std::vector<std::pair<int, double>> my_work;  // (b, work s) per step
  StepHistory history{world, {}, {}, {}};
  std::int64_t first_step = 0;
  if (st.resume_at && st.resume_at->epoch == epoch) {  // continue an interrupted epoch
    first_step = st.resume_at->steps_done;
    es = st.resume_at->stats;
    es.stopped_after = -1;
    es.continued = true;
    history.time.assign(static_cast<std::size_t>(first_step * world), 0.0f);
    history.count = history.time;
    history.work = history.time;
    st.resume_at.reset();
  }
  EpochTiming& tm = st.timing;
  tm = EpochTiming{};
  const std::optional<CpuQuota> quota0 = read_cpu_quota();
  const double process_cpu0 = cpu_seconds(CLOCK_PROCESS_CPUTIME_ID);
  // Cores of the quota when it is below the rank's threads (work times at its sustained rate).
  const int threads = cfg.threads > 0 ? cfg.threads : nn::available_threads();
  const double held_to = quota0 && quota0->cores > 0 && quota0->cores + 1e-6 < threads ? quota0->cores : 0.0;
  const auto sustained = [held_to](double wall_s, double cpu_s) {
    return held_to > 0 ? std::max(wall_s, cpu_s / held_to) : wall_s;
  };
  double update_s = 0;    // wall seconds of the previous step's optimizer update
  double update_cpu = 0;  // its process CPU seconds
  std::int64_t window_start = first_step;  // first step since the last re-plan
  const double wall_before = es.wall_s;
  Progress progress(rank == 0 && cfg.progress, epoch, steps);
  Stopwatch wall;
  for (std::int64_t s = first_step; s < steps; ++s) {
    const double t = static_cast<double>(epoch) + static_cast<double>(s) / static_cast<double>(steps);
    st.disturber->update(t);
    const std::int64_t g0 = s * B;
    const int gn = static_cast<int>(std::min<std::int64_t>(B, n_train - g0));
    const std::vector<int> split = policy::step_batch(st.planner->plan(), gn);
    const int lb = split[static_cast<std::size_t>(rank)];
    const int lo = std::accumulate(split.begin(), split.begin() + rank, 0);
    const double work_cpu0 = cpu_seconds(CLOCK_PROCESS_CPUTIME_ID);
    const PhaseClock gather;
    for (int j = 0; j < lb; ++j) {
      const std::int64_t idx = perm[static_cast<std::size_t>(g0 + lo + j)];
      std::copy_n(st.train.image(static_cast<std::size_t>(idx)), px, x.data() + j * px);
      labels[j] = st.train.labels[static_cast<std::size_t>(idx)];
      ids[j] = idx;
    }
    const double gather_s = gather.stop(tm.gather);
    const PhaseClock compute;
    Stopwatch cw;
    double loss = 0.0;
    if (lb == 0) std::fill_n(buf.begin(), P, 0.0f);
    if (overlap) {
      std::size_t next = 0;  // the next bucket to start
      const auto start_ready = [&](std::size_t layer) {
        for (; next < buckets.size() && buckets[next].layer >= layer; ++next) {
          const Bucket& k = buckets[next];
          const auto g = st.model->grads().subspan(k.begin, k.end - k.begin);
          if (lb > 0) std::copy(g.begin(), g.end(), buf.begin() + static_cast<std::ptrdiff_t>(k.begin));
          st.comm.start_allreduce_sum(std::span<float>(buf).subspan(k.begin, k.end - k.begin));
        }
        st.comm.progress();
      };
      if (lb > 0) loss = st.model->loss_and_grads(x.data(), labels.data(), lb, ctx, nullptr, start_ready);
      start_ready(0);  // all of them when this rank computed nothing
    } else if (lb > 0) {
      loss = st.model->loss_and_grads(x.data(), labels.data(), lb, ctx);
      std::copy(st.model->grads().begin(), st.model->grads().end(), buf.begin());
    }
    const double extra = st.disturber->sleep_for(t, cw.seconds());
    if (extra > 0) std::this_thread::sleep_for(std::chrono::duration<double>(extra));
    const double compute_s = cw.seconds();
    compute.stop(tm.compute);
    tm.sleep_s += std::max(0.0, extra);
    const double work_cpu = cpu_seconds(CLOCK_PROCESS_CPUTIME_ID) - work_cpu0;  // gather + compute
    // The update of the step before, gathering and compute (sleep included).
    const double work_s = sustained(update_s + gather_s + compute_s, update_cpu + work_cpu);
    buf[P] = static_cast<float>(lb);
    buf[P + 1] = static_cast<float>(loss);
    buf[P + 2] = stop_signal() != 0 ? 1.0f : 0.0f;
    if (replans) {
      std::fill(time_slot, time_slot + 3 * world, 0.0f);  // the sums of the step before
      time_slot[rank] = static_cast<float>(compute_s);
      count_slot[rank] = static_cast<float>(lb);
      work_slot[rank] = static_cast<float>(work_s);
    }

    const double lr = optim::learning_rate(cfg.schedule, t);
    if (sharded) {  // the sums of the tail, then the gradient's halves around this rank's update
      const std::vector<std::size_t> counts = shard_counts(st.planner->plan().batch, P);
      if (counts != st.shards) gather_optimizer_state(st);  // the slices move with the plan
      const PhaseClock reduce;
      st.comm.allreduce_sum(std::span<float>(buf).subspan(P));
      st.comm.reduce_scatter_sum(std::span<float>(buf.data(), P), counts);
      es.report.comm_s += reduce.stop(tm.allreduce);
      st.shards = counts;
      DBS_CHECK_EQ(static_cast<int>(buf[P]), gn);
      const std::size_t begin = shard_begin(counts, rank);
      const PhaseClock update;
      const double update_cpu0 = cpu_seconds(CLOCK_PROCESS_CPUTIME_ID);
      st.optimizer->step_range(st.model->params(), std::span<const float>(buf.data(), P), lr,
                               1.0 / static_cast<double>(buf[P]), begin,
                               begin + counts[static_cast<std::size_t>(rank)]);
      update_s = update.stop(tm.update);
      update_cpu = cpu_seconds(CLOCK_PROCESS_CPUTIME_ID) - update_cpu0;
      const PhaseClock share;
      st.comm.allgather_segments(st.model->params(), counts);
      es.report.comm_s += share.stop(tm.allreduce);
    } else {
      const PhaseClock reduce;
      if (overlap) {  // the gradient's buckets are under way since the backward
        st.comm.start_allreduce_sum(std::span<float>(buf).subspan(P));
        st.comm.finish();
      } else {
        st.comm.allreduce_sum(buf);
      }
      es.report.comm_s += reduce.stop(tm.allreduce);
      DBS_CHECK_EQ(static_cast<int>(buf[P]), gn);
      const PhaseClock update;
      const double update_cpu0 = cpu_seconds(CLOCK_PROCESS_CPUTIME_ID);
      st.optimizer->step(st.model->params(), std::span<const float>(buf.data(), P), lr,
                         1.0 / static_cast<double>(buf[P]));
      update_s = update.stop(tm.update);
      update_cpu = cpu_seconds(CLOCK_PROCESS_CPUTIME_ID) - update_cpu0;
    }

    es.loss_sum += static_cast<double>(buf[P + 1]);
    es.samples += gn;
    es.report.samples += lb;
    es.report.compute_s += compute_s;
    if (lb > 0 && compute_s > 0) my_rates.emplace_back(lb / compute_s, 1);
    my_work.emplace_back(lb, sustained(gather_s + compute_s + update_s, work_cpu + update_cpu));
    tm.busy_s += my_work.back().second;
    if (replans) {
      history.time.insert(history.time.end(), time_slot, time_slot + world);
      history.count.insert(history.count.end(), count_slot, count_slot + world);
      history.work.insert(history.work.end(), work_slot, work_slot + world);
    }
    if (replans && (s + 1) % cfg.rebalance_every == 0 && s + 1 < steps) {
      const auto window = history.reports(epoch, st.planner->plan(), window_start, s + 1);
      if (const auto re = st.planner->rebalance(window)) {
        ++es.replans;
        if (st.trace) st.trace->write(trace::plan_record(re->plan, s + 1, re->source));
      }
      window_start = s + 1;
    }
    progress.update(s + 1, static_cast<double>(es.samples) / (wall_before + wall.seconds()));
    if (buf[P + 2] > 0.0f && s + 1 < steps) {
      es.stopped_after = s + 1;
      break;
    }
  }
  es.wall_s = wall_before + wall.seconds();
  tm.wall_s = es.wall_s;
  tm.steps = steps;
  tm.process_cpu_s = cpu_seconds(CLOCK_PROCESS_CPUTIME_ID) - process_cpu0;
  if (const std::optional<CpuQuota> q = read_cpu_quota(); q && quota0) {
    tm.quota_cores = q->cores;
    tm.nr_throttled = q->nr_throttled - quota0->nr_throttled;
    tm.throttled_s = q->throttled_s - quota0->throttled_s;
  }
  st.disturber->update(static_cast<double>(epoch + 1));
  es.report.rank = rank;
  es.report.epoch = epoch;
  es.report.batch = st.planner->plan().batch[rank];
  es.report.steps = steps;
  es.report.step_rate_median = policy::median_rate(std::move(my_rates));
  es.report.work = policy::cost_points(my_work);
  // Re-planning inside the epoch: the next epoch's plan follows the latest K steps, not the
  // whole epoch (whose median may still describe the time before a change).
  if (replans) {
    const std::int64_t from = std::max<std::int64_t>(first_step, steps - cfg.rebalance_every);
    es.plan_reports = history.reports(epoch, st.planner->plan(), from, steps);
  }
  return es;
}

std::pair<double, double> evaluate(State& st) {
  constexpr int kBatch = 256;
  const int world = st.comm.size(), rank = st.comm.rank();
  const std::size_t n = st.test.n;
  const std::size_t begin = n * rank / world, end = n * (rank + 1) / world;
  nn::Context ctx;  // inference: no dropout
  double sums[2] = {0.0, 0.0};  // loss, correct
  for (std::size_t i = begin; i < end; i += kBatch) {
    const int m = static_cast<int>(std::min<std::size_t>(kBatch, end - i));
    const nn::Tensor& logits = st.model->forward(st.test.image(i), m, ctx);
    int correct = 0;
    sums[0] += nn::fast::softmax_xent(m, st.model->classes(), logits.ptr(),
                                      st.test.labels.data() + i, nullptr, &correct);
    sums[1] += correct;
  }
  st.comm.allreduce_sum(std::span<double>(sums, 2));
  const double total = static_cast<double>(std::max<std::size_t>(n, 1));
  return {sums[0] / total, sums[1] / total};
}

}  // namespace dbs::train::detail
