// The study record's one JSON form: written by `dbs-lab study record` from a finished job's
// --summary and --metrics and its dbs-agent arguments, read back by read_study.
#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "lab/study.h"
#include "lib/common/error.h"
#include "lib/common/format.h"
#include "lib/optim/schedule.h"

namespace dbs::lab {
namespace {

using nlohmann::json;

json number_or_null(double x) { return std::isfinite(x) ? json(x) : json(nullptr); }

json to_json(const StudyRun& r) {
  json epochs = json::array();
  for (const StudyEpoch& e : r.epochs)
    epochs.push_back({{"epoch", e.epoch},
                      {"test_acc", e.test_acc},
                      {"test_loss", number_or_null(e.test_loss)},
                      {"train_loss", number_or_null(e.train_loss)},
                      {"lr", e.lr},
                      {"wall_s", e.wall_s}});
  return {{"format", kStudyFormat},   {"version", kStudyVersion},
          {"study", r.study},         {"data", r.data},
          {"model", r.model},         {"optimizer", r.optimizer},
          {"lr", r.lr},               {"momentum", r.momentum},
          {"lr_scaling", r.lr_scaling}, {"base_batch", r.base_batch},
          {"global_batch", r.global_batch}, {"warmup_epochs", r.warmup_epochs},
          {"decay_epochs", r.decay_epochs}, {"decay_factor", r.decay_factor},
          {"seed", r.seed},           {"policy", r.policy},
          {"ranks", r.ranks},         {"threads", r.threads},
          {"train_samples", r.train_samples}, {"epochs", epochs},
          {"final_test_acc", r.final_test_acc}, {"wall_s", r.wall_s}};
}

// Field access with the field's path in every error ("epochs[3].test_acc").
struct Reader {
  std::string where;  // "FILE:LINE"

