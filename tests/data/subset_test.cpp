// Subset files: round trip, every rejection names the file and the field, and select().
#include <doctest/doctest.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "lib/common/error.h"
#include "lib/data/subset.h"

using namespace dbs::data;

namespace {

Dataset tiny(std::size_t n) {
  Dataset d;
  d.n = n;
  d.rows = d.cols = 2;
  for (std::size_t i = 0; i < n; ++i) {
    for (int p = 0; p < 4; ++p) d.images.push_back(static_cast<float>(i) + 0.1f * p);
    d.labels.push_back(static_cast<std::int32_t>(i % 3));
  }
  return d;
}

std::string temp_path(const char* name) { return std::string("/tmp/dbs-subset-test-") + name; }

std::string error_of(const std::string& text) {
  const std::string path = temp_path("bad.json");
  std::ofstream(path) << text;
  try {
    read_subset(path);
  } catch (const dbs::InputError& e) {
    std::remove(path.c_str());
    return e.what();
  }
  std::remove(path.c_str());
  return "(accepted)";
}

}  // namespace

TEST_CASE("Subset.RoundTripAndSelect") {
  const Dataset d = tiny(10);
  const Subset s{"dbscan", d.n, dataset_hash(d), {0, 3, 4, 9}};
  const std::string path = temp_path("ok.json");
  write_subset(s, path);
  const Subset r = read_subset(path);
  std::remove(path.c_str());
  CHECK(r.method == "dbscan");
  CHECK(r.indices == s.indices);
  CHECK(r.dataset_hash == s.dataset_hash);
  CHECK(subset_hash(r) == subset_hash(s));
  CHECK_NOTHROW(check_subset_matches(r, d, path));
  const Dataset sel = select(d, r.indices);
  REQUIRE(sel.n == 4);
  CHECK(sel.labels == std::vector<std::int32_t>{0, 0, 1, 0});
  CHECK(sel.image(1)[0] == 3.0f);
  CHECK(sel.image(3)[3] == doctest::Approx(9.3f));
}

TEST_CASE("Subset.MismatchedDataIsRefused") {
  const Dataset d = tiny(10);
  Subset s{"dbscan", d.n, dataset_hash(d), {1}};
  Dataset other = d;
  other.labels[5] = 0;  // was 2
  CHECK_THROWS_WITH_AS(check_subset_matches(s, other, "f.json"),
                       doctest::Contains("f.json: field 'dataset_hash'"), dbs::InputError);
  CHECK_THROWS_WITH_AS(check_subset_matches(s, tiny(9), "f.json"),
                       "f.json: field 'dataset_samples' is 10 but the training set has 9 samples "
                       "(check --train-limit)",
                       dbs::InputError);
}

TEST_CASE("Subset.BadFilesNameTheField") {
  const std::string p = temp_path("bad.json");
  const std::string head =
      R"({"format":"dbs-subset","version":1,"method":"dbscan","dataset_samples":5,"dataset_hash":"00000000000000ff",)";
  CHECK(error_of(head + R"("count":2,"indices":[1,3]})") == "(accepted)");
  CHECK(error_of("[1, 2").find(p + ": not valid JSON") == 0);
  CHECK(error_of("[1, 2]") == p + ": is not a JSON object");
  CHECK(error_of(R"({"format":"other"})") == p + ": field 'format' must be \"dbs-subset\"");
  CHECK(error_of(R"({"format":"dbs-subset","version":7})") ==
        p + ": field 'version' is 7; this build reads version 1");
  CHECK(error_of(R"({"format":"dbs-subset"})") == p + ": missing field 'version'");
  CHECK(error_of(head + R"("count":3,"indices":[1,3]})") ==
        p + ": field 'count' is 3 but 'indices' has 2 entries");
  CHECK(error_of(head + R"("count":2,"indices":[1,5]})") ==
        p + ": field 'indices' item 1 must be an integer in [0, 4], got 5");
  CHECK(error_of(head + R"("count":2,"indices":[3,3]})") ==
        p + ": field 'indices' item 1 is 3, not above the previous one (indices ascend, no repeats)");
  CHECK(error_of(head + R"("count":2,"indices":[1,-3]})") ==
        p + ": field 'indices' item 1 must be an integer in [0, 4], got -3");
  CHECK(error_of(head + R"("count":0,"indices":[]})") ==
        p + ": field 'indices' is empty: a subset keeps at least one sample");
  CHECK(error_of(R"({"format":"dbs-subset","version":1,"method":"x","dataset_samples":5,"dataset_hash":"xyz"})") ==
        p + ": field 'dataset_hash' must be 16 lower-case hex digits");
  CHECK(error_of("{}") == p + ": missing field 'format'");
  CHECK(error_of(head + R"("count":2,"indices":[1,"3"]})") ==
        p + ": field 'indices' item 1 must be an integer, got string");
}
