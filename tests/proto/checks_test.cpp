// lib/proto checks that need a job: ranks, joins, plans, tokens.
#include "lib/proto/checks.h"

#include <doctest/doctest.h>

#include <string>

namespace {

using namespace dbs::proto;

template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const ProtocolError& e) {
    return std::string(name(e.code())) + ": " + e.what();
  }
  return "ok";
}

dbs::Plan plan_of(std::vector<int> batch, std::int64_t epoch) {
  dbs::Plan p;
  p.epoch = epoch;
  p.batch = batch;
  p.offset = dbs::offsets_of(batch);
  p.throughput.assign(batch.size(), 0.0);
  for (const int b : batch) p.global_batch += b;
  return p;
}

}  // namespace

TEST_CASE("Checks.RankOutOfRange") {
  CHECK(error_of([] { check_rank(1, 2); }) == "ok");
  CHECK(error_of([] { check_rank(2, 2); }) == "invalid: rank 2 out of range for a job of 2 ranks");
  CHECK(error_of([] { check_rank(-1, 2); }) ==
        "invalid: rank -1 out of range for a job of 2 ranks");
}

TEST_CASE("Checks.JoinMustMatchTheJob") {
  dbs::Settings c;
  RegisterMsg r{"j", "t", 0, 2, "h", c, "", ""};
  CHECK(error_of([&] { check_join("j", 2, c, r); }) == "ok");
  r.config.reset();
  CHECK(error_of([&] { check_join("j", 2, c, r); }) == "ok");
  r.world = 3;
  CHECK(error_of([&] { check_join("j", 2, c, r); }) == "conflict: job 'j' has 2 ranks, not 3");
  r.world = 2;
  r.config = c;
  r.config->global_batch = 256;
  CHECK(error_of([&] { check_join("j", 2, c, r); }) ==
        "conflict: job 'j' runs with config {\"global_batch\":128,\"max_batch\":0,\"min_batch\":1,"
        "\"min_gain\":0.02,\"policy\":\"dbs\",\"rebalance_every\":0,\"samples_per_epoch\":0}, not "
        "{\"global_batch\":256,\"max_batch\":0,\"min_batch\":1,\"min_gain\":0.02,\"policy\":\"dbs\","
        "\"rebalance_every\":0,\"samples_per_epoch\":0}");
}

TEST_CASE("Checks.PlanMustFitTheJob") {
  dbs::Settings c;
  c.global_batch = 128;
  c.min_batch = 8;
  CHECK(plan_mismatch(plan_of({64, 64}, 3), 3, 2, c).empty());
  CHECK(plan_mismatch(plan_of({64, 64}, 4), 3, 2, c) == "plan is for epoch 5, expected epoch 4");
  CHECK(plan_mismatch(plan_of({64, 32, 32}, 3), 3, 2, c) == "plan has 3 ranks, the job has 2");
  CHECK(plan_mismatch(plan_of({64, 60}, 3), 3, 2, c) ==
        "plan has global batch 124, the job has 128");
  CHECK(plan_mismatch(plan_of({124, 4}, 3), 3, 2, c) ==
        "plan gives rank 1 batch 4, outside [8, 128]");
}

TEST_CASE("Checks.TokensCompareWholly") {
  CHECK(tokens_equal("0123456789abcdef", "0123456789abcdef"));
  CHECK_FALSE(tokens_equal("0123456789abcdef", "0123456789abcdeX"));
  CHECK_FALSE(tokens_equal("0123456789abcdef", "0123456789abcde"));
  CHECK_FALSE(tokens_equal("0123456789abcdef", "0123456789abcdef0"));
  CHECK_FALSE(tokens_equal("0123456789abcdef", ""));
  CHECK_FALSE(tokens_equal("", ""));  // no token is never a match
}

TEST_CASE("Checks.MungePayloadBindsJobAndRank") {
  CHECK(munge_payload("slurm-12", 3) == "dbs-register v2 job=slurm-12 rank=3");
  CHECK(munge_payload("slurm-12", 3) != munge_payload("slurm-12", 0));
  CHECK(munge_payload("slurm-12", 3) != munge_payload("slurm-1", 23));  // "slurm-1 ... rank=23"
}
