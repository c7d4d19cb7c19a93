// The small shared helpers of lib/common: format, format_seconds, fnv1a, log::parse_level.
#include <doctest/doctest.h>

#include <unistd.h>

#include <cstdio>
#include <ctime>
#include <fstream>
#include <sstream>
#include <regex>
#include <string>

#include "lib/common/cpu_quota.h"
#include "lib/common/error.h"
#include "lib/common/format.h"
#include "lib/common/hash.h"
#include "lib/common/log.h"
#include "lib/common/read_file.h"

using namespace dbs;

TEST_CASE("Format.Printf.LongerThanAnyBuffer") {
  CHECK(format("%d ranks, %.2f s", 3, 1.5) == "3 ranks, 1.50 s");
  const std::string long_text(1000, 'x');
  const std::string out = format("<%s>", long_text.c_str());
  CHECK(out.size() == 1002);
  CHECK(out == "<" + long_text + ">");
  CHECK(format("%s", "").empty());
}

TEST_CASE("Format.Seconds.ShortestForm") {
  CHECK(format_seconds(30) == "30 s");
  CHECK(format_seconds(0.5) == "0.5 s");
  CHECK(format_seconds(86400) == "86400 s");
}

TEST_CASE("Hash.Fnv1a.ReferenceVectors") {
  CHECK(fnv1a("", 0) == 0xcbf29ce484222325ULL);
  CHECK(fnv1a("a", 1) == 0xaf63dc4c8601ec8cULL);
  CHECK(fnv1a("foobar", 6) == 0x85944171f73967e8ULL);
  // Chained calls hash the concatenation.
  CHECK(fnv1a("bar", 3, fnv1a("foo", 3)) == fnv1a("foobar", 6));
}

TEST_CASE("Log.ParseLevel.TheOptionWordsOnly") {
  CHECK(log::parse_level("debug") == log::Level::debug);
  CHECK(log::parse_level("info") == log::Level::info);
  CHECK(log::parse_level("warning") == log::Level::warn);
  CHECK(log::parse_level("error") == log::Level::error);
  CHECK_THROWS_WITH_AS(log::parse_level("warn"),
                       "unknown log level 'warn' (expected debug, info, warning or error)",
                       ConfigError);
}

TEST_CASE("Log.Timestamp.Iso8601UtcMilliseconds") {
  const std::time_t before = std::time(nullptr);
  const std::string t = dbs::log::timestamp();
  const std::time_t after = std::time(nullptr);
  REQUIRE(std::regex_match(t, std::regex(R"(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z)")));
  std::tm utc{};
  REQUIRE(strptime(t.c_str(), "%Y-%m-%dT%H:%M:%S", &utc) != nullptr);
  const std::time_t at = timegm(&utc);  // read back as UTC: the same second as now
  CHECK(at >= before);
  CHECK(at <= after);
}

TEST_CASE("ReadRest.FromThePositionToTheEnd") {
  char path[] = "/tmp/dbs-read-rest-XXXXXX";
  const int fd = mkstemp(path);
  REQUIRE(fd >= 0);
  close(fd);
  std::string bytes(3 << 16, 'x');  // longer than one chunk, with a zero byte inside
  bytes[70000] = '\0';
  bytes += "end";
  std::ofstream(path, std::ios::binary) << bytes;
  {
    std::ifstream in(path, std::ios::binary);
    CHECK(dbs::read_rest(in) == bytes);
    CHECK_FALSE(in.bad());
  }
  {
    std::ifstream in(path, std::ios::binary);
    in.seekg(5);
    CHECK(dbs::read_rest(in) == bytes.substr(5));
  }
  std::ofstream(path, std::ios::binary | std::ios::trunc).flush();
  std::ifstream empty(path, std::ios::binary);
  CHECK(dbs::read_rest(empty).empty());
  std::remove(path);
  // A stream that cannot seek (its buffer has no seekoff) is read to its end as well.
  struct Unseekable : std::streambuf {
    explicit Unseekable(std::string& s) { setg(s.data(), s.data(), s.data() + s.size()); }
  };
  std::string text = "a\nb\n";
  Unseekable buf(text);
  std::istream in(&buf);
  in.get();
  CHECK(in.tellg() == std::istream::pos_type(-1));
  CHECK(dbs::read_rest(in) == "\nb\n");
}

TEST_CASE("SustainedTime.ThrottlingLumpsDoNotAddUp") {
  // Held to half a core: the first stretch runs 0.1 s at full speed on its refilled quota (0.1 s
  // of CPU), the second waits out the rest of the period (0.3 s wall for 0.1 s of CPU). Both are
  // 0.2 s at the quota's rate, 0.4 s in all, as their wall time; the larger of wall and CPU over
  // the quota stretch by stretch would give 0.5 s.
  SustainedTime held(0.5);
  CHECK(held.add(0.1, 0.1) == doctest::Approx(0.2));
  CHECK(held.add(0.3, 0.1) == doctest::Approx(0.2));
  // Then it gets a quarter of a core for 0.4 s, less than its quota: the wall time so far (0.8 s)
  // is past the CPU over the quota (0.6 s), so the stretch counts 0.2 s * 0.8 / 0.6.
  CHECK(held.add(0.4, 0.1) == doctest::Approx(0.2 * 0.8 / 0.6));

  SustainedTime free(0);
  CHECK(free.add(0.3, 0.1) == doctest::Approx(0.3));
}
