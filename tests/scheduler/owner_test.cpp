// Job ownership (scheduler/serve/caller.h): who may use a job, and the owner kept by the journal
// across a restart, with the jobs of a journal written before owners left to the admin.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "scheduler/serve/caller.h"
#include "scheduler/serve/state_dir.h"
#include "tests/scheduler/harness.h"

namespace {

using namespace dbs;
using namespace dbs::test;
using scheduler::Caller;
using scheduler::may_use;
namespace fs = std::filesystem;

const Caller kAlice{Caller::Kind::user, 1001};
const Caller kBob{Caller::Kind::user, 1002};
const Caller kRoot{Caller::Kind::user, 0};

std::string fixture(const std::string& name) {
  const char* root = std::getenv("DBS_SOURCE_ROOT");
  REQUIRE_MESSAGE(root != nullptr, "DBS_SOURCE_ROOT is set by meson test");
  return std::string(root) + "/tests/scheduler/fixtures/" + name;
}

scheduler::ServeOptions with_state(const std::string& dir) {
  auto o = test_options();
  o.state_dir = dir;
  return o;
}

}  // namespace

TEST_CASE("Owner.OnlyTheOwnerRootAndTheAdminUseAUsersJob") {
  const std::optional<std::uint32_t> alices = 1001, admins;
  CHECK(may_use(kAlice, alices));
  CHECK_FALSE(may_use(kBob, alices));
  CHECK(may_use(kRoot, alices));
  CHECK(may_use(Caller{Caller::Kind::admin}, alices));
  CHECK(may_use(Caller{Caller::Kind::job_key}, alices));
  CHECK(may_use(Caller{}, alices));  // a daemon without authentication (loopback only)
  // A job made with the token, or journalled before owners: the admin's (and root's).
  CHECK_FALSE(may_use(kAlice, admins));
  CHECK(may_use(kRoot, admins));
  CHECK(may_use(Caller{Caller::Kind::admin}, admins));
  // A user's job is theirs; the token's job is nobody's.
  CHECK(kAlice.owner() == std::optional<std::uint32_t>(1001));
  CHECK(kRoot.owner() == std::optional<std::uint32_t>(0));
  CHECK_FALSE(Caller{Caller::Kind::admin}.owner());
  CHECK_FALSE(Caller{Caller::Kind::job_key}.owner());
  CHECK(kBob.describe() == "uid 1002");
}

TEST_CASE("Owner.TheJournalKeepsTheOwnerAndOldJobsHaveNone") {
  TempDir t;
  const std::string dir = t.path() + "/state";
  fs::copy(fixture("state-v0"), dir, fs::copy_options::recursive);
  // The fixture's running job, created again under another id by uid 1001 (a record of today).
  std::ifstream in(dir + "/journal.jsonl");
  std::string line, created;
  while (std::getline(in, line)) {
    const auto j = nlohmann::json::parse(line, nullptr, false);  // the fixture has bad lines
    if (j.is_object() && j.value("type", "") == "job" && j.value("job", "") == "running-job") {
      auto mine = j;
      mine["job"] = "alices-job";
      mine["owner"] = 1001;
      created = mine.dump() + "\n";
    }
  }
  REQUIRE_FALSE(created.empty());
  std::ofstream(dir + "/journal.jsonl", std::ios::app) << created;
  TestDaemon d(with_state(dir));
  const auto& jobs = d.jobs().jobs();
  REQUIRE(jobs.count("alices-job") == 1);
  CHECK(jobs.at("alices-job")->owner == std::optional<std::uint32_t>(1001));
  for (const char* old : {"running-job", "stopped-job"}) {
    CAPTURE(old);
    REQUIRE(jobs.count(old) == 1);
    CHECK_FALSE(jobs.at(old)->owner);  // journalled before owners: the admin's
  }
  d.stop();
  // Migrated to today's version, the owner is still there after the next restart.
  CHECK(scheduler::journal_version(dir) == scheduler::kJournalVersion);
  TestDaemon again(with_state(dir));
  CHECK(again.jobs().jobs().at("alices-job")->owner == std::optional<std::uint32_t>(1001));
}