  [[noreturn]] void fail(const std::string& field, const std::string& what) const {
    throw InputError(where + ": field '" + field + "' " + what);
  }
  const json& at(const json& j, const std::string& key, const std::string& path) const {
    if (!j.is_object() || !j.contains(key)) fail(path, "is missing");
    return j.at(key);
  }
  double number(const json& j, const std::string& key, const std::string& path, double lo,
                double hi, bool nullable = false) const {
    const json& v = at(j, key, path);
    if (nullable && v.is_null()) return std::numeric_limits<double>::quiet_NaN();
    if (!v.is_number()) fail(path, "must be a number, got " + v.dump());
    const double x = v.get<double>();
    if (!(x >= lo && x <= hi)) fail(path, format("must be in [%g, %g], got %g", lo, hi, x));
    return x;
  }
  int integer(const json& j, const std::string& key, const std::string& path, int lo) const {
    const json& v = at(j, key, path);
    if (!v.is_number_integer() || v.get<long long>() < lo)
      fail(path, format("must be an integer >= %d, got ", lo) + v.dump());
    return v.get<int>();
  }
  std::string text(const json& j, const std::string& key, const std::string& path,
                   const std::vector<std::string>& allowed = {}) const {
    const json& v = at(j, key, path);
    if (!v.is_string() || v.get<std::string>().empty()) fail(path, "must be a non-empty string");
    const std::string s = v.get<std::string>();
    if (allowed.empty()) return s;
    for (const auto& a : allowed)
      if (s == a) return s;
    std::string list;
    for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
    fail(path, "must be one of " + list + ", got '" + s + "'");
  }
};

StudyRun from_json(const json& j, const Reader& r) {
  if (!j.is_object()) throw InputError(r.where + ": a record must be a JSON object");
  if (r.text(j, "format", "format") != kStudyFormat)
    r.fail("format", std::string("must be '") + kStudyFormat + "'");
  if (r.integer(j, "version", "version", 0) != kStudyVersion)
    r.fail("version", format("must be %d", kStudyVersion));
  StudyRun s;
  s.study = r.text(j, "study", "study", {"recipe", "filtering"});
  s.data = r.text(j, "data", "data", {"full", "filtered", "random"});
  s.model = r.text(j, "model", "model");
  s.optimizer = r.text(j, "optimizer", "optimizer");
  s.lr = r.number(j, "lr", "lr", 0, 1e6);
  s.momentum = r.number(j, "momentum", "momentum", 0, 1);
  s.lr_scaling = r.text(j, "lr_scaling", "lr_scaling", {"none", "linear", "sqrt"});
  s.base_batch = r.integer(j, "base_batch", "base_batch", 1);
  s.global_batch = r.integer(j, "global_batch", "global_batch", 1);
  s.warmup_epochs = r.number(j, "warmup_epochs", "warmup_epochs", 0, 1e6);
  const json& decay = r.at(j, "decay_epochs", "decay_epochs");
  if (!decay.is_array()) r.fail("decay_epochs", "must be an array");
  for (std::size_t k = 0; k < decay.size(); ++k) {
    const std::string path = format("decay_epochs[%zu]", k);
    if (!decay[k].is_number_integer() || decay[k].get<long long>() < 1)
      r.fail(path, "must be an integer >= 1, got " + decay[k].dump());
    s.decay_epochs.push_back(decay[k].get<int>());
  }
  s.decay_factor = r.number(j, "decay_factor", "decay_factor", 0, 1e6);
  s.seed = static_cast<unsigned>(r.number(j, "seed", "seed", 0, 4294967295.0));
  s.policy = r.text(j, "policy", "policy");
  s.ranks = r.integer(j, "ranks", "ranks", 1);
  s.threads = r.integer(j, "threads", "threads", 0);
  s.train_samples = r.integer(j, "train_samples", "train_samples", 1);
  const json& epochs = r.at(j, "epochs", "epochs");
  if (!epochs.is_array() || epochs.empty()) r.fail("epochs", "must be a non-empty array");
  for (std::size_t k = 0; k < epochs.size(); ++k) {
    const std::string p = format("epochs[%zu].", k);
    StudyEpoch e;
    e.epoch = r.integer(epochs[k], "epoch", p + "epoch", 1);
    if (e.epoch != static_cast<int>(k) + 1) r.fail(p + "epoch", format("must be %zu", k + 1));
    e.test_acc = r.number(epochs[k], "test_acc", p + "test_acc", 0, 1);
    e.test_loss = r.number(epochs[k], "test_loss", p + "test_loss", 0, 1e300, true);
    e.train_loss = r.number(epochs[k], "train_loss", p + "train_loss", 0, 1e300, true);
    e.lr = r.number(epochs[k], "lr", p + "lr", 0, 1e6);
    e.wall_s = r.number(epochs[k], "wall_s", p + "wall_s", 0, 1e9);
    s.epochs.push_back(e);
  }
  s.final_test_acc = r.number(j, "final_test_acc", "final_test_acc", 0, 1);
  s.wall_s = r.number(j, "wall_s", "wall_s", 0, 1e9);
  return s;
}

json parse_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError(path + ": cannot open");
  try {
    return json::parse(in);
  } catch (const json::exception& e) {
    throw InputError(path + ": not JSON: " + e.what());
  }
}

// The value of `--name V` or `--name=V` in the agent's arguments (the last one), or `fallback`.
std::vector<std::string> arg_values(const std::vector<std::string>& args, const std::string& name) {
  std::vector<std::string> out;
  for (std::size_t k = 0; k < args.size(); ++k) {
    if (args[k] == name && k + 1 < args.size()) out.push_back(args[k + 1]);
    if (args[k].rfind(name + "=", 0) == 0) out.push_back(args[k].substr(name.size() + 1));
  }
  return out;
}

std::string arg(const std::vector<std::string>& args, const std::string& name,
                const std::string& fallback) {
  const auto v = arg_values(args, name);
  return v.empty() ? fallback : v.back();
}

double to_number(const std::string& s, const std::string& name) {
  std::size_t used = 0;
  double x = 0;
  try {
    x = std::stod(s, &used);
  } catch (const std::exception&) {
  }
  if (used == 0 || used != s.size()) throw InputError(name + ": not a number: '" + s + "'");
  return x;
}

}  // namespace

std::vector<StudyRun> read_study(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError(path + ": cannot open");
  std::vector<StudyRun> runs;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const Reader r{path + ":" + std::to_string(n)};
    json j;
    try {
      j = json::parse(line);
    } catch (const json::exception& e) {
      throw InputError(r.where + ": not JSON: " + e.what());
    }
    runs.push_back(from_json(j, r));
  }
  if (runs.empty()) throw InputError(path + ": no records");
  for (const StudyRun& s : runs)
    if (s.study != runs.front().study)
      throw InputError(path + ": records of two studies ('" + runs.front().study + "' and '" +
                       s.study + "'); one file holds one study");
  return runs;
}

