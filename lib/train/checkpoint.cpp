// Checkpoint file DIR/checkpoint.bin, rewritten atomically after every epoch:
//   "DBSCKPT\0" | u32 version | u64 n + n bytes of JSON (identity of the run, next epoch, plan,
//   policy state, finished epochs) | u64 count + count float32 parameters | u64 n + n bytes of
//   optimizer state. Random state needs no saving: shuffles and dropout masks are pure
//   functions of (seed, epoch, sample).
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "lib/common/atomic_file.h"
#include "lib/common/error.h"
#include "lib/common/fields.h"
#include "lib/policy/plan.h"
#include "lib/trace/trace.h"
#include "lib/train/state.h"

namespace dbs::train::detail {
namespace {

constexpr char kMagic[8] = {'D', 'B', 'S', 'C', 'K', 'P', 'T', 0};
constexpr std::uint32_t kVersion = 1;

std::string path_of(const Config& c) { return c.checkpoint_dir + "/checkpoint.bin"; }

nlohmann::json identity(const State& st) {
  return {{"model", st.config.model},       {"world", st.comm.size()},
          {"global_batch", st.config.global_batch}, {"seed", st.config.seed},
          {"optimizer", st.config.optimizer}, {"train_samples", st.train.n},
          {"policy", st.config.policy}};
}

nlohmann::json result_json(const EpochResult& r) {
  return {{"epoch", r.epoch},         {"wall_s", r.wall_s},       {"images_per_s", r.images_per_s},
          {"ideal_s", r.ideal_s},     {"efficiency", r.efficiency}, {"train_loss", r.train_loss},
          {"test_loss", r.test_loss}, {"test_acc", r.test_acc},   {"batch", r.batch},
          {"throughput", r.throughput}, {"replans", r.replans}};
}

EpochResult result_from(const nlohmann::json& j) {
  EpochResult r;
  r.epoch = j.at("epoch");
  r.wall_s = j.at("wall_s");
  r.images_per_s = j.at("images_per_s");
  r.ideal_s = j.at("ideal_s");
  r.efficiency = j.at("efficiency");
  r.train_loss = j.at("train_loss");
  r.test_loss = j.at("test_loss");
  r.test_acc = j.at("test_acc");
  r.batch = j.at("batch").get<std::vector<int>>();
  r.throughput = j.at("throughput").get<std::vector<double>>();
  r.replans = j.at("replans");
  return r;
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

}  // namespace

void save_checkpoint(const State& st) {
  nlohmann::json results = nlohmann::json::array();
  for (const auto& r : st.results) results.push_back(result_json(r));
  const nlohmann::json meta = {{"identity", identity(st)},
                               {"next_epoch", st.results.empty() ? 0 : st.results.back().epoch + 1},
                               {"plan", policy::to_json(st.planner->plan())},
                               {"policy_state", st.planner->state()},
                               {"results", results}};
  const std::string js = meta.dump();
  std::ostringstream opt;
  st.optimizer->save(opt);
  const std::string ob = opt.str();
  const auto params = st.model->params();
  std::string out(kMagic, sizeof kMagic);
  put(out, kVersion);
  put<std::uint64_t>(out, js.size());
  out += js;
  put<std::uint64_t>(out, params.size());
  out.append(reinterpret_cast<const char*>(params.data()), params.size_bytes());
  put<std::uint64_t>(out, ob.size());
  out += ob;
  std::filesystem::create_directories(st.config.checkpoint_dir);
  write_file_atomic(path_of(st.config), out);
}

std::int64_t load_checkpoint(State& st) {
  const std::string path = path_of(st.config);
  std::ifstream f(path, std::ios::binary);
  if (!f) return 0;  // nothing to resume: start from scratch
  std::ostringstream buf;
  buf << f.rdbuf();
  const std::string bytes = buf.str();
  Cursor c(path, bytes);
  if (std::memcmp(c.take(sizeof kMagic, "magic"), kMagic, sizeof kMagic) != 0)
    throw InputError(path + ": not a dbs checkpoint (wrong magic)");
  const auto version = c.get<std::uint32_t>("version");
  if (version != kVersion)
    throw InputError(path + ": checkpoint version " + std::to_string(version) + " not supported");
  const auto js_len = c.get<std::uint64_t>("header length");
  nlohmann::json meta;
  try {
    meta = nlohmann::json::parse(std::string(c.take(js_len, "header"), js_len));
  } catch (const nlohmann::json::exception& e) {
    throw InputError(path + ": bad checkpoint header: " + e.what());
  }
  const nlohmann::json want = identity(st);
  if (meta.at("identity") != want)
    throw ConfigError(path + ": checkpoint is of another run: it has " + meta.at("identity").dump() +
                      ", this run is " + want.dump());
  const auto count = c.get<std::uint64_t>("parameter count");
  const auto params = st.model->params();
  if (count != params.size())
    throw InputError(path + ": " + std::to_string(count) + " parameters, the model has " +
                     std::to_string(params.size()));
  std::memcpy(params.data(), c.take(params.size_bytes(), "parameters"), params.size_bytes());
  const auto opt_len = c.get<std::uint64_t>("optimizer state length");
  std::istringstream opt(std::string(c.take(opt_len, "optimizer state"), opt_len));
  st.optimizer->load(opt);
  st.planner->set_state(policy::plan_from_json(Fields(meta.at("plan"), path + ": checkpoint plan")),
                        meta.at("policy_state").get<std::vector<double>>());
  st.results.clear();
  for (const auto& r : meta.at("results")) st.results.push_back(result_from(r));
  return meta.at("next_epoch").get<std::int64_t>();
}

}  // namespace dbs::train::detail
