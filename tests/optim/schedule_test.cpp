#include "lib/optim/schedule.h"

#include <doctest/doctest.h>

#include "lib/common/error.h"

namespace {

using dbs::optim::learning_rate;
using dbs::optim::parse_scaling;
using dbs::optim::ScheduleConfig;
using dbs::optim::Scaling;

// base_lr 0.1 tuned at batch 128, run at batch kBatch = 512 (4x).
constexpr int kBatch = 512;

ScheduleConfig four_times(Scaling scaling) {
  ScheduleConfig c;
  c.base_lr = 0.1;
  c.scaling = scaling;
  c.base_batch = 128;
  return c;
}

}  // namespace

TEST_CASE("Schedule.Scaling.Constant") {
  const ScheduleConfig c = four_times(Scaling::none);
  CHECK(learning_rate(c, kBatch, 0.0) == doctest::Approx(0.1));
  CHECK(learning_rate(c, kBatch, 3.7) == doctest::Approx(0.1));
}

TEST_CASE("Schedule.Scaling.Linear") {
  CHECK(learning_rate(four_times(Scaling::linear), kBatch, 0.0) == doctest::Approx(0.4));
}

TEST_CASE("Schedule.Scaling.Sqrt") {
  CHECK(learning_rate(four_times(Scaling::sqrt), kBatch, 1.5) == doctest::Approx(0.2));
}

TEST_CASE("Schedule.Warmup.RampsFromBaseToTarget") {
  ScheduleConfig c = four_times(Scaling::linear);
  c.warmup_epochs = 5;
  CHECK(learning_rate(c, kBatch, 0.0) == doctest::Approx(0.1));
  CHECK(learning_rate(c, kBatch, 2.5) == doctest::Approx(0.25));  // midpoint
  CHECK(learning_rate(c, kBatch, 4.9) == doctest::Approx(0.394));
  CHECK(learning_rate(c, kBatch, 5.0) == doctest::Approx(0.4));  // end
  CHECK(learning_rate(c, kBatch, 9.0) == doctest::Approx(0.4));
}

TEST_CASE("Schedule.Decay.EpochsFromOne.AppliesAtEpochStartAndCompounds") {
  ScheduleConfig c = four_times(Scaling::linear);
  c.decay_epochs = {4, 7};  // the 4th epoch starts at t = 3.0, the 7th at t = 6.0
  c.decay_factor = 0.1;
  CHECK(learning_rate(c, kBatch, 2.99) == doctest::Approx(0.4));
  CHECK(learning_rate(c, kBatch, 3.0) == doctest::Approx(0.04));
  CHECK(learning_rate(c, kBatch, 5.5) == doctest::Approx(0.04));
  CHECK(learning_rate(c, kBatch, 6.0) == doctest::Approx(0.004));
  CHECK(learning_rate(c, kBatch, 20.0) == doctest::Approx(0.004));
}

TEST_CASE("Schedule.Decay.NotDuringWarmup") {
  ScheduleConfig c = four_times(Scaling::none);
  c.warmup_epochs = 2;
  c.decay_epochs = {2};
  c.decay_factor = 0.5;
  CHECK(learning_rate(c, kBatch, 1.5) == doctest::Approx(0.1));
  CHECK(learning_rate(c, kBatch, 2.0) == doctest::Approx(0.05));
}

TEST_CASE("Schedule.Validate.AcceptsDefaults") {
  CHECK_NOTHROW(dbs::optim::validate(ScheduleConfig{}, kBatch));
}

TEST_CASE("Schedule.Validate.RejectsBadValues") {
  ScheduleConfig c;
  c.base_lr = 0;
  CHECK_THROWS_WITH_AS(dbs::optim::validate(c, kBatch), "lr schedule: base_lr must be > 0, got 0",
                       dbs::ConfigError);
  c = {};
  c.base_batch = 0;
  CHECK_THROWS_WITH_AS(dbs::optim::validate(c, kBatch), "lr schedule: base_batch must be > 0, got 0",
                       dbs::ConfigError);
  c = {};
  CHECK_THROWS_WITH_AS(dbs::optim::validate(c, -4), "lr schedule: global_batch must be > 0, got -4",
                       dbs::ConfigError);
  c = {};
  c.warmup_epochs = -1;
  CHECK_THROWS_WITH_AS(dbs::optim::validate(c, kBatch),
                       "lr schedule: warmup_epochs must be >= 0, got -1", dbs::ConfigError);
  c = {};
  c.decay_epochs = {2, 0};
  CHECK_THROWS_WITH_AS(dbs::optim::validate(c, kBatch),
                       "lr schedule: decay_epochs (epochs count from 1) must be >= 1, got 0",
                       dbs::ConfigError);
  c = {};
  c.decay_factor = 0;
  CHECK_THROWS_WITH_AS(dbs::optim::validate(c, kBatch), "lr schedule: decay_factor must be > 0, got 0",
                       dbs::ConfigError);
}

TEST_CASE("Schedule.ParseScaling.KnownNames") {
  CHECK(parse_scaling("none") == Scaling::none);
  CHECK(parse_scaling("constant") == Scaling::none);
  CHECK(parse_scaling("linear") == Scaling::linear);
  CHECK(parse_scaling("sqrt") == Scaling::sqrt);
}

TEST_CASE("Schedule.ParseScaling.RejectsUnknown") {
  CHECK_THROWS_WITH_AS(parse_scaling("Linear"),
                       "unknown lr scaling 'Linear' (valid: none, constant, linear, sqrt)",
                       dbs::ConfigError);
  CHECK_THROWS_WITH_AS(parse_scaling(""), "unknown lr scaling '' (valid: none, constant, linear, sqrt)",
                       dbs::ConfigError);
}
