// The daemon's per-job state without sockets: when it plans, what it does with late, early and
// duplicate reports, and that a journalled outcome restores the same job.
#include "scheduler/serve/job.h"

#include <doctest/doctest.h>

#include "lib/common/fields.h"
#include "lib/proto/checks.h"
#include "lib/proto/codec.h"
#include "lib/proto/protocol.h"

namespace {

using namespace dbs;
using scheduler::Job;

Settings config() {
  Settings c;
  c.global_batch = 120;
  c.samples_per_epoch = 1200;
  return c;
}

Report report(int rank, std::int64_t epoch, int batch, double speed) {
  Report r;
  r.rank = rank;
  r.epoch = epoch;
  r.batch = batch;
  r.samples = 10L * batch;
  r.steps = 10;
  r.compute_s = static_cast<double>(r.samples) / speed;
  return r;
}

// Runs one epoch of a 3-rank job at speeds 1:2:3; returns the plan.
Plan epoch(Job& job, std::int64_t e) {
  const auto& b = job.current().batch;
  CHECK(job.add(report(0, e, b[0], 1000)) == Job::Accepted::first);
  CHECK(job.add(report(1, e, b[1], 2000)) == Job::Accepted::pending);
  CHECK(job.add(report(2, e, b[2], 3000)) == Job::Accepted::complete);
  const auto o = job.plan(30);
  job.commit(o);
  return o.plan;
}

}  // namespace

TEST_CASE("Job.PlansWhenEveryRankReported") {
  Job job("j", 3, config());
  CHECK(job.current().batch == std::vector<int>{40, 40, 40});
  const Plan p = epoch(job, 0);
  CHECK(p.epoch == 1);
  CHECK(p.batch == std::vector<int>{20, 40, 60});
  CHECK(job.current() == p);
  CHECK(job.reports() == 3);
  CHECK(job.plans() == 1);
  CHECK(job.changes() == 1);
  REQUIRE(job.history().size() == 1);
  CHECK(job.history()[0].throughput == std::vector<double>{1000, 2000, 3000});
}

TEST_CASE("Job.DuplicateAndStaleReports") {
  Job job("j", 3, config());
  epoch(job, 0);
  epoch(job, 1);
  CHECK(job.add(report(0, 1, 20, 1000)) == Job::Accepted::duplicate);
  try {
    job.add(report(0, 0, 20, 1000));
    FAIL("a stale report was accepted");
  } catch (const proto::ProtocolError& e) {
    CHECK(e.code() == proto::ErrorCode::state);
    CHECK(std::string(e.what()) == "report for epoch 1, but job 'j' is at epoch 3");
  }
  CHECK(job.add(report(1, 2, 40, 2000)) == Job::Accepted::first);
  CHECK(job.add(report(1, 2, 40, 2000)) == Job::Accepted::pending);  // the first one counts
  CHECK(job.has_pending());
}

TEST_CASE("Job.MissingRanksArePlannedFromTheirLastReport") {
  Job job("j", 3, config());
  epoch(job, 0);
  job.add(report(0, 1, 20, 1000));
  job.add(report(2, 1, 60, 3000));
  const auto o = job.plan(2.5);
  CHECK(o.missing == std::vector<int>{1});
  CHECK(o.reports.size() == 2);
  CHECK(o.plan.batch == std::vector<int>{20, 40, 60});  // rank 1 keeps its estimate
  CHECK(o.plan.reason.find("; no report from rank 1 within 2.5 s: planned from its last report") !=
        std::string::npos);
  job.commit(o);
  CHECK(job.timeouts() == 1);
  CHECK(job.history().back().efficiency == 0);  // not every rank reported
}

TEST_CASE("Job.FollowsAgentsThatRanAhead") {
  Job job("j", 3, config());
  CHECK(job.add(report(0, 5, 20, 1000)) == Job::Accepted::first);
  job.add(report(1, 5, 40, 2000));
  CHECK(job.add(report(2, 5, 60, 3000)) == Job::Accepted::complete);
  const auto o = job.plan(30);
  CHECK(o.epoch == 5);
  CHECK(o.plan.epoch == 6);
  CHECK(o.plan.batch == std::vector<int>{20, 40, 60});
  CHECK_FALSE(o.plan.changed);  // planned from what the agents ran, which is balanced
}

