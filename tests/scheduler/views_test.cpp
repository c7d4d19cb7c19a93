// What /metrics, /status and the page show: Prometheus names with units and the job_id label,
// the daemon's build, process and latency figures, what a finished job ran (not the plan of an
// epoch after its last), and a job whose ranks are gone shown as lost until they come back.
#include <doctest/doctest.h>

#include <chrono>
#include <cmath>
#include <memory>
#include <regex>
#include <thread>

#include "tests/scheduler/harness.h"

namespace {

using namespace dbs;
using namespace dbs::test;

bool has(const std::string& text, const std::string& what) {
  return text.find(what) != std::string::npos;
}

// The value of the sample `name{labels}` in a /metrics body (NaN when absent).
double sample(const std::string& metrics, const std::string& series) {
  const auto at = metrics.find("\n" + series + " ");
  if (at == std::string::npos) return std::nan("");
  return std::stod(metrics.substr(at + series.size() + 2));
}

// Runs `epochs` epochs of a 2-rank job at 3000 and 1000 samples/s; returns the last plan the
// ranks ran (epoch epochs - 1) and leaves the plan of epoch `epochs` unrun.
Plan run_job(Agent& r0, Agent& r1, std::int64_t epochs) {
  Plan plan = joined({std::get<proto::PlanMsg>(proto::decode(*r0.join())),
                              std::get<proto::PlanMsg>(proto::decode(*r1.join()))});
  Plan ran = plan;
  for (std::int64_t e = 0; e < epochs; ++e) {
    r0.report(e, plan.batch[0], 3000);
    r1.report(e, plan.batch[1], 1000);
    const auto p0 = r0.plan(), p1 = r1.plan();
    REQUIRE(p0);
    REQUIRE(p1);
    ran = plan;
    plan = joined({*p0, *p1});
  }
  return ran;
}

void goodbye(Agent& a) {
  a.client().send(proto::encode(proto::GoodbyeMsg{true}));
  CHECK(a.client().closed_within());
}

}  // namespace

TEST_CASE("Views.Metrics.NamesCarryUnitsAndTheJobIdLabel") {
  TestDaemon daemon(test_options());
  Agent r0(daemon.port(), "units", 0, 2), r1(daemon.port(), "units", 1, 2);
  run_job(r0, r1, 2);
  const std::string m = http_body(http_fetch(daemon.http_port(), "/metrics"));
  for (const char* want :
       {"dbs_job_ranks{job_id=\"units\"} 2", "# TYPE dbs_job_efficiency_ratio gauge",
        "dbs_rank_throughput_samples_per_second{job_id=\"units\",rank=\"0\"} 3000",
        "# TYPE dbs_build_info gauge", "# TYPE process_cpu_seconds_total counter",
        "# TYPE process_resident_memory_bytes gauge", "# TYPE process_open_fds gauge",
        "# TYPE process_max_fds gauge", "# TYPE process_start_time_seconds gauge",
        "# TYPE dbs_plan_latency_seconds histogram", "# TYPE dbs_journal_sync_seconds histogram",
        "dbs_plan_latency_seconds_bucket{le=\"+Inf\"} 2", "dbs_plan_latency_seconds_count 2",
        "dbs_plan_latency_seconds_bucket{le=\"0.005\"} ",
        "dbs_job_state{job_id=\"units\",state=\"running\"} 1"}) {
    CAPTURE(want);
    CHECK(has(m, want));
  }
  for (const std::string gone : {"\ndbs_up ", "dbs_up gauge", "job=\"", "dbs_rank_throughput{",
                                 "dbs_job_efficiency{", "dbs_job_finished"}) {
    CAPTURE(gone);
    CHECK_FALSE(has(m, gone));
  }
  CHECK(std::regex_search(
      m, std::regex("\ndbs_build_info\\{version=\"[0-9.]+\",revision=\"[^\"]+\"")));
  CHECK(sample(m, "process_resident_memory_bytes") > 1e6);
  CHECK(sample(m, "process_open_fds") >= 5);  // listeners, sessions, HTTP
  const double started = sample(m, "process_start_time_seconds");
  const double now =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  CHECK(started <= now + 1);
  CHECK(started > now - 3600);
  // Cumulative buckets: never decreasing, the last one every observation.
  double prev = 0;
  for (std::size_t at = m.find("dbs_plan_latency_seconds_bucket"); at != std::string::npos;
       at = m.find("dbs_plan_latency_seconds_bucket", at + 1)) {
    const double v = std::stod(m.substr(m.find("} ", at) + 2));
    CHECK(v >= prev);
    prev = v;
  }
  CHECK(prev == 2);
  CHECK(sample(m, "dbs_plan_latency_seconds_sum") > 0);
}

