// The C ABI (<dbs/dbs.h>) over the C++ API: every entry point runs its body in guard(), which
// turns any exception into a dbs_status and the thread's last-error message (lib/api/c_api.h).
// The dbs_remote setters are in c_remote.cpp.
#include "lib/api/c_api.h"

#include <dbs/dbs.h>
#include <dbs/error.h>
#include <dbs/meter.h>
#include <dbs/planner.h>
#include <dbs/steps.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <string>

struct dbs_settings {
  dbs::Settings settings;
};

struct dbs_planner {
  dbs::Group group;
  std::unique_ptr<dbs::Planner> planner;
  dbs::Meter meter;   // the epoch's steps
  dbs::Meter window;  // the steps since the last re-plan (rebalance_every)
  std::string source = "initial";
  std::string fallback_why;             // dbs_planner_fallback's *why
  std::optional<dbs::Sampler> sampler;  // of the last (samples, seed) asked for
  std::uint64_t sampler_seed = 0;
};

namespace {

using dbs::api::guard;
using dbs::api::last_error;
using dbs::api::need;

dbs::Sampler& sampler_of(dbs_planner* p, std::int64_t samples, std::uint64_t seed) {
  const dbs::Plan& plan = p->planner->plan();
  if (!p->sampler || p->sampler->samples() != samples || p->sampler_seed != seed) {
    p->sampler.emplace(samples, plan.global_batch, p->group.size, seed);
    p->sampler_seed = seed;
  }
  return *p->sampler;
}

}  // namespace

