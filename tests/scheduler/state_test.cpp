// The state directory's lifecycle: the journal's format version (a state directory of the daemon
// before versions is read and migrated, a newer one is refused untouched), the retention of
// finished traces and quarantined files, and backup and restore.
#include <doctest/doctest.h>
#include <sys/stat.h>
#include <utime.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "lib/common/error.h"
#include "scheduler/serve/archive.h"
#include "scheduler/serve/backup.h"
#include "scheduler/serve/state_dir.h"
#include "tests/scheduler/harness.h"

namespace {

using namespace dbs;
using namespace dbs::test;
namespace fs = std::filesystem;
using nlohmann::json;

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::ostringstream b;
  b << f.rdbuf();
  return b.str();
}

// Every file under dir (relative path -> bytes).
std::map<std::string, std::string> tree(const std::string& dir) {
  std::map<std::string, std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    out[fs::relative(e.path(), dir).string()] = e.is_regular_file() ? slurp(e.path()) : "<dir>";
  return out;
}

std::string fixture(const std::string& name) {
  const char* root = std::getenv("DBS_SOURCE_ROOT");
  REQUIRE_MESSAGE(root != nullptr, "DBS_SOURCE_ROOT is set by meson test");
  return std::string(root) + "/tests/scheduler/fixtures/" + name;
}

json status_of(const TestDaemon& d) {
  return json::parse(http_body(http_fetch(d.http_port(), "/status")));
}

// /status without what legitimately differs between two daemons serving the same state: the
// daemon's uptime, the age of the last report, where quarantined files went (their name has
// the time of the restore) and the state directory's path in the reasons; the retention (new
// with the journal version) is checked by the tests on its own.
json comparable(json s, const std::string& dir) {
  for (const char* k : {"uptime_s", "retention"}) s["daemon"].erase(k);
  for (auto& j : s["jobs"]) j.erase("last_report_age_s");
  for (auto& q : s["quarantined"]) {
    q.erase("path");
    std::string why = q["why"];
    if (why.starts_with(dir)) why = "DIR" + why.substr(dir.size());
    q["why"] = why;
  }
  return s;
}

// A finished 2-rank job `id` of `epochs` epochs, and (finish false) one left running.
void run_job(std::uint16_t port, const std::string& id, int epochs, bool finish) {
  Agent r0(port, id, 0, 2), r1(port, id, 1, 2);
  REQUIRE(r0.join());
  REQUIRE(r1.join());
  for (int e = 0; e < epochs; ++e) {
    r0.report(e, 64, 3000);
    r1.report(e, 64, 1000);
    REQUIRE(r0.plan());
    REQUIRE(r1.plan());
  }
  if (!finish) return;
  for (Agent* a : {&r0, &r1}) {
    a->client().send(proto::encode(proto::GoodbyeMsg{true}));
    CHECK(a->client().closed_within());
  }
}

scheduler::ServeOptions with_state(const std::string& dir) {
  auto o = test_options();
  o.state_dir = dir;
  return o;
}

}  // namespace

TEST_CASE("StateVersion.ANewJournalStartsWithItsHeader") {
  TempDir t;
  const std::string dir = t.path() + "/state";
  {
    TestDaemon d(with_state(dir));
    run_job(d.port(), "a", 1, false);
  }
  std::ifstream f(dir + "/journal.jsonl");
  std::string first;
  std::getline(f, first);
  CHECK(first + "\n" == scheduler::journal_header());
  CHECK(json::parse(first) == json{{"format", "dbs-journal"}, {"version", 1}});
  CHECK(scheduler::journal_version(dir) == scheduler::kJournalVersion);
}

