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
#include "lib/common/fields.h"
#include "lib/common/read_file.h"
#include "lib/trace/records.h"
#include "lib/trace/trace.h"

namespace dbs::replay {
namespace {

using nlohmann::json;

constexpr std::int64_t kMaxInt = std::numeric_limits<int>::max();

Header parse_header(const json& j, const std::string& where) {
  const Fields h(j, where + ": header");
  if (h.string("type") != "header") h.fail("the first line of a trace must be its header");
  if (const std::string f = h.string("format"); f != trace::kFormat) {
    h.fail("format is '" + f + "', not '" + trace::kFormat + "'");
  }
  Header out;
  out.version = h.small("version", 0);
  if (out.version < 1 || out.version > trace::kVersion) {
    h.fail("unknown trace version " + std::to_string(out.version) +
           " (this dbs reads versions 1 to " + std::to_string(trace::kVersion) + ")");
  }
  out.config = h.need("config");
  if (out.version == 1 && out.config.is_object() && out.config.contains("train_samples")) {
    out.config["samples_per_epoch"] = out.config["train_samples"];  // renamed in version 2
  }
  const Fields c(out.config, where + ": header config");
  out.world = c.small("world", 1);
  c.integer("samples_per_epoch", 1);
  out.settings = policy::settings_from_json(c);
  out.params = c.integer_or("params", 0, 0);
  out.epochs = static_cast<int>(c.integer_or("epochs", 0, 0, kMaxInt));
  return out;
}

class Reader {
 public:
  Reader(std::string name, const ReadOptions& options) : options_(options) {
    trace_.path = std::move(name);
  }

  void line(std::string_view text, int number, bool last_without_newline) {
    if (stopped_ || text.find_first_not_of(" \t\r") == std::string_view::npos) return;
    where_ = trace_.path + ":" + std::to_string(number);
    number_ = number;
    json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) {
      std::string why;
      try {
        [[maybe_unused]] const json again = json::parse(text);
      } catch (const json::exception& e) {
        why = json_message(e);
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
    const Fields r(j, where_ + ": record");
    const std::string type = r.string("type");
    if (type == "plan") {
      plan(j);
    } else if (type == "rank") {
      rank(j);
    } else if (type == "eval") {
      eval(j);
    } else if (type == "disturbance") {
      disturbance(j);
    } else if (type == "timing") {
      timing(j);
    } else if (type == "cpu") {
      cpu(j);
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
    const Fields f(j, where_ + ": plan record");
    PlanAt p;
    p.step = f.integer("step", 0);
    p.source = f.string_or("source", "");
    p.plan = policy::plan_from_json(f);
    const std::int64_t epoch = p.plan.epoch + 1;
    if (p.plan.global_batch != trace_.header.settings.global_batch) {
      f.fail("global batch " + std::to_string(p.plan.global_batch) + " differs from the header's " +
             std::to_string(trace_.header.settings.global_batch));
    }
    if (p.plan.world() != world()) {
      f.fail("has " + std::to_string(p.plan.world()) + " ranks, the header " +
             std::to_string(world()));
    }
    if (p.step == 0) {
      const auto [it, fresh] = start_.emplace(epoch - 1, p);
      if (!fresh || (open_ && open_->epoch == epoch - 1) ||
          (!trace_.epochs.empty() && trace_.epochs.back().epoch >= epoch - 1)) {
        f.fail("a second plan for the start of epoch " + std::to_string(epoch));
      }
      return;
    }
    EpochRecords& e = epoch_for(f, epoch);
    if (p.step <= e.plans.back().step) {
      f.fail("re-plan at step " + std::to_string(p.step) + " does not follow the one at step " +
             std::to_string(e.plans.back().step));
    }
    e.plans.push_back(std::move(p));
  }

  void rank(const json& j) {
    const Fields f(j, where_ + ": rank record");
    const Report report = policy::report_from_json(f);
    const int r = f.small("rank", 0, world() - 1);
    EpochRecords& e = epoch_for(f, report.epoch + 1);
    if (seen_[static_cast<std::size_t>(r)] != 0) {
      f.fail("a second record for rank " + std::to_string(r) + " in epoch " +
             std::to_string(report.epoch + 1) + " (first at line " +
             std::to_string(seen_[static_cast<std::size_t>(r)]) + ")");
    }
    seen_[static_cast<std::size_t>(r)] = number_;
    e.reports[static_cast<std::size_t>(r)] = report;
  }

  void eval(const json& j) {
    const Fields f(j, where_ + ": eval record");
    const trace::Eval ev = trace::eval_from_json(f);
    const std::int64_t epoch = ev.epoch + 1;
    if (!open_ || open_->epoch != ev.epoch) {
      f.fail("epoch " + std::to_string(epoch) + " has no rank records before its eval record");
    }
    if (!ev.missing.empty()) {
      // The daemon planned it at its report timeout: without every rank's record it cannot be
      // replayed, nor can the epochs after it (replay needs consecutive epochs).
      trace_.warnings.push_back(where_ + ": epoch " + std::to_string(epoch) +
                                " lacks the reports of ranks " + f.need("missing").dump() +
                                " (planned at the daemon's report timeout): it and the epochs "
                                "after it are not replayed");
      open_.reset();
      stopped_ = true;
      return;
    }
    for (int r = 0; r < world(); ++r) {
      if (seen_[static_cast<std::size_t>(r)] == 0) {
        f.fail("epoch " + std::to_string(epoch) + " has no rank record for rank " +
               std::to_string(r));
      }
    }
    open_->wall_s = ev.wall_s;
    open_->replans = ev.replans;
    open_->eval = ev;
    open_->line = number_;
    trace_.epochs.push_back(std::move(*open_));
    open_.reset();
  }

  // A timing or cpu record: checked, and kept with its epoch (the agent writes them before the
  // epoch's rank records, so they may open it). Replay reads a held rank's CPU quota from the
  // cpu records; the timing records are the agent's own diagnosis.
  void timing(const json& j) {
    const Fields f(j, where_ + ": timing record");
    const trace::TimingRecord t = trace::timing_from_json(f);
    f.small("rank", 0, world() - 1);
    epoch_for(f, t.epoch + 1).timings.push_back(t);
  }

  void cpu(const json& j) {
    const Fields f(j, where_ + ": cpu record");
    const trace::CpuRecord c = trace::cpu_from_json(f);
    f.small("rank", 0, world() - 1);
    epoch_for(f, c.epoch + 1).cpu.push_back(c);
  }

  void disturbance(const json& j) {
    const Fields f(j, where_ + ": disturbance record");
    const trace::Disturbance d = trace::disturbance_from_json(f, world());
    EpochRecords& e = epoch_for(f, f.integer("epoch", 1));
    for (const trace::Disturbance& x : e.disturbances) {
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
  bool stopped_ = false;  // the records from here on are not read
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
  const std::string text = read_rest(in);
  if (in.bad()) throw InputError(path + ": cannot read trace: " + std::strerror(errno));
  return parse_trace(text, path, options);
}

std::vector<trace::Disturbance> slowdowns_of(const Trace& trace) {
  std::vector<trace::Disturbance> out;
  for (const EpochRecords& e : trace.epochs) {
    for (const trace::Disturbance& d : e.disturbances) {
      bool known = false;
      for (const trace::Disturbance& x : out) known = known || x == d;
      if (!known) out.push_back(d);
    }
  }
  return out;
}

}  // namespace dbs::replay
