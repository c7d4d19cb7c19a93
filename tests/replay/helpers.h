// Shared helpers of the replay tests: small traces written by hand, the repository's traces/
// folder, and checks on thrown errors.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "lib/common/error.h"

namespace dbs::replay::test {

// The traces/ folder of the source tree, found from the working directory upwards (tests run
// from the repository root or from a build directory inside it); empty when not found.
inline std::filesystem::path traces_dir() {
  for (auto dir = std::filesystem::current_path(); !dir.empty(); dir = dir.parent_path()) {
    if (std::filesystem::exists(dir / "traces" / "README.md")) return dir / "traces";
    if (dir == dir.parent_path()) break;
  }
  return {};
}

// The committed recordings of real runs: traces/*.jsonl, sorted.
inline std::vector<std::filesystem::path> recorded_traces() {
  std::vector<std::filesystem::path> out;
  const auto dir = traces_dir();
  if (dir.empty()) return out;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() == ".jsonl") out.push_back(entry.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// A two-rank trace written by hand: header, then per epoch a plan and two rank records and an
// eval record. Lines: 1 header, 2 initial plan, then 4 lines per epoch (rank, rank, eval, plan).
// Version 1 named samples_per_epoch train_samples.
inline std::string header_line(int version = 2) {
  return R"({"type":"header","format":"dbs-trace","version":)" + std::to_string(version) +
         R"(,"config":{"world":2,"global_batch":128,")" +
         (version == 1 ? "train_samples" : "samples_per_epoch") +
         R"(":1280,"params":1000,"policy":"static","epochs":2,"rebalance_every":0,"min_gain":0.02,)"
         R"("min_batch":1,"max_batch":0}})";
}

inline std::string plan_line(int epoch, const std::string& source = "embedded") {
  return R"({"type":"plan","epoch":)" + std::to_string(epoch) +
         R"(,"step":0,"global_batch":128,"batch":[64,64],"offset":[0,64],"throughput":[0,0],)"
         R"("predicted_epoch_s":0,"ideal_epoch_s":0,"changed":false,"reason":"static","source":")" +
         source + R"("})";
}

inline std::string rank_line(int epoch, int rank, double compute_s, double comm_s) {
  return R"({"type":"rank","epoch":)" + std::to_string(epoch) + R"(,"rank":)" +
         std::to_string(rank) +
         R"(,"host":"h","batch":64,"samples":640,"steps":10,)"
         R"("compute_s":)" +
         std::to_string(compute_s) + R"(,"comm_s":)" + std::to_string(comm_s) +
         R"(,"throughput":1,"step_rate_median":0})";
}

inline std::string eval_line(int epoch, double wall_s) {
  return R"({"type":"eval","epoch":)" + std::to_string(epoch) + R"(,"wall_s":)" +
         std::to_string(wall_s) + R"(,"replans":0})";
}

// Two epochs: rank 0 computes 640 samples in 0.64 s, rank 1 in 1.28 s; epoch walls 1.5 s.
inline std::vector<std::string> good_lines() {
  return {header_line(),
          plan_line(1, "initial"),
          rank_line(1, 0, 0.64, 0.76),
          rank_line(1, 1, 1.28, 0.1),
          eval_line(1, 1.5),
          plan_line(2),
          rank_line(2, 0, 0.64, 0.76),
          rank_line(2, 1, 1.28, 0.1),
          eval_line(2, 1.5),
          plan_line(3)};
}

inline std::string join(const std::vector<std::string>& lines, bool final_newline = true) {
  std::string out;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    out += lines[i];
    if (i + 1 < lines.size() || final_newline) out += "\n";
  }
  return out;
}

// The message of the InputError that f throws (fails the test when it throws none).
template <typename F>
std::string input_error(F&& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  FAIL("expected an InputError");
  return "";
}

}  // namespace dbs::replay::test
