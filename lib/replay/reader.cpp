// The trace reader: one pass over the lines, a small state machine over epochs.
//
// Words: `open` is the epoch whose records are being collected (its disturbance, re-plan and rank
// records come before its eval record, which closes it); `start` holds the step-0 plan records
// waiting for their epoch (the initial plan, or the plan written at the end of the previous one).
#include "lib/replay/reader.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <sstream>

#include "lib/common/error.h"
#include "lib/replay/fields.h"
#include "lib/trace/trace.h"

namespace dbs::replay {
namespace {

using detail::Fields;
using nlohmann::json;

constexpr std::int64_t kMaxInt = std::numeric_limits<int>::max();
constexpr std::int64_t kMaxCount = std::numeric_limits<std::int64_t>::max() / 4;
constexpr double kHuge = std::numeric_limits<double>::max();

Header parse_header(const json& j, const std::string& where) {
  const Fields h(j, where, "header");
  if (h.text("type") != "header") h.fail("the first line of a trace must be its header");
  if (const std::string f = h.text("format"); f != trace::kFormat) {
    h.fail("format is '" + f + "', not '" + trace::kFormat + "'");
  }
  const std::int64_t version = h.integer("version", 0, kMaxInt);
  if (version != trace::kVersion) {
    h.fail("unknown trace version " + std::to_string(version) + " (this dbs reads version " +
           std::to_string(trace::kVersion) + ")");
  }
  const Fields c(h.at("config"), where, "header config");
  Header out;
  out.world = static_cast<int>(c.integer("world", 1, kMaxInt));
  out.global_batch = static_cast<int>(c.integer("global_batch", 1, kMaxInt));
  out.train_samples = c.integer("train_samples", 1, kMaxCount);
  out.params = c.integer_or("params", 0, 0, kMaxCount);
  out.epochs = static_cast<int>(c.integer_or("epochs", 0, 0, kMaxInt));
  out.policy = c.text("policy");
  out.min_batch = static_cast<int>(c.integer_or("min_batch", 1, 1, kMaxInt));
  out.max_batch = static_cast<int>(c.integer_or("max_batch", 0, 0, kMaxInt));
  out.min_gain = c.number_or("min_gain", 0.02, 0, 1);
  out.rebalance_every = static_cast<int>(c.integer_or("rebalance_every", 0, 0, kMaxInt));
  out.config = h.at("config");
  return out;
}

class Reader {
 public:
  Reader(std::string name, const ReadOptions& options) : options_(options) {
    trace_.path = std::move(name);
  }

  void line(std::string_view text, int number, bool last_without_newline) {
    if (text.find_first_not_of(" \t\r") == std::string_view::npos) return;
    where_ = trace_.path + ":" + std::to_string(number);
    number_ = number;
    json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) {
      std::string why;
      try {
        [[maybe_unused]] const json again = json::parse(text);
      } catch (const json::exception& e) {
        why = detail::json_message(e);
      }
      if (last_without_newline && have_header_) {
        const std::string m = where_ + ": the last line is truncated (no newline at the end, " +
                              "not valid JSON): the run stopped while writing it";
        if (options_.strict) throw InputError(m);
        trace_.warnings.push_back(m + "; skipped");
        return;
      }
      throw InputError(where_ + ": not valid JSON: " + why);
    }
    if (!have_header_) {
      trace_.header = parse_header(j, where_);
      have_header_ = true;
      return;
    }
    const Fields r(j, where_, "record");
    const std::string type = r.text("type");
    if (type == "plan") {
      plan(j);
    } else if (type == "rank") {
      rank(j);
    } else if (type == "eval") {
      eval(j);
    } else if (type == "disturbance") {
      disturbance(j);
    } else if (type == "header") {
      r.fail("a second header: a trace holds one run");
    } else if (unknown_types_[type]++ == 0) {
      trace_.warnings.push_back(where_ + ": records of unknown type '" + type + "' are ignored");
    }
  }

  Trace finish() {
    if (!have_header_) throw InputError(trace_.path + ": empty trace (no header line)");
    if (open_) {
      trace_.warnings.push_back(trace_.path + ":" + std::to_string(open_line_) + ": epoch " +
                                std::to_string(open_->epoch + 1) +
                                " has no eval record (the run stopped during it): not replayed");
    }
    if (trace_.epochs.empty()) {
      throw InputError(trace_.path + ": no finished epoch to replay (no eval record)");
    }
    return std::move(trace_);
  }

