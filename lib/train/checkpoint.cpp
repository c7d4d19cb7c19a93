// Checkpoint file DIR/checkpoint.bin, rewritten atomically after every epoch and when a signal
// stops the run:
//   "DBSCKPT\0" | u32 version | u64 n + n bytes of JSON (identity of the run, world size, next
//   epoch, plan, policy state, finished epochs, the time written, and for a run stopped inside
//   an epoch "interrupted": the steps done and the figures so far) | u64 count + count float32
//   parameters | u64 n + n bytes of optimizer state. Random state needs no saving: shuffles and
//   dropout masks are pure functions of (seed, epoch, sample).
// Under model averaging with each rank's own optimizer state (Config::average_optimizer local)
// the ranks' states differ: the optimizer section holds every rank's, in rank order and of equal
// length, and the header says how many ("optimizer_ranks"). A run that averages the same way on
// as many ranks resumes each rank's own; any other run resumes rank 0's on every rank. The
// parameters are the same on every rank: a checkpoint follows an average.
// DIR may be node-local: the first rank on each host writes its host's copy. On resume every
// rank reads its own copy (if any), the ranks compare what they found, and the lowest rank
// holding a copy sends it to all, so a node without one (a new node, a requeue onto other
// nodes) resumes the same state. Copies that differ stop the job before the first step.
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "lib/common/atomic_file.h"
#include "lib/common/error.h"
#include "lib/common/fields.h"
#include "lib/common/log.h"
#include "lib/common/read_file.h"
#include "lib/policy/plan.h"
#include "lib/trace/trace.h"
#include "lib/train/trainer.h"

namespace dbs::train {
namespace {

using detail::Interrupted;

constexpr char kMagic[8] = {'D', 'B', 'S', 'C', 'K', 'P', 'T', 0};
// Versions read: 1 (the world size inside the identity), 2 (no "interrupted", no "written"), 3
// (one optimizer state) and 4, the one written.
constexpr std::uint32_t kVersion = 4;

std::string path_of(const Config& c) {
  return c.checkpoint_dir + "/checkpoint.bin";
}

// What makes two runs the same run: a checkpoint resumes only its own.
nlohmann::json identity(const Config& c, std::size_t train_samples, const nlohmann::json& subset) {
  nlohmann::json id = {{"model", c.model},
                       {"global_batch", c.global_batch},
                       {"seed", c.seed},
                       {"optimizer", c.optimizer},
                       {"train_samples", train_samples},
                       {"policy", to_string(c.policy)}};
  // Which samples: a --train-subset of the same size (the random control) is another run.
  if (!subset.is_null()) id["train_subset_hash"] = subset.at("hash");
  // Another emulated cluster is another run; more epochs of it are not.
  if (!c.synthetic.is_null()) {
    id["synthetic"] = c.synthetic;
    id["synthetic"].erase("epochs");
    id["synthetic"].erase("comment");
  }
  return id;
}

nlohmann::json result_json(const EpochResult& r) {
  return {
      {"epoch", r.epoch},           {"wall_s", r.wall_s},         {"images_per_s", r.images_per_s},
      {"ideal_s", r.ideal_s},       {"efficiency", r.efficiency}, {"train_loss", r.train_loss},
      {"test_loss", r.test_loss},   {"test_acc", r.test_acc},     {"batch", r.batch},
      {"throughput", r.throughput}, {"replans", r.replans},       {"averages", r.averages}};
}

// A loss or accuracy: null where it was NaN (not evaluated, or diverged).
double figure(const nlohmann::json& v) {
  return v.is_null() ? std::numeric_limits<double>::quiet_NaN() : v.get<double>();
}

EpochResult result_from(const nlohmann::json& j) {
  EpochResult r;
  r.epoch = j.at("epoch");
  r.wall_s = j.at("wall_s");
  r.images_per_s = j.at("images_per_s");
  r.ideal_s = j.at("ideal_s");
  r.efficiency = j.at("efficiency");
  r.train_loss = figure(j.at("train_loss"));
  r.test_loss = figure(j.at("test_loss"));
  r.test_acc = figure(j.at("test_acc"));
  r.batch = j.at("batch").get<std::vector<int>>();
  r.throughput = j.at("throughput").get<std::vector<double>>();
  r.replans = j.at("replans");
  r.averages = j.value("averages", 0);
  return r;
}

nlohmann::json interrupted_json(const Interrupted& at) {
  nlohmann::json ranks = nlohmann::json::array();
  for (const auto& r : at.reports) ranks.push_back({r.samples, r.compute_s, r.comm_s});
  return {{"epoch", at.epoch},
          {"steps_done", at.steps_done},
          {"loss_sum", at.stats.loss_sum},
          {"samples", at.stats.samples},
          {"replans", at.stats.replans},
          {"wall_s", at.stats.wall_s},
          {"averages", at.stats.averages},
          {"ranks", ranks}};
}

// This rank's part of an interrupted epoch; its own figures only when the world is the same.
Interrupted interrupted_from(const nlohmann::json& j, int rank, int world) {
  Interrupted at;
  at.epoch = j.at("epoch");
  at.steps_done = j.at("steps_done");
  at.stats.loss_sum = j.at("loss_sum");
  at.stats.samples = j.at("samples");
  at.stats.replans = j.at("replans");
  at.stats.wall_s = j.at("wall_s");
  at.stats.averages = j.value("averages", 0);
  const auto& ranks = j.at("ranks");
  if (static_cast<int>(ranks.size()) == world) {
    const auto& mine = ranks.at(static_cast<std::size_t>(rank));
    at.stats.report.samples = mine.at(0);
    at.stats.report.compute_s = mine.at(1);
    at.stats.report.comm_s = mine.at(2);
  }
  return at;
}

template <typename T>
void put(std::string& out, T v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof v);
}

class Cursor {
 public:
  Cursor(const std::string& path, const std::string& bytes) : path_(path), bytes_(bytes) {}
  const char* take(std::size_t n, const char* what) {
    if (bytes_.size() - pos_ < n)
      throw InputError(path_ + ": truncated at byte " + std::to_string(bytes_.size()) +
                       " while reading " + what);
    const char* p = bytes_.data() + pos_;
    pos_ += n;
    return p;
  }
  template <typename T>
  T get(const char* what) {
    T v;
    std::memcpy(&v, take(sizeof v, what), sizeof v);
    return v;
  }

