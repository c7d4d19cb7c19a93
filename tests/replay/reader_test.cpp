// The trace reader: what it builds from a good trace, and the exact error (naming the line) for
// each kind of malformed one.
#include "lib/replay/reader.h"

#include <doctest/doctest.h>

#include "tests/replay/helpers.h"

namespace {

using namespace dbs::replay;
using namespace dbs::replay::test;

std::string error_of(const std::vector<std::string>& lines, bool strict = false) {
  ReadOptions o;
  o.strict = strict;
  return input_error([&] { parse_trace(join(lines), "t.jsonl", o); });
}

}  // namespace

TEST_CASE("Reader.GoodTrace.EpochsPlansReportsAndHeader") {
  const Trace t = parse_trace(join(good_lines()), "t.jsonl");
  CHECK(t.warnings.empty());
  CHECK(t.header.world == 2);
  CHECK(t.header.settings.global_batch == 128);
  CHECK(t.header.settings.samples_per_epoch == 1280);
  CHECK(to_string(t.header.settings.policy) == "static");
  REQUIRE(t.epochs.size() == 2);
  CHECK(t.epochs[1].epoch == 1);
  CHECK(t.epochs[0].plans.size() == 1);
  CHECK(t.epochs[0].plans[0].source == "initial");
  CHECK(t.epochs[0].plans[0].plan.batch == std::vector<int>{64, 64});
  CHECK(t.epochs[0].reports[1].compute_s == doctest::Approx(1.28));
  CHECK(t.epochs[0].reports[1].samples == 640);
  CHECK(t.epochs[1].wall_s == doctest::Approx(1.5));
  CHECK(t.epochs[1].line == 9);
}

TEST_CASE("Reader.Rejects.BadJsonLineNamingIt") {
  auto lines = good_lines();
  lines[3] = R"({"type":"rank","epoch":1,)";
  CHECK(error_of(lines).starts_with("t.jsonl:4: not valid JSON: "));
}

TEST_CASE("Reader.Rejects.MissingFieldNamingLineRecordAndField") {
  auto lines = good_lines();
  lines[2] = R"({"type":"rank","epoch":1,"rank":0,"batch":64,"samples":640,"steps":10,"comm_s":0.1})";
  CHECK(error_of(lines) == "t.jsonl:3: rank record: missing field 'compute_s'");
}

TEST_CASE("Reader.Rejects.UnknownVersion") {
  auto lines = good_lines();
  lines[0] = header_line(3);
  CHECK(error_of(lines) ==
        "t.jsonl:1: header: unknown trace version 3 (this dbs reads versions 1 to 2)");
  lines[0] = header_line(1);  // train_samples, as version 1 named it
  CHECK(parse_trace(join(lines), "t.jsonl").header.settings.samples_per_epoch == 1280);
}

TEST_CASE("Reader.Rejects.NotATrace") {
  CHECK(error_of({R"({"type":"header","format":"csv","version":1,"config":{}})"}) ==
        "t.jsonl:1: header: format is 'csv', not 'dbs-trace'");
  CHECK(error_of({plan_line(1)}) ==
        "t.jsonl:1: header: the first line of a trace must be its header");
  CHECK(input_error([] { parse_trace("", "t.jsonl"); }) == "t.jsonl: empty trace (no header line)");
}

TEST_CASE("Reader.TruncatedLastLine.SkippedWithWarningOrStrictError") {
  auto lines = good_lines();
  lines.push_back(R"({"type":"rank","epoch":3,"ra)");  // a crash in the middle of a write
  const std::string text = join(lines, /*final_newline=*/false);
  const Trace t = parse_trace(text, "t.jsonl");
  CHECK(t.epochs.size() == 2);
  REQUIRE(t.warnings.size() == 1);
  CHECK(t.warnings[0] ==
        "t.jsonl:11: the last line is truncated (no newline at the end, not valid JSON): the run "
        "stopped while writing it; skipped");
  ReadOptions strict;
  strict.strict = true;
  CHECK(input_error([&] { parse_trace(text, "t.jsonl", strict); }) ==
        "t.jsonl:11: the last line is truncated (no newline at the end, not valid JSON): the run "
        "stopped while writing it");
}

TEST_CASE("Reader.BadLineWithNewline.IsAnErrorEvenWhenLast") {
  auto lines = good_lines();
  lines.push_back(R"({"type":"rank","epoch":3,"ra)");
  CHECK(error_of(lines).starts_with("t.jsonl:11: not valid JSON: "));
}

