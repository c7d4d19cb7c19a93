// The study record's one JSON form: written by `dbs-lab study record` from a finished job's
// --summary and --metrics and its dbs-agent arguments, read back by read_study.
#include <cmath>
#include <cstdint>
#include <fstream>
#include <initializer_list>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "lab/study.h"
#include "lib/common/error.h"
#include "lib/common/fields.h"
#include "lib/common/format.h"
#include "lib/optim/schedule.h"

namespace dbs::lab {
namespace {

using nlohmann::json;

json number_or_null(double x) {
  return std::isfinite(x) ? json(x) : json(nullptr);
}

json to_json(const StudyRun& r) {
  json epochs = json::array();
  for (const StudyEpoch& e : r.epochs)
    epochs.push_back({{"epoch", e.epoch},
                      {"test_acc", e.test_acc},
                      {"test_loss", number_or_null(e.test_loss)},
                      {"train_loss", number_or_null(e.train_loss)},
                      {"lr", e.lr},
                      {"wall_s", e.wall_s}});
  return {{"format", kStudyFormat},
          {"version", kStudyVersion},
          {"study", r.study},
          {"data", r.data},
          {"model", r.model},
          {"optimizer", r.optimizer},
          {"lr", r.lr},
          {"momentum", r.momentum},
          {"lr_scaling", r.lr_scaling},
          {"base_batch", r.base_batch},
          {"global_batch", r.global_batch},
          {"warmup_epochs", r.warmup_epochs},
          {"decay_epochs", r.decay_epochs},
          {"decay_factor", r.decay_factor},
          {"seed", r.seed},
          {"policy", r.policy},
          {"ranks", r.ranks},
          {"threads", r.threads},
          {"train_samples", r.train_samples},
          {"epochs", epochs},
          {"final_test_acc", r.final_test_acc},
          {"wall_s", r.wall_s}};
}

// Records are read with lib/common/fields.h; a nested object or array item is read with its
// path in `where` ("FILE:LINE: epochs[3]: field 'test_acc' ...").
std::string text(const Fields& f, const char* key) {
  std::string s = f.string(key, 4096);
  if (s.empty()) f.fail(std::string("field '") + key + "' must be a non-empty string");
  return s;
}

std::string one_of(const Fields& f, const char* key, std::initializer_list<const char*> allowed) {
  const std::string s = text(f, key);
  std::string list;
  for (const char* a : allowed) {
    if (s == a) return s;
    list += (list.empty() ? "" : ", ") + std::string(a);
  }
  f.fail(std::string("field '") + key + "' must be one of " + list + ", got '" + s + "'");
}

// A number in [lo, hi], or NaN for null (a loss after a divergence).
double number_or_nan(const Fields& f, const char* key, double lo, double hi) {
  if (f.need(key).is_null()) return std::numeric_limits<double>::quiet_NaN();
  return f.number(key, lo, hi);
}

// The items of an array field, each an object read with its path.
std::vector<Fields> items(const Fields& f, const char* key) {
  const json& v = f.need(key);
  if (!v.is_array() || v.empty())
    f.fail(std::string("field '") + key + "' must be a non-empty array, got " + describe(v));
  std::vector<Fields> out;
  for (std::size_t k = 0; k < v.size(); ++k)
    out.emplace_back(v[k], f.where() + format(": %s[%zu]", key, k));
  return out;
}

constexpr std::int64_t kMaxSeed = 4294967295;

StudyRun from_json(const Fields& f) {
  if (text(f, "format") != kStudyFormat)
    f.fail(std::string("field 'format' must be '") + kStudyFormat + "'");
  if (f.integer("version", 0) != kStudyVersion)
    f.fail(format("field 'version' must be %d", kStudyVersion));
  StudyRun s;
  s.study = one_of(f, "study", {"recipe", "filtering"});
  s.data = one_of(f, "data", {"full", "filtered", "random"});
  s.model = text(f, "model");
  s.optimizer = text(f, "optimizer");
  s.lr = f.number("lr", 0, 1e6);
  s.momentum = f.number("momentum", 0, 1);
  s.lr_scaling = one_of(f, "lr_scaling", {"none", "linear", "sqrt"});
  s.base_batch = f.small("base_batch", 1);
  s.global_batch = f.small("global_batch", 1);
  s.warmup_epochs = f.number("warmup_epochs", 0, 1e6);
  s.decay_epochs = f.ints("decay_epochs", 1);
  s.decay_factor = f.number("decay_factor", 0, 1e6);
  s.seed = static_cast<unsigned>(f.integer("seed", 0, kMaxSeed));
  s.policy = text(f, "policy");
  s.ranks = f.small("ranks", 1);
  s.threads = f.small("threads", 0);
  s.train_samples = f.integer("train_samples", 1);
  const std::vector<Fields> epochs = items(f, "epochs");
  for (std::size_t k = 0; k < epochs.size(); ++k) {
    const Fields& ef = epochs[k];
    StudyEpoch e;
    e.epoch = ef.small("epoch", 1);
    if (e.epoch != static_cast<int>(k) + 1) ef.fail(format("field 'epoch' must be %zu", k + 1));
    e.test_acc = ef.number("test_acc", 0, 1);
    e.test_loss = number_or_nan(ef, "test_loss", 0, 1e300);
    e.train_loss = number_or_nan(ef, "train_loss", 0, 1e300);
    e.lr = ef.number("lr", 0, 1e6);
    e.wall_s = ef.number("wall_s", 0, 1e9);
    s.epochs.push_back(e);
  }
  s.final_test_acc = f.number("final_test_acc", 0, 1);
  s.wall_s = f.number("wall_s", 0, 1e9);
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
    const std::string where = path + ":" + std::to_string(n);
    json j;
    try {
      j = json::parse(line);
    } catch (const json::exception& e) {
      throw InputError(where + ": not JSON: " + e.what());
    }
    runs.push_back(from_json(Fields(j, where)));
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
  const Fields rs(sum, summary_path);
  const Fields cfg(rs.need("config"), summary_path + ": config");
  StudyRun s;
  s.study = study;
  s.data = data;
  s.model = text(cfg, "model");
  s.optimizer = text(cfg, "optimizer");
  s.policy = text(cfg, "policy");
  s.lr = cfg.number("lr", 0, 1e6);
  s.global_batch = cfg.small("global_batch", 1);
  s.seed = static_cast<unsigned>(cfg.integer("seed", 0, kMaxSeed));
  s.ranks = cfg.small("world", 1);
  s.threads = cfg.small("threads", 0);
  s.train_samples = cfg.integer("samples_per_epoch", 1);
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
  const bool subset = !cfg.need("train_subset").is_null();
  if (subset != (data != "full"))
    throw InputError(summary_path + ": data '" + data + "' but the run " +
                     (subset ? "trained on --train-subset" : "had no --train-subset"));

  optim::ScheduleConfig sched{s.lr,           optim::parse_scaling(s.lr_scaling),
                              s.base_batch,   s.warmup_epochs,
                              s.decay_epochs, s.decay_factor};
  std::map<int, double> lr_at;  // epoch -> rank 0's lr at its start, from the metrics
  std::ifstream in(metrics_path);
  if (!in) throw InputError(metrics_path + ": cannot open");
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    const std::string where = metrics_path + ":" + std::to_string(n);
    json row;
    try {
      row = json::parse(line);
    } catch (const json::exception& e) {
      throw InputError(where + ": not JSON: " + e.what());
    }
    const Fields rm(row, where);
    if (rm.integer("rank", 0) == 0) lr_at[rm.small("epoch", 1)] = rm.number("lr", 0, 1e6);
  }
  for (const Fields& ef : items(rs, "epochs")) {
    StudyEpoch e;
    e.epoch = ef.small("epoch", 1);
    e.test_acc = ef.number("test_acc", 0, 1);
    e.test_loss = number_or_nan(ef, "test_loss", 0, 1e300);
    e.train_loss = number_or_nan(ef, "train_loss", 0, 1e300);
    e.wall_s = ef.number("wall_s", 0, 1e9);
    const auto it = lr_at.find(e.epoch);
    if (it == lr_at.end())
      throw InputError(metrics_path + format(": no row of rank 0 for epoch %d", e.epoch));
    e.lr = it->second;
    const double want = optim::learning_rate(sched, s.global_batch, e.epoch - 1);
    if (std::fabs(e.lr - want) > 1e-6 * want)
      throw InputError(metrics_path + format(": epoch %d started at lr %g, but the schedule of "
                                             "the arguments gives %g (are they the job's?)",
                                             e.epoch, e.lr, want));
    s.epochs.push_back(e);
  }
  s.final_test_acc = rs.number("test_acc", 0, 1);
  s.wall_s = wall_s;
  const json j = to_json(s);
  from_json(Fields(j, "the new record"));  // what read_study would refuse is not written
  return j.dump();
}

}  // namespace dbs::lab