extern "C" {

const char* dbs_last_error(void) {
  return last_error.c_str();
}

void dbs_api_version(int* major, int* minor) {
  const dbs::ApiVersion v = dbs::api_version();
  if (major != nullptr) *major = v.major;
  if (minor != nullptr) *minor = v.minor;
}

dbs_status dbs_settings_create(dbs_settings** out) {
  return guard([&] {
    need(out, "out");
    *out = new dbs_settings{};
  });
}

void dbs_settings_destroy(dbs_settings* settings) {
  delete settings;
}

dbs_status dbs_settings_set_policy(dbs_settings* s, const char* policy) {
  return guard([&] {
    need(s, "settings");
    need(policy, "policy");
    s->settings.policy = dbs::parse_policy(policy);
  });
}

dbs_status dbs_settings_set_global_batch(dbs_settings* s, int global_batch) {
  return guard([&] {
    need(s, "settings");
    if (global_batch < 1)
      throw dbs::InputError("global batch " + std::to_string(global_batch) +
                            ": must be at least 1");
    s->settings.global_batch = global_batch;
  });
}

dbs_status dbs_settings_set_samples_per_epoch(dbs_settings* s, int64_t samples) {
  return guard([&] {
    need(s, "settings");
    if (samples < 0) throw dbs::InputError("samples per epoch " + std::to_string(samples));
    s->settings.samples_per_epoch = samples;
  });
}

dbs_status dbs_settings_set_batch_bounds(dbs_settings* s, int min_batch, int max_batch) {
  return guard([&] {
    need(s, "settings");
    if (min_batch < 0 || max_batch < 0 || (max_batch > 0 && max_batch < min_batch))
      throw dbs::InputError("batch bounds [" + std::to_string(min_batch) + ", " +
                            std::to_string(max_batch) + "]");
    s->settings.min_batch = min_batch;
    s->settings.max_batch = max_batch;
  });
}

dbs_status dbs_settings_set_min_gain(dbs_settings* s, double min_gain) {
  return guard([&] {
    need(s, "settings");
    if (!(min_gain >= 0 && min_gain < 1))
      throw dbs::InputError("min gain " + std::to_string(min_gain) + ": must be in [0, 1)");
    s->settings.min_gain = min_gain;
  });
}

dbs_status dbs_settings_set_rebalance_every(dbs_settings* s, int steps) {
  return guard([&] {
    need(s, "settings");
    if (steps < 0) throw dbs::InputError("rebalance every " + std::to_string(steps) + " steps");
    s->settings.rebalance_every = steps;
  });
}

dbs_status dbs_planner_create(const dbs_settings* settings, int rank, int world,
                              dbs_allgather_fn allgather, void* user, const dbs_remote* remote,
                              dbs_planner** out) {
  return guard([&] {
    need(settings, "settings");
    need(out, "out");
    *out = nullptr;
    auto p = std::make_unique<dbs_planner>();
    p->group.rank = rank;
    p->group.size = world;
    if (allgather != nullptr)
      p->group.allgather = [allgather, user](const void* in, std::size_t bytes, void* o) {
        if (allgather(user, in, bytes, o) != 0)
          throw dbs::CommError("the caller's allgather failed");
      };
    p->planner = dbs::make_planner(settings->settings, p->group,
                                   remote != nullptr ? remote->remote : dbs::Remote{});
    *out = p.release();
  });
}

void dbs_planner_destroy(dbs_planner* planner, int done) {
  if (planner == nullptr) return;
  guard([&] { planner->planner->finish(done != 0); });
  delete planner;
}

dbs_status dbs_planner_plan(dbs_planner* p, dbs_plan* out) {
  return guard([&] {
    need(p, "planner");
    need(out, "out");
    const dbs::Plan& plan = p->planner->plan();
    out->epoch = plan.epoch;
    out->global_batch = plan.global_batch;
    out->world = plan.world();
    out->batch = plan.batch.data();
    out->offset = plan.offset.data();
    out->throughput = plan.throughput.data();
    out->predicted_epoch_s = plan.predicted_epoch_s;
    out->changed = plan.changed ? 1 : 0;
    out->reason = plan.reason.c_str();
    out->source = p->source.c_str();
  });
}

dbs_status dbs_planner_step(dbs_planner* p, int samples, double work_s, double comm_s) {
  return guard([&] {
    need(p, "planner");
    p->meter.step(samples, work_s, comm_s);
    p->window.step(samples, work_s, comm_s);
  });
}

dbs_status dbs_planner_rebalance(dbs_planner* p, int* changed) {
  return guard([&] {
    need(p, "planner");
    need(changed, "changed");
    *changed = 0;
    const dbs::Report mine = p->window.report(p->planner->plan(), p->group.rank);
    const std::vector<dbs::Report> all = dbs::gather_reports(p->group, mine);
    p->window.reset();
    if (const auto re = p->planner->rebalance(all)) {
      p->source = re->source;
      *changed = 1;
    }
  });
}

dbs_status dbs_planner_end_epoch(dbs_planner* p) {
  return guard([&] {
    need(p, "planner");
    const dbs::Report mine = p->meter.report(p->planner->plan(), p->group.rank);
    const std::vector<dbs::Report> all = dbs::gather_reports(p->group, mine);
    p->meter.reset();
    p->window.reset();
    p->source = p->planner->next(all).source;
  });
}

dbs_status dbs_planner_fallback(dbs_planner* p, int* cause, const char** why) {
  return guard([&] {
    need(p, "planner");
    need(cause, "cause");
    const dbs::Fallback f = dbs::last_fallback(*p->planner);
    using Cause = dbs::Fallback::Cause;
    *cause = f.cause == Cause::foreign  ? DBS_FALLBACK_FOREIGN
             : f.cause == Cause::outage ? DBS_FALLBACK_OUTAGE
                                        : DBS_FALLBACK_NONE;
    p->fallback_why = f.why;
    if (why) *why = p->fallback_why.c_str();
  });
}

dbs_status dbs_planner_state(const dbs_planner* p, double* state, size_t capacity, size_t* count) {
  return guard([&] {
    need(p, "planner");
    need(count, "count");
    const std::vector<double> s = p->planner->state();
    *count = s.size();
    if (capacity == 0) return;
    need(state, "state");
    if (capacity < s.size())
      throw dbs::InputError("state holds " + std::to_string(capacity) + ", the planner's has " +
                            std::to_string(s.size()));
    std::copy(s.begin(), s.end(), state);
  });
}

dbs_status dbs_planner_restore(dbs_planner* p, int64_t epoch, const int* batch, int world,
                               const double* state, size_t count) {
  return guard([&] {
    need(p, "planner");
    need(batch, "batch");
    if (count > 0) need(state, "state");
    if (epoch < 0) throw dbs::InputError("restore: epoch " + std::to_string(epoch) + " < 0");
    if (world != p->group.size)
      throw dbs::InputError("restore: a plan of " + std::to_string(world) + " ranks, the job has " +
                            std::to_string(p->group.size));
    dbs::Plan plan;
    plan.epoch = epoch;
    plan.batch.assign(batch, batch + world);
    for (int b : plan.batch) plan.global_batch += b;
    plan.offset = dbs::offsets_of(plan.batch);
    plan.throughput.assign(static_cast<std::size_t>(world), 0.0);
    plan.reason = "restored";
    p->planner->set_state(plan, std::vector<double>(state, state + count));
    p->meter.reset();
    p->window.reset();
    p->source = "restored";
  });
}

dbs_status dbs_steps_per_epoch(const dbs_planner* p, int64_t samples, int64_t* out) {
  return guard([&] {
    need(p, "planner");
    need(out, "out");
    *out = dbs::Sampler(samples, p->planner->plan().global_batch, p->group.size, 0).steps();
  });
}

dbs_status dbs_step_indices(dbs_planner* p, int64_t samples, uint64_t seed, int64_t step,
                            int64_t* indices, int64_t capacity, int64_t* count) {
  return guard([&] {
    need(p, "planner");
    need(indices, "indices");
    need(count, "count");
    const std::vector<std::int64_t> mine =
        sampler_of(p, samples, seed).indices(p->planner->plan(), p->group.rank, step);
    if (static_cast<std::int64_t>(mine.size()) > capacity)
      throw dbs::InputError("indices holds " + std::to_string(capacity) + ", the step needs " +
                            std::to_string(mine.size()));
    std::copy(mine.begin(), mine.end(), indices);
    *count = static_cast<std::int64_t>(mine.size());
  });
}

dbs_status dbs_permutation(int64_t samples, uint64_t seed, int64_t epoch, int64_t* out) {
  return guard([&] {
    need(out, "out");
    const std::vector<std::int64_t> perm = dbs::permutation(samples, seed, epoch);
    std::copy(perm.begin(), perm.end(), out);
  });
}

}  // extern "C"