 private:
  int world() const { return trace_.header.world; }

  // The epoch a record of (1-based) `epoch` belongs to, opened if needed.
  EpochRecords& epoch_for(const Fields& f, std::int64_t epoch) {
    const std::int64_t e = epoch - 1;
    if (open_ && open_->epoch == e) return *open_;
    if (open_) {
      f.fail("is for epoch " + std::to_string(epoch) + " but epoch " +
             std::to_string(open_->epoch + 1) + " (from line " + std::to_string(open_line_) +
             ") has no eval record yet");
    }
    if (trace_.epochs.empty() && e != 0) {
      f.fail("is for epoch " + std::to_string(epoch) + " but the trace has no epoch 1");
    }
    if (!trace_.epochs.empty() && e <= trace_.epochs.back().epoch) {
      f.fail("is for epoch " + std::to_string(epoch) + ", which finished at line " +
             std::to_string(trace_.epochs[static_cast<std::size_t>(e)].line) +
             " (a run resumed from an older checkpoint repeats epochs: keep one copy)");
    }
    if (!trace_.epochs.empty() && e != trace_.epochs.back().epoch + 1) {
      f.fail("is for epoch " + std::to_string(epoch) + " but the last finished epoch is " +
             std::to_string(trace_.epochs.back().epoch + 1));
    }
    const auto it = start_.find(e);
    if (it == start_.end()) {
      f.fail("epoch " + std::to_string(epoch) + " has no plan record (step 0) before it");
    }
    open_.emplace();
    open_->epoch = e;
    open_->plans.push_back(it->second);
    open_->reports.resize(static_cast<std::size_t>(world()));
    seen_.assign(static_cast<std::size_t>(world()), 0);
    start_.erase(it);
    open_line_ = number_;
    return *open_;
  }

  void plan(const json& j) {
    const Fields f(j, where_, "plan record");
    const std::int64_t epoch = f.integer("epoch", 1, kMaxCount);
    const std::int64_t step = f.integer("step", 0, kMaxCount);
    const int gb = static_cast<int>(f.integer("global_batch", 1, kMaxInt));
    const std::vector<int> batch = f.integers("batch", 0, gb);
    const std::vector<int> offset = f.integers("offset", 0, gb);
    const std::vector<double> v = f.numbers("throughput", 0, kHuge);
    f.number("predicted_epoch_s", 0, kHuge);
    f.number("ideal_epoch_s", 0, kHuge);
    f.boolean("changed");
    f.text("reason");
    const auto n = static_cast<std::size_t>(world());
    if (gb != trace_.header.global_batch) {
      f.fail("global batch " + std::to_string(gb) + " differs from the header's " +
             std::to_string(trace_.header.global_batch));
    }
    if (batch.size() != n || offset.size() != n || (!v.empty() && v.size() != n)) {
      f.fail("has " + std::to_string(batch.size()) + " batch sizes, " +
             std::to_string(offset.size()) + " offsets and " + std::to_string(v.size()) +
             " throughputs for " + std::to_string(n) + " ranks");
    }
    std::int64_t sum = 0;
    for (const int b : batch) sum += b;
    if (sum != gb) {
      f.fail("batch sizes sum to " + std::to_string(sum) + ", not the global batch " +
             std::to_string(gb));
    }
    PlanAt p;
    p.step = step;
    p.source = f.text_or("source", "");
    try {
      p.plan = trace::plan_from_record(j);
    } catch (const InputError& e) {
      f.fail(e.what());
    }
    if (p.plan.throughput.empty()) p.plan.throughput.assign(n, 0.0);
    if (step == 0) {
      const auto [it, fresh] = start_.emplace(epoch - 1, p);
      if (!fresh || (open_ && open_->epoch == epoch - 1) ||
          (!trace_.epochs.empty() && trace_.epochs.back().epoch >= epoch - 1)) {
        f.fail("a second plan for the start of epoch " + std::to_string(epoch));
      }
      return;
    }
    EpochRecords& e = epoch_for(f, epoch);
    if (step <= e.plans.back().step) {
      f.fail("re-plan at step " + std::to_string(step) + " does not follow the one at step " +
             std::to_string(e.plans.back().step));
    }
    e.plans.push_back(std::move(p));
  }