 private:
  const std::string& path_;
  const std::string& bytes_;
  std::size_t pos_ = 0;
};

struct Parsed {
  nlohmann::json meta;
  int world = 0;  // ranks of the run that wrote it
  std::string_view params, optimizer;
};

Parsed parse(const std::string& path, const std::string& bytes) {
  Cursor c(path, bytes);
  if (std::memcmp(c.take(sizeof kMagic, "magic"), kMagic, sizeof kMagic) != 0)
    throw InputError(path + ": not a dbs checkpoint (wrong magic)");
  const auto version = c.get<std::uint32_t>("version");
  if (version < 1 || version > kVersion)
    throw InputError(path + ": checkpoint version " + std::to_string(version) + " not supported");
  const auto js_len = c.get<std::uint64_t>("header length");
  Parsed p;
  try {
    p.meta = nlohmann::json::parse(std::string(c.take(js_len, "header"), js_len));
    nlohmann::json& id = p.meta.at("identity");
    if (version == 1) {
      p.world = id.at("world").get<int>();
      id.erase("world");
    } else {
      p.world = p.meta.at("world").get<int>();
    }
    p.meta.at("next_epoch").get<std::int64_t>();
  } catch (const nlohmann::json::exception& e) {
    throw InputError(path + ": bad checkpoint header: " + e.what());
  }
  const auto count = c.get<std::uint64_t>("parameter count");
  p.params = {c.take(count * sizeof(float), "parameters"), count * sizeof(float)};
  const auto opt_len = c.get<std::uint64_t>("optimizer state length");
  p.optimizer = {c.take(opt_len, "optimizer state"), opt_len};
  return p;
}

// FNV-1a over what is resumed: the header without the finished epochs' results (each rank
// records its own wall times there) and the time written, and the parameter and optimizer bytes.
std::uint64_t state_digest(const Parsed& p) {
  std::uint64_t h = 1469598103934665603ULL;
  auto mix = [&h](std::string_view bytes) {
    for (const char b : bytes) h = (h ^ static_cast<unsigned char>(b)) * 1099511628211ULL;
  };
  nlohmann::json meta = p.meta;
  meta.erase("results");
  meta.erase("written");
  mix(meta.dump());
  mix(p.params);
  mix(p.optimizer);
  return h;
}

// What one rank found in its checkpoint folder; allgathered before anything is restored.
struct Found {
  std::int64_t next_epoch = -1;  // -1: no checkpoint
  std::uint64_t digest = 0;      // state_digest
  std::uint64_t size = 0;        // bytes of the file
};

std::string describe(const Found& f) {
  if (f.next_epoch < 0) return "no checkpoint";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(f.digest));
  return "a checkpoint after epoch " + std::to_string(f.next_epoch) + " (state digest " + buf + ")";
}