TEST_CASE("Job.JournalledOutcomesRestoreTheSameJob") {
  // Every outcome of `a` goes through its journal form into a fresh job `b`.
  Job a("j", 3, config()), b("j", 3, config());
  for (std::int64_t e = 0; e < 4; ++e) {
    const auto& batch = a.current().batch;
    const double slow = e == 2 ? 0.5 : 1;  // a stall in epoch 3 moves the estimates
    for (int r = 0; r < 3; ++r)
      a.add(report(r, e, batch[static_cast<std::size_t>(r)], 1000.0 * (r + 1) * slow));
    const auto o = a.plan(30);
    a.commit(o);
    const auto text = scheduler::outcome_json("j", o, a.rank_info()).dump();
    b.commit(scheduler::outcome_from_json(nlohmann::json::parse(text), 3));
    CHECK(b.current() == a.current());
  }
  CHECK(b.plans() == 4);
  CHECK(b.reports() == 12);
  // Both plan the next epoch identically: the policy state came back too.
  for (Job* j : {&a, &b})
    for (int r = 0; r < 3; ++r)
      j->add(report(r, 4, j->current().batch[static_cast<std::size_t>(r)], 700.0 * (r + 2)));
  CHECK(a.plan(30).plan == b.plan(30).plan);
}

TEST_CASE("Job.PolicyRefusalKeepsThePlanAndTheJobGoesOn") {
  // A report the wire would refuse reaches the job through the report timeout path, the
  // journal or a bug: the plan is kept, nothing non-finite is stored, the next epoch plans.
  Job job("j", 3, config());
  epoch(job, 0);
  const Plan before = job.current();
  auto tiny = report(1, 1, before.batch[1], 2000);
  tiny.compute_s = 1e-320;
  job.add(report(0, 1, before.batch[0], 1000));
  job.add(tiny);
  job.add(report(2, 1, before.batch[2], 3000));
  const auto o = job.plan(30);
  job.commit(o);  // threw "dbs policy state: value 2 is inf" before
  CHECK(o.plan.epoch == 2);
  CHECK(o.plan.batch == before.batch);
  CHECK_FALSE(o.plan.changed);
  CHECK(o.plan.reason == "kept: report of rank 1: throughput inf samples/s is not finite");
  CHECK(proto::plan_refusal(o.plan, 2, 3, config()) == "");
  // The plan's journal form reads back (no null where a number belongs).
  CHECK(policy::plan_from_json(Fields(nlohmann::json::parse(policy::to_json(o.plan).dump()))) ==
        o.plan);
  CHECK(epoch(job, 2).epoch == 3);
}

TEST_CASE("Job.EveryPlanAtTheBoundsIsOneAnAgentAccepts") {
  // Reports at the extremes of lib/proto's bounds: every plan the job makes passes
  // proto::plan_refusal, the daemon's check before sending.
  Settings c = config();
  c.samples_per_epoch = proto::kMaxSamples;
  Job job("j", 3, c);
  const double figures[] = {proto::kMinFigure, 1, proto::kMaxFigure};
  const std::int64_t counts[] = {0, 1, proto::kMaxSamples};
  std::int64_t e = 0;
  for (const double compute : figures)
    for (const double rate : figures)
      for (const std::int64_t samples : counts) {
        for (int r = 0; r < 3; ++r) {
          Report rep = report(r, e, job.current().batch[static_cast<std::size_t>(r)], 1);
          rep.samples = r == 1 ? samples : 100;
          rep.compute_s = r == 2 ? compute : 1;
          rep.step_rate_median = r == 0 ? rate : 0;
          proto::check_bounds(rep);
          job.add(rep);
        }
        const auto o = job.plan(30);
        CAPTURE(o.plan.reason);
        CHECK(proto::plan_refusal(o.plan, e + 1, 3, c) == "");
        job.commit(o);
        ++e;
      }
}

TEST_CASE("Job.HistoryIsBoundedByRankEpochs") {
  Settings c = config();
  c.global_batch = 4096;
  Job job("wide", 4096, c);
  CHECK(job.history_kept() == Job::kHistoryCells / 4096);
  for (std::int64_t e = 0; e < 40; ++e) {
    for (int r = 0; r < 4096; ++r) job.add(report(r, e, 1, 1000));
    job.commit(job.plan(30));
  }
  CHECK(job.history().size() == Job::kHistoryCells / 4096);  // 32, not 40
  CHECK(job.history().back().epoch == 39);
  Job small("j", 3, config());
  CHECK(small.history_kept() == Job::kHistory);
}
