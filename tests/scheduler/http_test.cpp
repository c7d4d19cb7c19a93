// dbs-scheduler serve's HTTP side: /metrics, /status and the page show the job.
#include <doctest/doctest.h>

#include "tests/scheduler/harness.h"

using namespace dbs::test;

TEST_CASE("Http.MetricsStatusAndPageShowTheJob") {
  TestDaemon daemon(test_options());
  Agent r0(daemon.port(), "web", 0, 2), r1(daemon.port(), "web", 1, 2);
  r0.waiting = "sleep (auto: CPU quota of 0.33 core(s) for 1 thread(s))";
  REQUIRE(r0.join());
  REQUIRE(r1.join());
  for (std::int64_t e = 0; e < 2; ++e) {
    r0.report(e, 64, 2000);
    r1.report(e, 64, 1000);
    REQUIRE(r0.plan());
    REQUIRE(r1.plan());
  }
  const std::string metrics = http_fetch(daemon.http_port(), "/metrics");
  CHECK(metrics.find("HTTP/1.1 200 OK\r\n") == 0);
  CHECK(metrics.find("Content-Type: text/plain; version=0.0.4") != std::string::npos);
  for (const char* want :
       {"dbs_jobs{state=\"running\"} 1", "dbs_job_ranks{job_id=\"web\"} 2",
        "dbs_job_connected_ranks{job_id=\"web\"} 2", "dbs_job_reports_total{job_id=\"web\"} 4",
        "dbs_job_plan_changes_total{job_id=\"web\"} 2",
        "dbs_rank_throughput_samples_per_second{job_id=\"web\",rank=\"0\"} 2000",
        "dbs_rank_batch{job_id=\"web\",rank=\"1\"} 43", "# TYPE dbs_job_efficiency_ratio gauge",
        "dbs_rank_info{job_id=\"web\",rank=\"0\",host=\"host0\",waiting=\"sleep (auto: CPU quota "
        "of 0.33 core(s) for 1 thread(s))\"} 1",
        "dbs_rank_info{job_id=\"web\",rank=\"1\",host=\"host1\",waiting=\"\"} 1"}) {
    CAPTURE(want);
    CHECK(metrics.find(want) != std::string::npos);
  }
  const auto status = nlohmann::json::parse(http_body(http_fetch(daemon.http_port(), "/status")));
  REQUIRE(status["jobs"].size() == 1);
  const auto& job = status["jobs"][0];
  CHECK(job["job"] == "web");
  CHECK(job["epoch"] == 3);
  CHECK(job["plan"]["batch"] == nlohmann::json::array({85, 43}));
  CHECK(job["ranks"][1]["host"] == "host1");
  CHECK(job["ranks"][0]["waiting"] == r0.waiting);
  CHECK(job["ranks"][1]["waiting"] == "");  // not said
  CHECK(job["ranks"][0]["throughput"] == 2000.0);
  CHECK(status["daemon"]["protocol"] == 2);

  const std::string page = http_body(http_fetch(daemon.http_port(), "/"));
  CHECK(page.find("<h2>job web") != std::string::npos);
  CHECK(page.find("<td class=\"waiting\">" + r0.waiting + "</td>") != std::string::npos);
  CHECK(page.find("<td class=\"waiting\">-</td>") != std::string::npos);
  CHECK(page.find("<svg xmlns=\"http://www.w3.org/2000/svg\"") != std::string::npos);
  CHECK(page.find("<polyline") != std::string::npos);
  for (const char* want : {">epoch</text>", ">samples per step</text>", ">samples/s</text>"}) {
    CAPTURE(want);
    CHECK(page.find(want) != std::string::npos);  // axis titles, as in the replay report
  }

  CHECK(http_fetch(daemon.http_port(), "/nope").find("HTTP/1.1 404 Not Found") == 0);
  SocketClient post(daemon.http_port());
  post.send("POST /status HTTP/1.1\r\n\r\n");
  CHECK(post.line().value_or("") == "HTTP/1.1 405 Method Not Allowed\r");
}