// The rank whose copy everyone resumes (-1: none has one). Throws ConfigError naming every rank
// and what it holds when two copies differ.
int choose_source(const std::string& dir, std::span<const std::string> hosts,
                  const std::vector<Found>& all) {
  int source = -1;
  bool differ = false;
  for (int r = 0; r < static_cast<int>(all.size()); ++r) {
    if (all[r].next_epoch < 0) continue;
    if (source < 0) {
      source = r;
    } else if (all[r].next_epoch != all[source].next_epoch || all[r].digest != all[source].digest) {
      differ = true;
    }
  }
  if (!differ) return source;
  std::string msg = "--resume: the ranks hold different checkpoints in " + dir + ":";
  for (int r = 0; r < static_cast<int>(all.size()); ++r)
    msg += " rank " + std::to_string(r) + " (" + hosts[r] + ") has " + describe(all[r]) + ";";
  throw ConfigError(msg + " remove the stale copies (or empty the folders to start afresh)");
}

// Every rank's bytes (of equal length on every rank) in rank order (a collective).
std::string gather_equal(comm::Communicator& comm, const std::string& mine, const char* what) {
  const std::uint64_t size = mine.size();
  std::vector<std::uint64_t> sizes(static_cast<std::size_t>(comm.size()));
  comm.allgather_bytes(&size, sizeof size, sizes.data());
  for (int r = 0; r < comm.size(); ++r)
    if (sizes[static_cast<std::size_t>(r)] != size)
      throw CheckError(std::string(what) + ": rank " + std::to_string(r) + " has " +
                       std::to_string(sizes[static_cast<std::size_t>(r)]) + " bytes, rank " +
                       std::to_string(comm.rank()) + " " + std::to_string(size));
  std::string all(size * sizes.size(), '\0');
  comm.allgather_bytes(mine.data(), size, all.data());
  return all;
}

// This rank's optimizer state in the checkpoint: its own where the checkpoint holds every rank's
// and this run keeps them apart on as many ranks, else the one state, or rank 0's.
std::string optimizer_state(const Parsed& p, const std::string& from, bool own_states, int rank,
                            int world) {
  std::int64_t ranks = 1;
  try {
    ranks = p.meta.value("optimizer_ranks", std::int64_t{1});
  } catch (const nlohmann::json::exception& e) {
    throw InputError(from + ": bad \"optimizer_ranks\" in the checkpoint header: " + e.what());
  }
  if (ranks < 1 || p.optimizer.size() % static_cast<std::size_t>(ranks) != 0)
    throw InputError(from + ": " + std::to_string(p.optimizer.size()) +
                     " bytes of optimizer state do not split into " + std::to_string(ranks) +
                     " ranks' states");
  const std::size_t len = p.optimizer.size() / static_cast<std::size_t>(ranks);
  if (ranks == 1) return std::string(p.optimizer);
  const bool own = own_states && ranks == world;
  if (!own && rank == 0)
    log::info("--resume: the checkpoint holds the optimizer state of each of " +
              std::to_string(ranks) + " ranks; every rank continues from rank 0's");
  const std::size_t at = own ? static_cast<std::size_t>(rank) * len : 0;
  return std::string(p.optimizer.substr(at, len));
}

}  // namespace

bool Trainer::own_optimizer_states() const {
  return local_ && !local_->averages_state() && comm_.size() > 1;
}

void Trainer::save_checkpoint(const Interrupted* at) {
  exchange_->gather_state();
  std::ostringstream opt;
  optimizer_->save(opt);
  std::string ob = opt.str();
  if (own_optimizer_states()) ob = gather_equal(comm_, ob, "optimizer state for the checkpoint");
  nlohmann::json results = nlohmann::json::array();
  for (const auto& r : results_) results.push_back(result_json(r));
  // One writer per host: the first rank on it (ranks of a host share its disk).
  const int rank = comm_.rank();
  for (int r = 0; r < rank; ++r)
    if (hosts_[r] == hosts_[rank]) return;
  nlohmann::json meta = {{"identity", identity(config_, train_.n, subset_)},
                         {"world", comm_.size()},
                         {"next_epoch", results_.empty() ? 0 : results_.back().epoch + 1},
                         {"plan", policy::to_json(planner_->plan())},
                         {"policy_state", planner_->state()},
                         {"results", results},
                         {"written", log::timestamp()}};
  if (at != nullptr) {
    meta["next_epoch"] = at->epoch;
    meta["interrupted"] = interrupted_json(*at);
  }
  if (own_optimizer_states()) meta["optimizer_ranks"] = comm_.size();
  const std::string js = meta.dump();
  const auto params = model_->params();
  std::string out(kMagic, sizeof kMagic);
  put(out, kVersion);
  put<std::uint64_t>(out, js.size());
  out += js;
  put<std::uint64_t>(out, params.size());
  out.append(reinterpret_cast<const char*>(params.data()), params.size_bytes());
  put<std::uint64_t>(out, ob.size());
  out += ob;
  std::filesystem::create_directories(config_.checkpoint_dir);
  write_file_atomic(path_of(config_), out);
}

