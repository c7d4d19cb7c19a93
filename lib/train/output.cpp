// What rank 0 shows and writes: the run header, one table row per epoch, the progress bar, the
// JSON summary.
#include <cmath>
#include <cstdio>
#include <sstream>

#include "lib/common/atomic_file.h"
#include "lib/common/format.h"
#include "lib/train/stop.h"
#include "lib/train/trainer.h"

namespace dbs::train {
namespace {

std::string joined(const std::vector<int>& v) {
  std::string out;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (i > 0) out += ',';
    out += std::to_string(v[i]);
  }
  return out;
}

std::string joined(const std::vector<double>& v) {
  std::string out;
  char buf[32];
  for (std::size_t i = 0; i < v.size(); ++i) {
    std::snprintf(buf, sizeof buf, "%.0f", v[i]);
    if (i > 0) out += ',';
    out += buf;
  }
  return out;
}

nlohmann::json epoch_json(const EpochResult& r) {
  nlohmann::json j = {
      {"epoch", r.epoch + 1},       {"wall_s", r.wall_s},         {"images_per_s", r.images_per_s},
      {"ideal_s", r.ideal_s},       {"efficiency", r.efficiency}, {"train_loss", r.train_loss},
      {"test_loss", r.test_loss},   {"test_acc", r.test_acc},     {"batch", r.batch},
      {"throughput", r.throughput}, {"replans", r.replans}};
  // What an operator needs to tell a bad split from slow ranks: the fraction of the epoch each
  // rank worked, and the epoch at the best split for the speeds they had (absent for the epochs
  // a resumed run read from its checkpoint, which does not keep them).
  if (!r.busy.empty()) {
    j["busy"] = r.busy;
    j["busy_ideal_s"] = r.busy_ideal_s;
  }
  if (r.averages > 0) j["averages"] = r.averages;
  if (r.control) j["control"] = trace::to_json(*r.control);
  return j;
}

}  // namespace

nlohmann::json Trainer::config_json() const {
  const Config& c = config_;
  nlohmann::json dist = nlohmann::json::array();
  for (const auto& d : c.disturbances) dist.push_back(to_string(d));
  nlohmann::json config = trace::run_config(settings_of(c, train_.n), comm_.size(),
                                            {{"model", c.model},
                                             {"params", model_->param_count()},
                                             {"hosts", hosts_},
                                             {"threads", c.threads},
                                             {"epochs", c.epochs},
                                             {"optimizer", c.optimizer},
                                             {"lr", c.schedule.base_lr},
                                             {"seed", c.seed},
                                             {"test_samples", test_.n},
                                             {"allreduce", c.allreduce},
                                             {"wait", c.wait},
                                             {"waiting", waiting_},
                                             {"update", c.update},
                                             {"overlap", overlap_},
                                             {"train_subset", subset_},
                                             {"disturb", dist}});
  if (c.average_every > 0) config["average_optimizer"] = c.average_optimizer;
  if (!c.synthetic.is_null()) config["synthetic"] = c.synthetic;
  return config;
}

void Trainer::print_header() const {
  const Config& c = config_;
  const std::string threads = c.threads > 0 ? std::to_string(c.threads) : "all";
  std::string averaging;
  if (c.average_every > 0)
    averaging =
        ", models averaged every " + std::to_string(c.average_every) + " step(s)" +
        (c.average_after_epochs > 0 ? " from epoch " + std::to_string(c.average_after_epochs + 1)
                                    : std::string()) +
        " (optimizer state " + c.average_optimizer + ")";
  std::printf(
      "dbs: %s (%zu params), %d rank(s) x %s thread(s), global batch %d, %s lr %g, "
      "policy %s%s, %zu train / %zu test samples\n",
      c.model.c_str(), model_->param_count(), comm_.size(), threads.c_str(), c.global_batch,
      c.optimizer.c_str(), c.schedule.base_lr, to_string(c.policy).c_str(), averaging.c_str(),
      train_.n, test_.n);
  std::printf("%5s %8s %8s %6s %8s %10s %9s %8s  %-16s %s\n", "epoch", "wall_s", "ideal_s", "eff",
              "img/s", "train_loss", "test_loss", "test_acc", "batch/rank", "img/s/rank");
  std::fflush(stdout);
}

void Trainer::print_epoch(const EpochResult& r) const {
  std::vector<std::string> notes;
  if (r.averages > 0) notes.push_back(std::to_string(r.averages) + " averages");
  if (r.replans > 0) notes.push_back(std::to_string(r.replans) + " re-plans");
  std::string note;
  for (const std::string& n : notes) note += (note.empty() ? "  (" : ", ") + n;
  if (!note.empty()) note += ")";
  // A model without losses (the emulated one: nothing is evaluated) shows "-" there.
  const auto loss = [](double v) { return std::isfinite(v) ? format("%.4f", v) : "-"; };
  const std::string acc = std::isfinite(r.test_acc) ? format("%.2f%%", 100.0 * r.test_acc) : "-";
  std::printf("%5lld %8.2f %8.2f %5.1f%% %8.0f %10s %9s %8s  %-16s %s%s\n",
              static_cast<long long>(r.epoch + 1), r.wall_s, r.ideal_s, 100.0 * r.efficiency,
              r.images_per_s, loss(r.train_loss).c_str(), loss(r.test_loss).c_str(), acc.c_str(),
              joined(r.batch).c_str(), joined(r.throughput).c_str(), note.c_str());
  std::fflush(stdout);
}

void Trainer::write_summary(const RunResult& result) const {
  nlohmann::json epochs = nlohmann::json::array();
  for (const auto& r : result.epochs) epochs.push_back(epoch_json(r));
  nlohmann::json j = {{"config", config_json()},     {"epochs", epochs},
                      {"test_acc", result.test_acc}, {"test_loss", result.test_loss},
                      {"param_l2", result.param_l2}, {"param_sum", result.param_sum}};
  if (result.stop_signal != 0)
    j["stopped"] = {{"signal", signal_name(result.stop_signal)},
                    {"epoch", result.stop_epoch},
                    {"step", result.stop_step}};
  write_file_atomic(config_.summary_path, j.dump(2) + "\n");
}

detail::Progress::Progress(bool enabled, std::int64_t epoch, std::int64_t steps)
    : enabled_(enabled), epoch_(epoch), steps_(steps) {}

void detail::Progress::update(std::int64_t step, double images_per_s) {
  if (!enabled_) return;
  const double frac = static_cast<double>(step) / static_cast<double>(steps_);
  if (step != steps_ && frac - last_ < 0.01) return;
  last_ = frac;
  constexpr int kWidth = 30;
  const int filled = static_cast<int>(frac * kWidth);
  std::printf("\r epoch %lld [%.*s%*s] %3.0f%% %lld/%lld steps %6.0f img/s",
              static_cast<long long>(epoch_ + 1), filled, "##############################",
              kWidth - filled, "", 100.0 * frac, static_cast<long long>(step),
              static_cast<long long>(steps_), images_per_s);
  std::fflush(stdout);
}

detail::Progress::~Progress() {
  if (enabled_) std::printf("\r%*s\r", 100, "");
}

}  // namespace dbs::train