// The record of one finished job. `args` are its dbs-agent arguments: the schedule settings the
// summary does not carry are read from them and checked against the lr the metrics recorded.
std::string study_record(const std::string& study, const std::string& data,
                         const std::string& summary_path, const std::string& metrics_path,
                         double wall_s, const std::vector<std::string>& args) {
  const json sum = parse_file(summary_path);
  const Reader rs{summary_path};
  const json& cfg = rs.at(sum, "config", "config");
  StudyRun s;
  s.study = study;
  s.data = data;
  s.model = rs.text(cfg, "model", "config.model");
  s.optimizer = rs.text(cfg, "optimizer", "config.optimizer");
  s.policy = rs.text(cfg, "policy", "config.policy");
  s.lr = rs.number(cfg, "lr", "config.lr", 0, 1e6);
  s.global_batch = rs.integer(cfg, "global_batch", "config.global_batch", 1);
  s.seed = static_cast<unsigned>(rs.number(cfg, "seed", "config.seed", 0, 4294967295.0));
  s.ranks = rs.integer(cfg, "world", "config.world", 1);
  s.threads = rs.integer(cfg, "threads", "config.threads", 0);
  s.train_samples = rs.integer(cfg, "samples_per_epoch", "config.samples_per_epoch", 1);
  s.momentum = s.optimizer == "sgd" ? to_number(arg(args, "--momentum", "0.9"), "--momentum") : 0;
  s.lr_scaling = arg(args, "--lr-scaling", "none");
  if (s.lr_scaling == "constant") s.lr_scaling = "none";
  s.base_batch = static_cast<int>(to_number(arg(args, "--base-batch", "128"), "--base-batch"));
  s.warmup_epochs = to_number(arg(args, "--warmup-epochs", "0"), "--warmup-epochs");
  s.decay_factor = to_number(arg(args, "--decay-factor", "0.1"), "--decay-factor");
  for (const std::string& list : arg_values(args, "--decay-epochs")) {
    std::istringstream in(list);
    for (std::string e; std::getline(in, e, ',');)
      s.decay_epochs.push_back(static_cast<int>(to_number(e, "--decay-epochs")));
  }
  const bool subset = !rs.at(cfg, "train_subset", "config.train_subset").is_null();
  if (subset != (data != "full"))
    throw InputError(summary_path + ": data '" + data + "' but the run " +
                     (subset ? "trained on --train-subset" : "had no --train-subset"));

  optim::ScheduleConfig sched{s.lr, optim::parse_scaling(s.lr_scaling), s.base_batch,
                              s.global_batch, s.warmup_epochs, s.decay_epochs, s.decay_factor};
  std::map<int, double> lr_at;  // epoch -> rank 0's lr at its start, from the metrics
  std::ifstream in(metrics_path);
  if (!in) throw InputError(metrics_path + ": cannot open");
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    const Reader rm{metrics_path + ":" + std::to_string(n)};
    json row;
    try {
      row = json::parse(line);
    } catch (const json::exception& e) {
      throw InputError(rm.where + ": not JSON: " + e.what());
    }
    if (rm.integer(row, "rank", "rank", 0) == 0)
      lr_at[rm.integer(row, "epoch", "epoch", 1)] = rm.number(row, "lr", "lr", 0, 1e6);
  }
  const json& epochs = rs.at(sum, "epochs", "epochs");
  for (std::size_t k = 0; k < epochs.size(); ++k) {
    const std::string p = format("epochs[%zu].", k);
    StudyEpoch e;
    e.epoch = rs.integer(epochs[k], "epoch", p + "epoch", 1);
    e.test_acc = rs.number(epochs[k], "test_acc", p + "test_acc", 0, 1);
    e.test_loss = rs.number(epochs[k], "test_loss", p + "test_loss", 0, 1e300, true);
    e.train_loss = rs.number(epochs[k], "train_loss", p + "train_loss", 0, 1e300, true);
    e.wall_s = rs.number(epochs[k], "wall_s", p + "wall_s", 0, 1e9);
    const auto it = lr_at.find(e.epoch);
    if (it == lr_at.end())
      throw InputError(metrics_path + format(": no row of rank 0 for epoch %d", e.epoch));
    e.lr = it->second;
    const double want = optim::learning_rate(sched, e.epoch - 1);
    if (std::fabs(e.lr - want) > 1e-6 * want)
      throw InputError(metrics_path + format(": epoch %d started at lr %g, but the schedule of "
                                             "the arguments gives %g (are they the job's?)",
                                             e.epoch, e.lr, want));
    s.epochs.push_back(e);
  }
  s.final_test_acc = rs.number(sum, "test_acc", "test_acc", 0, 1);
  s.wall_s = wall_s;
  const json j = to_json(s);
  from_json(j, Reader{"the new record"});  // what read_study would refuse is not written
  return j.dump();
}

}  // namespace dbs::lab