TEST_CASE("Views.JournalSyncsAreTimedIntoTheHistogram") {
  TempDir dir;
  auto o = test_options();
  o.state_dir = dir.path() + "/state";
  TestDaemon daemon(o);
  Agent r0(daemon.port(), "synced", 0, 2), r1(daemon.port(), "synced", 1, 2);
  run_job(r0, r1, 2);
  const std::string m = http_body(http_fetch(daemon.http_port(), "/metrics"));
  const double syncs = sample(m, "dbs_journal_syncs_total");
  CHECK(syncs >= 2);  // the job record and two epochs, in one batch or more
  CHECK(sample(m, "dbs_journal_sync_seconds_count") == syncs);
  CHECK(sample(m, "dbs_journal_sync_seconds_bucket{le=\"+Inf\"}") == syncs);
  CHECK(sample(m, "dbs_journal_sync_seconds_sum") > 0);
}

TEST_CASE("Views.AFinishedJobShowsTheEpochsThatRan") {
  TestDaemon daemon(test_options());
  Agent r0(daemon.port(), "six", 0, 2), r1(daemon.port(), "six", 1, 2);
  const Plan ran = run_job(r0, r1, 6);
  REQUIRE(ran.epoch == 5);
  goodbye(r0);
  goodbye(r1);
  const std::string m = http_body(http_fetch(daemon.http_port(), "/metrics"));
  CHECK(sample(m, "dbs_job_epoch{job_id=\"six\"}") == 6);
  CHECK(sample(m, "dbs_job_state{job_id=\"six\",state=\"finished\"}") == 1);
  CHECK(sample(m, "dbs_rank_batch{job_id=\"six\",rank=\"0\"}") == ran.batch[0]);
  CHECK(sample(m, "dbs_rank_batch{job_id=\"six\",rank=\"1\"}") == ran.batch[1]);
  CHECK(sample(m, "dbs_job_predicted_epoch_seconds{job_id=\"six\"}") == ran.predicted_epoch_s);

  const auto status = nlohmann::json::parse(http_body(http_fetch(daemon.http_port(), "/status")));
  const auto& job = status["jobs"][0];
  CHECK(job["state"] == "finished");
  CHECK(job["epoch"] == 6);
  CHECK(job["ran_epoch"] == 6);
  CHECK(job["plan"]["epoch"] == 6);
  CHECK(job["plan"]["batch"] == nlohmann::json(ran.batch));
  CHECK(job["ranks"][1]["ran_batch"] == ran.batch[1]);
  CHECK(job["efficiency"].get<double>() > 0);

  const std::string page = http_body(http_fetch(daemon.http_port(), "/"));
  CHECK(has(page, "<span class=\"state\">finished</span>, epoch <span class=\"epoch\">6</span>"));
  CHECK_FALSE(has(page, ">7</text>"));  // no epoch 7 on the charts' x axes
  CHECK(has(page, ">6</text>"));
  CHECK(has(page, "<td class=\"ran-batch\">" + std::to_string(ran.batch[0]) + "</td>"));
}