TEST_CASE("StateVersion.TheStateOfTheDaemonBeforeVersionsIsRestoredWithTheSameStatus") {
  TempDir t;
  const std::string dir = t.path() + "/state";
  fs::copy(fixture("state-v0"), dir, fs::copy_options::recursive);
  REQUIRE(scheduler::journal_version(dir) == 0);
  const json want = json::parse(slurp(fixture("status-v0.json")));
  // /status shows the serving daemon's report timeout: serve with the default the fixture's
  // daemon ran with (make-state-v0.sh), not the harness's longer one.
  auto o = with_state(dir);
  o.report_timeout_s = scheduler::ServeOptions{}.report_timeout_s;
  REQUIRE(want["daemon"]["report_timeout_s"] == o.report_timeout_s);
  TestDaemon d(o);
  json got = status_of(d);
  // A field the fixture's daemon did not have: the exchange's part of a plan, unknown (0) for
  // plans journalled without it.
  for (auto& j : got["jobs"]) {
    CHECK(j["exchange_epoch_s"] == 0.0);
    j.erase("exchange_epoch_s");
  }
  // The fixture's daemon restored a copy in another directory: its reasons name that one.
  std::string old_dir = want["quarantined"].at(0)["why"];
  old_dir = old_dir.substr(0, old_dir.find("/journal.jsonl"));
  CHECK(comparable(got, dir).dump(1) == comparable(want, old_dir).dump(1));
  CHECK(got["daemon"]["retention"]["finished_kept"] == 1);     // done-job
  CHECK(got["daemon"]["retention"]["quarantined_kept"] == 2);  // ghost, the unreadable line
  // Migrated: the header first, the old journal's copy gone once the new one is durable.
  CHECK(scheduler::journal_version(dir) == scheduler::kJournalVersion);
  CHECK_FALSE(fs::exists(dir + "/journal.v0.jsonl"));
  // The traces are the ones today's daemon wrote for the jobs in the journal.
  for (const char* job : {"done-job", "stopped-job", "running-job"})
    CHECK_MESSAGE(slurp(dir + "/traces/" + job + ".jsonl") ==
                      slurp(fixture("state-v0/traces/") + job + ".jsonl"),
                  job);
}

TEST_CASE("StateVersion.AJournalOfANewerVersionIsRefusedAndLeftUntouched") {
  TempDir t;
  const std::string dir = t.path() + "/state";
  fs::copy(fixture("state-v0"), dir, fs::copy_options::recursive);
  {
    std::string text = slurp(dir + "/journal.jsonl");
    std::ofstream(dir + "/journal.jsonl") << "{\"format\":\"dbs-journal\",\"version\":2}\n"
                                          << text << "{\"type\":\"torn";  // no newline
  }
  const auto before = tree(dir);
  std::string message;
  try {
    scheduler::Daemon d(with_state(dir));
  } catch (const ConfigError& e) {
    message = e.what();
  }
  CHECK(message == dir + "/journal.jsonl: journal format version 2 is newer than this " +
                       "dbs-scheduler reads (versions 0 to 1); nothing was changed. Run the " +
                       "dbs-scheduler that wrote it, or restore a backup of version 1 or older " +
                       "into a new state directory");
  CHECK(tree(dir) == before);
}

TEST_CASE("StateVersion.AMalformedHeaderIsRefused") {
  TempDir t;
  const std::string dir = t.path() + "/state";
  fs::create_directories(dir + "/traces");
  std::ofstream(dir + "/journal.jsonl") << "{\"format\":\"dbs-journal\",\"version\":\"x\"}\n";
  const auto before = tree(dir);
  CHECK_THROWS_WITH_AS(scheduler::Daemon(with_state(dir)),
                       (dir + "/journal.jsonl line 1: not a dbs-journal header (want {\"format\": "
                              "\"dbs-journal\", \"version\": N}); nothing was changed")
                           .c_str(),
                       ConfigError);
  CHECK(tree(dir) == before);
}

TEST_CASE("StateVersion.ACopyLeftByAMigrationCutShortIsRemoved") {
  TempDir t;
  const std::string dir = t.path() + "/state";
  fs::copy(fixture("state-v0"), dir, fs::copy_options::recursive);
  // The crash came after the new journal was renamed into place, before the copy was removed.
  fs::copy_file(dir + "/journal.jsonl", dir + "/journal.v0.jsonl");
  std::ofstream(dir + "/journal.jsonl", std::ios::trunc)
      << scheduler::journal_header() << slurp(dir + "/journal.v0.jsonl");
  TestDaemon d(with_state(dir));
  CHECK_FALSE(fs::exists(dir + "/journal.v0.jsonl"));
  CHECK(status_of(d)["jobs"].size() == 3);
}

