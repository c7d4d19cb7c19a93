#include "scheduler/serve/job.h"

#include <algorithm>
#include <numeric>

#include "lib/common/error.h"
#include "lib/common/fields.h"
#include "lib/common/format.h"
#include "lib/policy/ideal.h"
#include "lib/proto/checks.h"
#include "lib/proto/codec.h"
#include "lib/proto/protocol.h"
#include "lib/trace/trace.h"

namespace dbs::scheduler {
namespace {

using nlohmann::json;

std::string e1(std::int64_t epoch) {
  return std::to_string(epoch + 1);
}

// "; no report from rank 1 within 30 s: planned from its last report"
std::string missing_note(const std::vector<int>& missing, double timeout_s) {
  std::string ranks;
  for (std::size_t i = 0; i < missing.size() && i < 8; ++i)
    ranks += (i > 0 ? ", " : "") + std::to_string(missing[i]);
  if (missing.size() > 8) ranks += " and " + std::to_string(missing.size() - 8) + " more";
  const bool one = missing.size() == 1;
  return std::string("; no report from rank") + (one ? " " : "s ") + ranks + " within " +
         format_seconds(timeout_s) + ": planned from " + (one ? "its" : "their") + " last report";
}

}  // namespace

Job::Job(std::string id, int world, Settings config)
    : id_(std::move(id)),
      world_(world),
      config_(std::move(config)),
      policy_(policy::make_policy(config_, world)),
      initial_(policy_->initial()),
      plan_(initial_),
      pending_(static_cast<std::size_t>(world)),
      last_(static_cast<std::size_t>(world)),
      have_(static_cast<std::size_t>(world), 0),
      rank_info_(static_cast<std::size_t>(world)) {
  for (auto& r : last_) r.epoch = -1;
}

std::size_t Job::history_kept() const {
  return std::clamp(kHistoryCells / static_cast<std::size_t>(world_), kHistoryMin, kHistory);
}

Job::Accepted Job::add(const Report& r) {
  if (r.epoch < plan_.epoch - 1)
    throw proto::ProtocolError(proto::ErrorCode::state, "report for epoch " + e1(r.epoch) +
                                                            ", but job '" + id_ + "' is at epoch " +
                                                            e1(plan_.epoch));
  if (r.epoch == plan_.epoch - 1) return Accepted::duplicate;
  if (r.epoch > plan_.epoch) {  // the agents ran epochs without us: follow them
    plan_.epoch = r.epoch;
    std::fill(have_.begin(), have_.end(), 0);
    received_ = 0;
  }
  const auto i = static_cast<std::size_t>(r.rank);
  if (have_[i]) return Accepted::pending;  // the first report of a rank counts
  have_[i] = 1;
  pending_[i] = r;
  ++received_;
  if (received_ == world_) return Accepted::complete;
  return received_ == 1 ? Accepted::first : Accepted::pending;
}

EpochOutcome Job::plan(double timeout_s) {
  EpochOutcome o;
  o.epoch = plan_.epoch;
  std::vector<Report> all(static_cast<std::size_t>(world_));
  for (int r = 0; r < world_; ++r) {
    const auto i = static_cast<std::size_t>(r);
    if (have_[i]) {
      all[i] = pending_[i];
      o.reports.push_back(pending_[i]);
      continue;
    }
    o.missing.push_back(r);
    Report stand_in = last_[i].epoch >= 0 ? last_[i] : Report{};
    if (last_[i].epoch < 0) stand_in.batch = plan_.batch[i];
    stand_in.rank = r;
    stand_in.epoch = plan_.epoch;
    all[i] = stand_in;
  }
  // Plan from what the ranks ran: it differs from our plan after epochs on their own policy.
  Plan current = plan_;
  if (o.missing.empty()) {
    std::vector<int> ran(static_cast<std::size_t>(world_));
    std::int64_t sum = 0;
    for (const auto& r : all) {
      ran[static_cast<std::size_t>(r.rank)] = r.batch;
      sum += r.batch;
    }
    if (sum == config_.global_batch && ran != current.batch) {
      current.batch = ran;
      current.offset = offsets_of(ran);
    }
  }
  try {
    o.plan = policy_->next(current, all);
    if (!o.missing.empty()) o.plan.reason += missing_note(o.missing, timeout_s);
    const std::string refused = proto::plan_refusal(o.plan, plan_.epoch + 1, world_, config_);
    if (!refused.empty()) throw CheckError("the policy made a plan agents refuse: " + refused);
  } catch (const Error& e) {  // the policy left its state as it was
    o.plan = plan_;
    o.plan.epoch = plan_.epoch + 1;
    o.plan.changed = false;
    o.plan.reason = std::string("kept: ") + e.what();
    if (!o.missing.empty()) o.plan.reason += missing_note(o.missing, timeout_s);
  }
  o.policy_state = policy_->state();
  return o;
}

void Job::commit(const EpochOutcome& o) {
  if (!o.policy_state.empty()) policy_->set_state(o.policy_state);
  EpochHistory h;
  h.epoch = o.epoch;
  h.batch.assign(static_cast<std::size_t>(world_), 0);
  h.throughput.assign(static_cast<std::size_t>(world_), 0.0);
  double samples = 0, slowest = 0;
  for (const auto& r : o.reports) {
    const auto i = static_cast<std::size_t>(r.rank);
    last_[i] = r;
    h.batch[i] = r.batch;
    h.throughput[i] = r.throughput();
    samples += static_cast<double>(r.samples);
    slowest = std::max(slowest, r.compute_s + r.comm_s);
  }
  const double ideal = policy::ideal_time(h.throughput, samples);
  if (o.missing.empty() && ideal > 0 && slowest > 0) h.efficiency = ideal / slowest;
  h.measured_s = slowest;
  ran_ = plan_;
  ran_.epoch = o.epoch;
  if (o.missing.empty()) {  // what the ranks ran, as Job::plan plans from it
    std::vector<int> batch(static_cast<std::size_t>(world_));
    for (const auto& r : o.reports) batch[static_cast<std::size_t>(r.rank)] = r.batch;
    if (std::accumulate(batch.begin(), batch.end(), std::int64_t{0}) == config_.global_batch &&
        batch != ran_.batch) {
      ran_.batch = batch;
      ran_.offset = offsets_of(batch);
    }
  }
  const std::size_t kept = history_kept();
  if (history_.size() >= kept)
    history_.erase(history_.begin(),
                   history_.begin() + static_cast<std::ptrdiff_t>(history_.size() - kept + 1));
  history_.push_back(std::move(h));
  reports_ += static_cast<std::int64_t>(o.reports.size());
  ++plans_;
  changes_ += o.plan.changed ? 1 : 0;
  timeouts_ += o.missing.empty() ? 0 : 1;
  plan_ = o.plan;
  std::fill(have_.begin(), have_.end(), 0);
  received_ = 0;
}

json outcome_json(const std::string& job, const EpochOutcome& o,
                  const std::vector<RankInfo>& ranks) {
  json reports = json::array();
  for (const auto& r : o.reports) {
    json j = policy::to_json(r);
    const RankInfo& info = ranks[static_cast<std::size_t>(r.rank)];
    j["host"] = info.host;
    if (!info.waiting.empty()) j["waiting"] = info.waiting;
    reports.push_back(std::move(j));
  }
  return {{"type", "epoch"},        {"job", job},           {"epoch", o.epoch + 1},
          {"reports", reports},     {"missing", o.missing}, {"plan", policy::to_json(o.plan)},
          {"state", o.policy_state}};
}

EpochOutcome outcome_from_json(const json& j, int world) {
  const Fields f(j, "epoch record");
  EpochOutcome o;
  o.epoch = f.integer("epoch", 1) - 1;
  const json& reports = f.need("reports");
  if (!reports.is_array()) f.fail("field 'reports' must be an array");
  for (const auto& r : reports)
    o.reports.push_back(policy::report_from_json(Fields(r, "epoch record: report")));
  for (const auto& r : o.reports)
    if (r.rank >= world) f.fail("report of rank " + std::to_string(r.rank));
  o.missing = f.ints("missing", 0, world - 1);
  o.plan = policy::plan_from_json(f.object("plan"));
  if (o.plan.world() != world) f.fail("plan of " + std::to_string(o.plan.world()) + " ranks");
  o.policy_state = f.numbers("state");
  return o;
}

std::string trace_lines(const EpochOutcome& o, const std::vector<RankInfo>& ranks) {
  std::string out;
  double samples = 0, wall_s = 0;
  std::vector<double> throughput;
  for (const auto& r : o.reports) {
    out += trace::rank_record(r, ranks[static_cast<std::size_t>(r.rank)].host).dump() + '\n';
    samples += static_cast<double>(r.samples);
    throughput.push_back(r.throughput());
    wall_s = std::max(wall_s, r.compute_s + r.comm_s);
  }
  json eval = trace::eval_record(o.epoch, wall_s, samples, throughput, 0);
  if (!o.missing.empty()) eval["missing"] = o.missing;
  out += eval.dump() + '\n';
  out += trace::plan_record(o.plan, 0, "daemon").dump() + '\n';
  return out;
}

}  // namespace dbs::scheduler