TEST_CASE("Views.RunningJobsComeFirst") {
  TestDaemon daemon(test_options());
  Agent a0(daemon.port(), "a-done", 0, 2), a1(daemon.port(), "a-done", 1, 2);
  run_job(a0, a1, 1);
  goodbye(a0);
  goodbye(a1);
  Agent b0(daemon.port(), "b-runs", 0, 2), b1(daemon.port(), "b-runs", 1, 2);
  run_job(b0, b1, 1);
  const auto status = nlohmann::json::parse(http_body(http_fetch(daemon.http_port(), "/status")));
  REQUIRE(status["jobs"].size() == 2);
  CHECK(status["jobs"][0]["job"] == "b-runs");
  CHECK(status["jobs"][1]["job"] == "a-done");
  const std::string page = http_body(http_fetch(daemon.http_port(), "/"));
  CHECK(page.find("id=\"job-b-runs\"") < page.find("id=\"job-a-done\""));
  CHECK(has(page, "<span class=\"efficiency\">"));
  CHECK(has(page, "<span class=\"predicted\">"));
  CHECK(has(page, "s ago</span>"));  // the last report's age
}

// The exchange's part of the predicted epoch, on /status and the page; where it is most of the
// epoch of a job that exchanges every step, the page says that averaging exchanges less. 10
// steps an epoch, 1 s of allreduce a step (the least any rank reported) on 0.32 s of compute: a
// synchronous job's epoch exchanges 10 s; one averaging every 5 steps makes 2 averages of 5 s.
TEST_CASE("Views.TheExchangesPartOfThePredictedEpochAndTheAdviceToAverage") {
  TestDaemon daemon(test_options());
  for (const int every : {0, 5}) {
    CAPTURE(every);
    const std::string job = every > 0 ? "averages" : "sync";
    Settings config = job_config();
    config.average_every = every;
    Agent r0(daemon.port(), job, 0, 2), r1(daemon.port(), job, 1, 2);
    const auto a0 = r0.join(config), a1 = r1.join(config);
    REQUIRE(a0);
    REQUIRE(a1);
    const Plan plan = joined({std::get<proto::PlanMsg>(proto::decode(*a0)),
                                      std::get<proto::PlanMsg>(proto::decode(*a1))});
    r0.report(0, plan.batch[0], 3000, 10.0);
    r1.report(0, plan.batch[1], 1000, 10.5);
    REQUIRE(r0.plan());
    REQUIRE(r1.plan());
    const auto status = nlohmann::json::parse(http_body(http_fetch(daemon.http_port(), "/status")));
    nlohmann::json mine;
    for (const auto& j : status["jobs"])
      if (j["job"] == job) mine = j;
    REQUIRE(mine.is_object());
    CHECK(mine["exchange_epoch_s"].get<double>() == doctest::Approx(10.0));
    CHECK(mine["predicted_epoch_s"].get<double>() > 10.0);
    const std::string page = http_body(http_fetch(daemon.http_port(), "/"));
    const std::string section = page.substr(page.find("id=\"job-" + job + "\""));
    const std::string figures = section.substr(0, section.find("</p>"));
    CHECK(has(figures, "(exchange <span class=\"exchange\">10 s</span>, "));
    CHECK(has(figures, "averaging the models every few steps (--average-every) exchanges less") ==
          (every == 0));
  }
}