Trainer::Resumed Trainer::load_checkpoint() {
  const std::string path = path_of(config_);
  const int world = comm_.size(), rank = comm_.rank();
  std::string bytes;
  Found mine;
  if (std::ifstream f{path, std::ios::binary}) {
    bytes = read_rest(f);
    const Parsed p = parse(path, bytes);
    mine.next_epoch = p.meta.at("next_epoch").get<std::int64_t>();
    mine.digest = state_digest(p);
    mine.size = bytes.size();
  }
  std::vector<Found> all(static_cast<std::size_t>(world));
  comm_.allgather_bytes(&mine, sizeof mine, all.data());
  const int source = choose_source(config_.checkpoint_dir, hosts_, all);
  if (source < 0) {
    if (rank == 0)
      log::info("--resume: no checkpoint in " + config_.checkpoint_dir +
                " on any rank: starting afresh");
    return {0, world};
  }
  if (mine.next_epoch < 0)
    log::warn("--resume: no checkpoint in " + config_.checkpoint_dir + " on " + hosts_[rank] +
              ": resuming from the copy of rank " + std::to_string(source) + " (" + hosts_[source] +
              ")");
  bytes.resize(all[source].size);
  comm_.broadcast_bytes(bytes.data(), bytes.size(), source);
  const std::string from = path + " of rank " + std::to_string(source);
  Parsed p = parse(from, bytes);
  const nlohmann::json want = identity(config_, train_.n, subset_);
  if (p.meta.at("identity") != want)
    throw ConfigError(from + ": checkpoint is of another run: it has " +
                      p.meta.at("identity").dump() + ", this run is " + want.dump());
  const auto params = model_->params();
  if (p.params.size() != params.size_bytes())
    throw InputError(from + ": " + std::to_string(p.params.size() / sizeof(float)) +
                     " parameters, the model has " + std::to_string(params.size()));
  std::memcpy(params.data(), p.params.data(), params.size_bytes());
  const auto next = p.meta.at("next_epoch").get<std::int64_t>();
  std::istringstream opt{optimizer_state(p, from, own_optimizer_states(), rank, world)};
  optimizer_->load(opt);
  if (p.world == world) {
    planner_->set_state(
        policy::plan_from_json(Fields(p.meta.at("plan"), from + ": checkpoint plan")),
        p.meta.at("policy_state").get<std::vector<double>>());
  } else {
    // The plan and the policy's per-rank estimates are of the old ranks: start them afresh.
    Plan plan = planner_->plan();
    plan.epoch = next;
    plan.changed = true;
    plan.reason = "re-made for " + std::to_string(world) +
                  " ranks on resume from a checkpoint of " + std::to_string(p.world);
    planner_->set_state(plan, {});
    if (rank == 0)
      log::info("--resume: checkpoint of " + std::to_string(p.world) + " ranks resumed on " +
                std::to_string(world) +
                ": parameters and optimizer state carried over, plan re-made");
  }
  results_.clear();
  for (const auto& r : p.meta.at("results")) results_.push_back(result_from(r));
  std::string where = "epoch " + std::to_string(next + 1);
  if (const auto it = p.meta.find("interrupted"); it != p.meta.end()) {
    try {
      resume_at_ = interrupted_from(*it, rank, world);
    } catch (const nlohmann::json::exception& e) {
      throw InputError(from + ": bad \"interrupted\" in the checkpoint header: " + e.what());
    }
    const std::int64_t steps =
        (static_cast<std::int64_t>(train_.n) + config_.global_batch - 1) / config_.global_batch;
    where +=
        ", step " + std::to_string(resume_at_->steps_done + 1) + " of " + std::to_string(steps);
  }
  if (rank == 0) {
    const auto written = p.meta.find("written");
    log::info("resumed from " + where + " (checkpoint " + config_.checkpoint_dir + ", written " +
              (written != p.meta.end() ? written->get<std::string>()
                                       : std::string("at a time not recorded")) +
              ")");
  }
  return {next, p.world};
}

}  // namespace dbs::train