TEST_CASE("Retention.FinishedJobsPastKeepFinishedLeaveTracesAndStatusAtOnce") {
  TempDir t;
  auto o = with_state(t.path() + "/state");
  o.keep_finished = 2;
  TestDaemon d(o);
  for (const char* id : {"j1", "j2", "j3"}) run_job(d.port(), id, 2, true);
  run_job(d.port(), "live", 1, false);
  json s;
  for (int i = 0; i < 100; ++i) {  // the writer thread removes the trace after the journal sync
    s = status_of(d);
    if (!fs::exists(o.state_dir + "/traces/j1.jsonl")) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  CHECK_FALSE(fs::exists(o.state_dir + "/traces/j1.jsonl"));
  CHECK(fs::exists(o.state_dir + "/traces/j2.jsonl"));
  CHECK(fs::exists(o.state_dir + "/traces/j3.jsonl"));
  CHECK(fs::exists(o.state_dir + "/traces/live.jsonl"));
  std::vector<std::string> ids;
  for (const auto& j : s["jobs"]) ids.push_back(j["job"]);
  CHECK(ids == std::vector<std::string>{"live", "j2", "j3"});
  CHECK(s["daemon"]["retention"] == json{{"keep_finished", 2},
                                         {"retention_s", nullptr},
                                         {"finished_kept", 2},
                                         {"quarantined_kept", 0},
                                         {"pruned_finished", 1},
                                         {"pruned_quarantined", 0}});
  // j1's id is free again, and a job created under it is not pruned as j1 was.
  run_job(d.port(), "j1", 1, false);
  CHECK(status_of(d)["daemon"]["jobs_running"] == 2);
  d.stop();
  // A restart does not bring a pruned job back (its "pruned" record is journalled).
  TestDaemon again(o);
  ids.clear();
  const json after = status_of(again);  // held: a range-for over a temporary's member dangles
  for (const auto& j : after["jobs"]) ids.push_back(j["job"]);
  CHECK(ids == std::vector<std::string>{"j1", "live", "j2", "j3"});
  CHECK(fs::exists(o.state_dir + "/traces/j1.jsonl"));
}

TEST_CASE("Retention.OldFinishedTracesAndQuarantinedFilesGoAfterRetention") {
  TempDir t;
  const std::string dir = t.path() + "/state";
  fs::create_directories(dir + "/traces");
  fs::create_directories(dir + "/quarantine");
  const auto age = [](const std::string& path, long seconds_ago) {
    const ::time_t then = ::time(nullptr) - seconds_ago;
    const ::utimbuf times{then, then};
    REQUIRE(::utime(path.c_str(), &times) == 0);
  };
  t.file("state/traces/old.jsonl", "{}\n");
  age(dir + "/traces/old.jsonl", 7200);
  t.file("state/traces/new.jsonl", "{}\n");
  t.file("state/quarantine/x.1.journal.jsonl", "{}\n");
  age(dir + "/quarantine/x.1.journal.jsonl", 7200);
  t.file("state/quarantine/y.2.journal.jsonl", "{}\n");
  auto o = with_state(dir);
  o.retention_s = 3600;
  TestDaemon d(o);
  json r;
  for (int i = 0; i < 100; ++i) {
    r = status_of(d)["daemon"]["retention"];
    if (!fs::exists(dir + "/traces/old.jsonl")) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  CHECK_FALSE(fs::exists(dir + "/traces/old.jsonl"));
  CHECK(fs::exists(dir + "/traces/new.jsonl"));
  CHECK_FALSE(fs::exists(dir + "/quarantine/x.1.journal.jsonl"));
  CHECK(fs::exists(dir + "/quarantine/y.2.journal.jsonl"));
  CHECK(r["retention_s"] == 3600);
  CHECK(r["finished_kept"] == 1);
  CHECK(r["quarantined_kept"] == 1);
  CHECK(r["pruned_finished"] == 1);
  CHECK(r["pruned_quarantined"] == 1);
}

TEST_CASE("Backup.TakenWhileAJobRunsRestoresTheSameStatusAndTraces") {
  TempDir t;
  const std::string dir = t.path() + "/state", back = t.path() + "/b.tar",
                    copy = t.path() + "/restored";
  json before;
  {
    TestDaemon d(with_state(dir));
    run_job(d.port(), "done", 2, true);
    Agent r0(d.port(), "live", 0, 2), r1(d.port(), "live", 1, 2);
    REQUIRE(r0.join());
    REQUIRE(r1.join());
    r0.report(0, 64, 3000);
    r1.report(0, 64, 1000);
    REQUIRE(r0.plan());
    REQUIRE(r1.plan());
    const scheduler::BackupSummary s = scheduler::backup_state(dir, back);
    CHECK(s.journal_version == 1);
    CHECK(s.rewritten == 2);  // both jobs' records are still in the journal
    CHECK(s.traces == 0);
    before = status_of(d);
    r0.report(1, 64, 3000);  // the job goes on after the backup
    r1.report(1, 64, 1000);
    REQUIRE(r0.plan());
    REQUIRE(r1.plan());
  }
  const scheduler::BackupSummary r = scheduler::restore_state(back, copy);
  CHECK(r.records == 6);  // done: job, 2 epochs, finished; live: job, 1 epoch
  TestDaemon d(with_state(copy));
  json after = status_of(d);
  // The restored daemon has served no agent yet: no connection, message or sync of its own.
  for (auto* st : {&before, &after})
    for (const char* k : {"connections", "messages", "rejected", "journal_syncs"})
      (*st)["daemon"].erase(k);
  for (auto& j : before["jobs"]) {
    j["connected"] = 0;
    for (auto& rank : j["ranks"]) rank["connected"] = false;
  }
  CHECK(comparable(after, copy).dump(1) == comparable(before, dir).dump(1));
  // The finished job's trace as it was; the live one's up to the backup (its initial plan and
  // the plan of epoch 2), the start of what the first daemon went on to write.
  CHECK(slurp(copy + "/traces/done.jsonl") == slurp(dir + "/traces/done.jsonl"));
  const std::string live = slurp(copy + "/traces/live.jsonl");
  CHECK(slurp(dir + "/traces/live.jsonl").starts_with(live));
  std::size_t plans = 0;
  for (std::size_t at = 0; (at = live.find("\"type\":\"plan\"", at)) != std::string::npos; ++at)
    ++plans;
  CHECK(plans == 2);
}

TEST_CASE("Backup.ABadArchiveOrATargetInUseIsRefusedAndNothingIsWritten") {
  TempDir t;
  const std::string dir = t.path() + "/state", back = t.path() + "/b.tar";
  fs::copy(fixture("state-v0"), dir, fs::copy_options::recursive);
  scheduler::backup_state(dir, back);
  const std::string good = slurp(back);
  const std::string target = t.path() + "/new";
  const auto refused = [&](const std::string& archive_bytes, const std::string& want) {
    std::ofstream(t.path() + "/bad.tar", std::ios::binary) << archive_bytes;
    std::string message;
    try {
      scheduler::restore_state(t.path() + "/bad.tar", target);
    } catch (const Error& e) {
      message = e.what();
    }
    CHECK_MESSAGE(message.find(want) != std::string::npos, message);
    CHECK_FALSE(fs::exists(target));
    for (const auto& e : fs::directory_iterator(t.path()))
      CHECK_MESSAGE(e.path().filename().string().find(".restore.") == std::string::npos, e.path());
  };
  refused(good.substr(0, good.size() / 2), t.path() + "/bad.tar: truncated");
  refused(good.substr(0, good.size() - 1024), "truncated: the archive ends after member");
  refused("hello", "truncated");
  std::vector<scheduler::ArchiveMember> m = scheduler::read_archive(good, "good");
  REQUIRE(m.at(1).path == "journal.jsonl");
  m[1].bytes[10] ^= 1;
  refused(scheduler::write_archive(m), "member journal.jsonl is damaged");
  m = scheduler::read_archive(good, "good");
  m.pop_back();
  refused(scheduler::write_archive(m), "do not match dbs-backup.json");
  m = scheduler::read_archive(good, "good");
  // A manifest of a newer backup format.
  m[0].bytes = "{\"format\":\"dbs-scheduler-backup\",\"version\":2,\"files\":[]}";
  refused(scheduler::write_archive(m), "backup format version 2 is newer than this dbs-scheduler");
  m[0].bytes = "{\"format\":\"dbs-scheduler-backup\",\"version\":1,\"journal_version\":7,\"files\":[]}";
  refused(scheduler::write_archive(m), "journal format version 7 is not one");
  // A non-empty target is refused and left as it was.
  fs::create_directories(target);
  std::ofstream(target + "/keep") << "x";
  std::string message;
  try {
    scheduler::restore_state(back, target);
  } catch (const ConfigError& e) {
    message = e.what();
  }
  CHECK(message == target + ": not an empty directory; restore writes only into a new or " +
                       "empty one; nothing was changed");
  CHECK(tree(target) == std::map<std::string, std::string>{{"keep", "x"}});
  // An empty one is taken.
  fs::remove(target + "/keep");
  scheduler::restore_state(back, target);
  CHECK(slurp(target + "/journal.jsonl") == slurp(dir + "/journal.jsonl"));
}