TEST_CASE("Views.AJobWithoutRanksIsLostUntilTheyReconnect") {
  auto o = test_options();
  o.lost_after_s = 0.2;
  TestDaemon daemon(o);
  const auto state = [&] {
    const auto s = nlohmann::json::parse(http_body(http_fetch(daemon.http_port(), "/status")));
    return s["jobs"][0]["state"].get<std::string>();
  };
  {
    Agent r0(daemon.port(), "gone", 0, 2);
    auto r1 = std::make_unique<Agent>(daemon.port(), "gone", 1, 2);
    run_job(r0, *r1, 1);
    r1.reset();  // one rank left: a warning, not lost
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    const std::string page = http_body(http_fetch(daemon.http_port(), "/"));
    CHECK(has(page, "<p class=\"warning\">Warning: 1 of 2 ranks not connected: 1 (host1)</p>"));
    std::this_thread::sleep_for(std::chrono::milliseconds(600));
    CHECK(state() == "running");
  }  // the agents stop without goodbye (Ctrl-C)
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (state() != "lost" && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  CHECK(state() == "lost");
  const std::string m = http_body(http_fetch(daemon.http_port(), "/metrics"));
  CHECK(sample(m, "dbs_job_state{job_id=\"gone\",state=\"lost\"}") == 1);
  CHECK(sample(m, "dbs_jobs{state=\"lost\"}") == 1);
  CHECK(sample(m, "dbs_jobs{state=\"running\"}") == 0);
  CHECK(has(http_body(http_fetch(daemon.http_port(), "/")), "<p class=\"warning\">Lost: 2 of 2"));

  Agent back(daemon.port(), "gone", 0, 2);  // a rank registers again
  REQUIRE(back.join());
  CHECK(state() == "running");
}

TEST_CASE("Views.ARestoredJobShowsItsEpochsAndIsLostUntilItsRanksReturn") {
  TempDir dir;
  auto o = test_options();
  o.state_dir = dir.path() + "/state";
  o.lost_after_s = 0.3;
  Plan ran;
  {
    TestDaemon d(o);
    Agent r0(d.port(), "back", 0, 2), r1(d.port(), "back", 1, 2);
    r1.waiting = "spin (auto: no CPU quota)";
    ran = run_job(r0, r1, 3);
  }
  TestDaemon d(o);
  const auto status = [&] {
    return nlohmann::json::parse(http_body(http_fetch(d.http_port(), "/status")))["jobs"][0];
  };
  CHECK(status()["state"] == "running");
  CHECK(status()["epoch"] == 4);      // the journal's last plan is for epoch 4, not run yet
  CHECK(status()["ran_epoch"] == 3);  // the history is restored from the journal
  CHECK(status()["ranks"][0]["ran_batch"] == ran.batch[0]);
  CHECK(status()["ranks"][1]["host"] == "host1");  // what the ranks said, from the journal
  CHECK(status()["ranks"][1]["waiting"] == "spin (auto: no CPU quota)");
  CHECK(status()["ranks"][0]["waiting"] == "");
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (status()["state"] != "lost" && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  CHECK(status()["state"] == "lost");
  Agent r0(d.port(), "back", 0, 2);
  REQUIRE(r0.join());
  CHECK(status()["state"] == "running");
}

TEST_CASE("Views.AJobItsAgentsStoppedIsStoppedJournalledAndRunsAgainWhenResumed") {
  TempDir dir;
  auto o = test_options();
  o.state_dir = dir.path() + "/state";
  o.lost_after_s = 0.1;
  const auto state = [](const TestDaemon& d) {
    const auto s = nlohmann::json::parse(http_body(http_fetch(d.http_port(), "/status")));
    return s["jobs"][0]["state"].get<std::string>();
  };
  {
    TestDaemon d(o);
    Agent r0(d.port(), "halted", 0, 2), r1(d.port(), "halted", 1, 2);
    run_job(r0, r1, 2);
    for (Agent* a : {&r0, &r1}) {  // Ctrl-C: each rank says goodbye, not done
      a->client().send(proto::encode(proto::GoodbyeMsg{false}));
      CHECK(a->client().closed_within());
    }
    CHECK(state(d) == "stopped");
    std::this_thread::sleep_for(std::chrono::milliseconds(500));  // past --lost-after
    CHECK(state(d) == "stopped");
    const std::string m = http_body(http_fetch(d.http_port(), "/metrics"));
    CHECK(sample(m, "dbs_job_state{job_id=\"halted\",state=\"stopped\"}") == 1);
    CHECK(sample(m, "dbs_jobs{state=\"stopped\"}") == 1);
    CHECK(sample(m, "dbs_jobs{state=\"running\"}") == 0);
    CHECK(sample(m, "dbs_jobs{state=\"lost\"}") == 0);
    CHECK(has(http_body(http_fetch(d.http_port(), "/")), "<p class=\"warning\">Stopped: 2 of 2"));
  }
  TestDaemon d(o);  // restarted: the journal says stopped
  CHECK(state(d) == "stopped");
  Agent back(d.port(), "halted", 0, 2);  // resumed
  REQUIRE(back.join());
  CHECK(state(d) == "running");
}