  void rank(const json& j) {
    const Fields f(j, where_, "rank record");
    const std::int64_t epoch = f.integer("epoch", 1, kMaxCount);
    const int r = static_cast<int>(f.integer("rank", 0, world() - 1));
    f.integer("batch", 0, kMaxInt);
    f.integer("samples", 0, kMaxCount);
    f.integer_or("steps", 0, 0, kMaxCount);
    f.number("compute_s", 0, kHuge);
    f.number("comm_s", 0, kHuge);
    f.number_or("step_rate_median", 0, 0, kHuge);
    EpochRecords& e = epoch_for(f, epoch);
    if (seen_[static_cast<std::size_t>(r)] != 0) {
      f.fail("a second record for rank " + std::to_string(r) + " in epoch " +
             std::to_string(epoch) + " (first at line " +
             std::to_string(seen_[static_cast<std::size_t>(r)]) + ")");
    }
    seen_[static_cast<std::size_t>(r)] = number_;
    try {
      e.reports[static_cast<std::size_t>(r)] = trace::report_from_record(j);
    } catch (const InputError& ex) {
      f.fail(ex.what());
    }
  }

  void eval(const json& j) {
    const Fields f(j, where_, "eval record");
    const std::int64_t epoch = f.integer("epoch", 1, kMaxCount);
    const double wall = f.number("wall_s", 0, kHuge);
    const int replans = static_cast<int>(f.integer_or("replans", 0, 0, kMaxInt));
    if (!open_ || open_->epoch != epoch - 1) {
      f.fail("epoch " + std::to_string(epoch) + " has no rank records before its eval record");
    }
    for (int r = 0; r < world(); ++r) {
      if (seen_[static_cast<std::size_t>(r)] == 0) {
        f.fail("epoch " + std::to_string(epoch) + " has no rank record for rank " +
               std::to_string(r));
      }
    }
    open_->wall_s = wall;
    open_->replans = replans;
    open_->line = number_;
    trace_.epochs.push_back(std::move(*open_));
    open_.reset();
  }

  void disturbance(const json& j) {
    const Fields f(j, where_, "disturbance record");
    const std::int64_t epoch = f.integer("epoch", 1, kMaxCount);
    Slowdown d;
    d.rank = static_cast<int>(f.integer("rank", 0, world() - 1));
    d.factor = f.number("factor", 1, kHuge);
    d.from = f.number("from", 1, kHuge);
    d.to = f.number("to", -kHuge, kHuge);
    d.mode = f.text_or("mode", "sleep");
    if (d.to >= 0 && d.to <= d.from) f.fail("'to' is not after 'from'");
    EpochRecords& e = epoch_for(f, epoch);
    for (const Slowdown& x : e.disturbances) {
      if (x == d) return;  // written again by a resumed run
    }
    e.disturbances.push_back(d);
  }

  ReadOptions options_;
  Trace trace_;
  bool have_header_ = false;
  std::string where_;
  int number_ = 0;
  std::optional<EpochRecords> open_;
  int open_line_ = 0;
  std::vector<int> seen_;                 // line of each rank's record in `open_` (0 = none)
  std::map<std::int64_t, PlanAt> start_;  // step-0 plans by (0-based) epoch
  std::map<std::string, int> unknown_types_;
};

}  // namespace

Trace parse_trace(std::string_view text, const std::string& name, const ReadOptions& options) {
  Reader reader(name, options);
  int number = 0;
  std::size_t at = 0;
  while (at < text.size()) {
    const std::size_t end = text.find('\n', at);
    ++number;
    if (end == std::string_view::npos) {
      reader.line(text.substr(at), number, true);
      break;
    }
    reader.line(text.substr(at, end - at), number, false);
    at = end + 1;
  }
  return reader.finish();
}

Trace read_trace(const std::string& path, const ReadOptions& options) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path + ": cannot open trace: " + std::strerror(errno));
  std::ostringstream buf;
  buf << in.rdbuf();
  if (in.bad()) throw InputError(path + ": cannot read trace: " + std::strerror(errno));
  return parse_trace(buf.str(), path, options);
}

std::vector<Slowdown> slowdowns_of(const Trace& trace) {
  std::vector<Slowdown> out;
  for (const EpochRecords& e : trace.epochs) {
    for (const Slowdown& d : e.disturbances) {
      bool known = false;
      for (const Slowdown& x : out) known = known || x == d;
      if (!known) out.push_back(d);
    }
  }
  return out;
}

}  // namespace dbs::replay