TEST_CASE("Reader.UnfinishedLastEpoch.DroppedWithWarning") {
  auto lines = good_lines();
  lines.push_back(rank_line(3, 0, 0.64, 0.7));
  const Trace t = parse_trace(join(lines), "t.jsonl");
  CHECK(t.epochs.size() == 2);
  REQUIRE(t.warnings.size() == 1);
  CHECK(t.warnings[0] ==
        "t.jsonl:11: epoch 3 has no eval record (the run stopped during it): not replayed");
}

TEST_CASE("Reader.Rejects.InconsistentRecords") {
  auto lines = good_lines();
  SUBCASE("a rank missing at the eval record") {
    lines.erase(lines.begin() + 3);
    CHECK(error_of(lines) == "t.jsonl:4: eval record: epoch 1 has no rank record for rank 1");
  }
  SUBCASE("a rank outside the job") {
    lines[3] = rank_line(1, 2, 1.0, 0.1);
    CHECK(error_of(lines) == "t.jsonl:4: rank record: field 'rank' must be an integer in [0, 1], got 2");
  }
  SUBCASE("a rank twice") {
    lines[3] = rank_line(1, 0, 1.0, 0.1);
    CHECK(error_of(lines) ==
          "t.jsonl:4: rank record: a second record for rank 0 in epoch 1 (first at line 3)");
  }
  SUBCASE("a record of the next epoch before the eval record") {
    lines[3] = rank_line(2, 1, 1.0, 0.1);
    CHECK(error_of(lines) ==
          "t.jsonl:4: rank record: is for epoch 2 but epoch 1 (from line 3) has no eval record "
          "yet");
  }
  SUBCASE("an epoch without its plan") {
    lines.erase(lines.begin() + 5);
    CHECK(error_of(lines) ==
          "t.jsonl:6: rank record: epoch 2 has no plan record (step 0) before it");
  }
  SUBCASE("a plan whose sizes do not sum to the global batch") {
    lines[5] = R"({"type":"plan","epoch":2,"step":0,"global_batch":128,"batch":[64,60],)"
               R"("offset":[0,64],"throughput":[0,0],"predicted_epoch_s":0,"ideal_epoch_s":0,)"
               R"("changed":false,"reason":"x"})";
    CHECK(error_of(lines) ==
          "t.jsonl:6: plan record: plan batch sizes sum to 124, not its global batch 128");
  }
  SUBCASE("a negative time") {
    lines[2] = rank_line(1, 0, -0.5, 0.1);
    CHECK(error_of(lines).starts_with("t.jsonl:3: rank record: field 'compute_s' must be a finite number >= 0, got -0.5"));
  }
  SUBCASE("an epoch repeated (a run resumed from an older checkpoint)") {
    lines.push_back(rank_line(2, 0, 0.64, 0.7));
    CHECK(error_of(lines) ==
          "t.jsonl:11: rank record: is for epoch 2, which finished at line 9 (a run resumed from "
          "an older checkpoint repeats epochs: keep one copy)");
  }
  SUBCASE("a second header") {
    lines.insert(lines.begin() + 2, header_line());
    CHECK(error_of(lines) == "t.jsonl:3: record: a second header: a trace holds one run");
  }
}

TEST_CASE("Reader.UnknownKeysAndRecordTypes.Ignored") {
  auto lines = good_lines();
  lines[2].insert(1, R"("future_key":[1,2],)");
  lines.insert(lines.begin() + 2, R"({"type":"checkpoint","epoch":1})");
  const Trace t = parse_trace(join(lines), "t.jsonl");
  CHECK(t.epochs.size() == 2);
  REQUIRE(t.warnings.size() == 1);
  CHECK(t.warnings[0] == "t.jsonl:3: records of unknown type 'checkpoint' are ignored");
}

TEST_CASE("Reader.MissingFile.NamesIt") {
  CHECK(input_error([] {
          read_trace("/nonexistent/t.jsonl");
        }).starts_with("/nonexistent/t.jsonl: cannot open trace"));
}

TEST_CASE("Reader.CommittedTraces.ParseWithoutWarnings") {
  const auto traces = recorded_traces();
  CHECK(traces.size() >= 3);
  for (const auto& path : traces) {
    CAPTURE(path);
    const Trace t = read_trace(path.string());
    CHECK(t.warnings.empty());
    CHECK(t.epochs.size() >= 3);
  }
}
